#include <CLI/CLI.hpp>

#include "app/cli/command.hpp"
#include "collectors/reader_process.hpp"

namespace perfwatch::cli {

namespace {

// `perfwatch read-report PATH`: the sandboxed reader process check, ingest and the daemon start
// for each report (collectors/reader_process.hpp); hidden from help, not for people.
class ReadReportCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("read-report", "Reads one report in a confined process (internal)");
        cmd->group("");
        cmd->add_option("--memory-mb", m_limits.memory_mb, "Resident memory limit");
        cmd->add_option("--cpu-seconds", m_limits.cpu_seconds, "CPU time limit");
        cmd->add_option("path", m_path, "The report")->required();
        return cmd;
    }
    Needs needs() const override { return Needs::nothing; }
    int run(const Context&) override { return reader_process_main(m_path, m_limits); }

private:
    std::string m_path;
    ReaderLimits m_limits;
};

}  // namespace

std::unique_ptr<Command> make_read_report_command() { return std::make_unique<ReadReportCommand>(); }

}  // namespace perfwatch::cli
