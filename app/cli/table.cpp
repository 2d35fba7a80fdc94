#include <array>
#include <cstdlib>

#include "app/cli/command.hpp"

namespace perfwatch::cli {

// Each defined in its own file under app/cli/.
std::unique_ptr<Command> make_ingest_command();
std::unique_ptr<Command> make_show_command();
std::unique_ptr<Command> make_check_command();
std::unique_ptr<Command> make_rules_command();
std::unique_ptr<Command> make_config_check_command();
std::unique_ptr<Command> make_diff_command();
std::unique_ptr<Command> make_history_command();
std::unique_ptr<Command> make_baseline_command();
std::unique_ptr<Command> make_daemon_command();
std::unique_ptr<Command> make_silence_command();
std::unique_ptr<Command> make_report_command();
std::unique_ptr<Command> make_regressions_command();
std::unique_ptr<Command> make_db_command();
std::unique_ptr<Command> make_outbox_command();
std::unique_ptr<Command> make_files_command();
std::unique_ptr<Command> make_metrics_command();
std::unique_ptr<Command> make_formats_command();
std::unique_ptr<Command> make_job_command();
std::unique_ptr<Command> make_serve_command();
std::unique_ptr<Command> make_read_report_command();

std::string Context::db_or_default(const std::string& given) const {
    if (!given.empty()) return given;
    const char* env = std::getenv("PERFWATCH_DB");
    if (env != nullptr && *env != '\0') return env;
    return config.database.value_or("perfwatch.db");
}

std::span<const std::unique_ptr<Command>> commands() {
    // The command table: adding a command is its file under app/cli/ and a row here.
    static const std::array<std::unique_ptr<Command>, 20> k_commands{
        make_ingest_command(),   make_show_command(),    make_check_command(),       make_rules_command(),
        make_config_check_command(), make_diff_command(), make_history_command(),    make_baseline_command(),
        make_daemon_command(),   make_silence_command(), make_report_command(),      make_regressions_command(),
        make_db_command(),       make_outbox_command(),  make_files_command(),       make_metrics_command(),
        make_formats_command(),  make_job_command(),     make_serve_command(),       make_read_report_command(),
    };
    return k_commands;
}

}  // namespace perfwatch::cli
