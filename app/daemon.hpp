#pragma once

#include <memory>
#include <string>

#include "app/config.hpp"
#include "web/dashboard.hpp"

namespace perfwatch {

// Runs the daemon with the configuration file at `config_path`, keeping runs in `db_override`
// (when not empty) or the configuration's database:
// watches the configured directories, ingests each complete report once, evaluates the rules,
// serves /healthz, /metrics and the dashboard, reloads on SIGHUP and stops on SIGTERM or SIGINT.
// Returns 0 after a stop, 2 when it cannot start (the reasons are logged).
int run_daemon(const std::string& config_path, const std::string& db_override);

}  // namespace perfwatch

namespace perfwatch {

// The dashboard over its own connection to `db_path`, with the token of the configuration's
// dashboard token_file (none: read-only).
Result<std::unique_ptr<web::Dashboard>> open_dashboard(const std::string& db_path, const Config& config);

}  // namespace perfwatch
