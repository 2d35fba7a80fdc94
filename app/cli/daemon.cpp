#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>

#include "app/cli/command.hpp"
#include "app/daemon.hpp"

namespace perfwatch::cli {

namespace {

class DaemonCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("daemon", "Watch report directories as a service: ingest each report once, "
                                                 "evaluate the rules, serve /healthz and /metrics (needs --config)");
        cmd->add_option("--db", m_db, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");
        return cmd;
    }
    Needs needs() const override { return Needs::config_path; }
    int run(const Context& c) override {
        if (c.config_path.empty()) {
            fmt::print(stderr, "perfwatch: error: the daemon needs --config FILE (see deploy/config.yaml)\n");
            return 2;
        }
        if (const char* env = std::getenv("PERFWATCH_DB"); m_db.empty() && env != nullptr) m_db = env;
        return run_daemon(c.config_path, m_db);
    }

private:
    std::string m_db;
};

}  // namespace

std::unique_ptr<Command> make_daemon_command() { return std::make_unique<DaemonCommand>(); }

}  // namespace perfwatch::cli
