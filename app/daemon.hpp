#pragma once

#include <string>

namespace perfwatch {

// Runs the daemon with the configuration file at `config_path`, keeping runs in `db_override`
// (when not empty) or the configuration's database:
// watches the configured directories, ingests each complete report once, evaluates the rules,
// serves /healthz and /metrics, reloads on SIGHUP and stops on SIGTERM or SIGINT.
// Returns 0 after a stop, 2 when it cannot start (the reasons are logged).
int run_daemon(const std::string& config_path, const std::string& db_override);

}  // namespace perfwatch
