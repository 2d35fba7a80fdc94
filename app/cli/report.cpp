#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "app/report.hpp"

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

// report RUN --html FILE: writes the run's self-contained HTML report; 0, or 2.
int run_report(const std::string& db_path, long long run_id, const std::string& html_path) {
    auto db = open_db(db_path);
    if (!db) return 2;
    if (auto written = write_html_report(*db, run_id, html_path); !written) {
        Error e = written.error();
        if (e.file.empty()) e.file = db_path;
        print_error(e);
        return 2;
    }
    fmt::print("run {}: report written to {}\n", run_id, html_path);
    return 0;
}

class ReportCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("report", "Write a run's self-contained HTML report (charts, findings, "
                                                 "regression trends)");
        cmd->add_option("run", m_run, "Run id")->required();
        cmd->add_option("--db", m_db, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");
        cmd->add_option("--html", m_html, "The HTML file to write")->required();
        return cmd;
    }
    int run(const Context& c) override { return run_report(c.db_or_default(m_db), m_run, m_html); }

private:
    std::string m_db, m_html;
    long long m_run = 0;
};

}  // namespace

std::unique_ptr<Command> make_report_command() { return std::make_unique<ReportCommand>(); }

}  // namespace perfwatch::cli
