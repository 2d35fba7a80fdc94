#include <CLI/CLI.hpp>

#include "app/cli/command.hpp"
#include "collectors/reader_process.hpp"

namespace perfwatch::cli {

namespace {

// `perfwatch read-report`: the sandboxed reader server check, ingest and the daemon start and
// send report paths to (collectors/reader_process.hpp); hidden from help, not for people.
class ReadReportCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("read-report", "Reads reports in confined processes (internal)");
        cmd->group("");
        cmd->add_option("--memory-mb", m_limits.memory_mb, "Resident memory limit");
        cmd->add_option("--cpu-seconds", m_limits.cpu_seconds, "CPU time limit");
        cmd->add_option("--wall-seconds", m_limits.wall_seconds, "Wall time limit");
        cmd->add_option("--output-mb", m_limits.output_mb, "Answer size limit");
        cmd->add_flag("--fork-each", m_fork_each, "A fresh reader forked per report");
        return cmd;
    }
    Needs needs() const override { return Needs::nothing; }
    int run(const Context&) override { return reader_server_main(m_limits, m_fork_each); }

private:
    ReaderLimits m_limits;
    bool m_fork_each = false;
};

}  // namespace

std::unique_ptr<Command> make_read_report_command() { return std::make_unique<ReadReportCommand>(); }

}  // namespace perfwatch::cli
