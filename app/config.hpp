#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/convert.hpp"
#include "collectors/labels.hpp"
#include "collectors/watcher.hpp"
#include "engine/rules.hpp"
#include "notify/alerts.hpp"

namespace perfwatch {

// perfwatch's configuration file (YAML). Relative paths are taken from the file's directory.
struct Config {
    std::string path;                     // the file read; empty for the defaults
    std::optional<std::string> database;  // SQLite file, or postgresql://user@host:port/db?sslmode=...
    // The PostgreSQL password's file (its first line); else libpq's PGPASSWORD or ~/.pgpass.
    std::string database_password_file;
    std::vector<std::string> rules;       // rule files loaded after the shipped packs
    // Binary report converters: the defaults, with entries of the file replacing those of the
    // same extension and adding others.
    std::vector<Converter> converters = default_converters();
    // Labels from report paths: the first template that matches gives them.
    std::vector<PathTemplate> path_templates;

    // The daemon: directories to watch, parsing threads (0: one per core), how long a report
    // must stay unchanged after it is written, the /healthz and /metrics address ("off": none),
    // how long a stop waits for reports in flight, and the lowest level logged.
    std::vector<WatchSpec> watch;
    int workers = 0;
    std::chrono::milliseconds quiet_period{1000};
    // A fleet on one database: how long a daemon holds the runs it evaluates and the messages it
    // sends before another may take them over (should it have died).
    std::chrono::milliseconds lease{60000};
    // How long the daemon waits for every rank of a distributed job after its first rank arrived;
    // then the job is judged with the ranks it has, a missing rank being itself a finding.
    std::chrono::milliseconds job_timeout{600000};
    std::string listen = "127.0.0.1:9464";
    std::chrono::milliseconds shutdown_timeout{10000};
    std::string log_level = "info";

    // The daemon writes each run's HTML report as run-ID.html in `reports_directory` (empty: none);
    // with `reports_base_url`, alert messages link to base URL + run-ID.html.
    std::string reports_directory;
    std::string reports_base_url;

    // The dashboard, served on `listen`: with `dashboard_base_url` (where people reach it) alert
    // messages link to its run pages; its actions (accept, silence, pin) need the token in
    // `dashboard_token_file` (none: read-only).
    std::string dashboard_base_url;
    std::string dashboard_token_file;
    // A commit's page on the code host, `{commit}` standing for the commit label
    // ("https://github.com/org/repo/commit/{commit}"); empty: commits are not linked.
    std::string dashboard_commit_url;
    // Who changes made with the dashboard's token are recorded as (triage history).
    std::string dashboard_token_name = "dashboard token";

    // Alerts: where they go, and the route tree choosing receivers (none: no alerts).
    std::vector<Receiver> receivers;
    std::optional<Route> route;
    // Alerts that mute lesser ones (a regression on a kernel mutes the other findings on it).
    std::vector<InhibitRule> inhibit_rules;

    // History that lives for years: per-launch samples kept `samples_days`, runs and findings
    // `runs_days` (unset: kept for ever); the daemon prunes once a day, `db prune` on demand.
    std::optional<int> retention_samples_days;
    std::optional<int> retention_runs_days;

    // How check, ingest and the daemon read each report: in a confined child process with these
    // limits (`reader:`; isolation `none` reads in perfwatch's own process).
    ReaderOptions reader{ReaderIsolation::process, {}, {}};
};

// Errors for watched directories that do not exist or are not directories (the daemon would
// refuse the configuration), at the line of their `watch` entry.
std::vector<Diagnostic> check_watch_directories(const Config& config);

// The dashboard's token: the first line of `path`, at least 16 characters, from a file no other
// user may read.
Result<std::string> read_dashboard_token(const std::string& path);

// "127.0.0.1:9464" or "[::1]:9464" split into address and port; nullopt when malformed.
std::optional<std::pair<std::string, unsigned short>> split_listen_address(const std::string& text);

struct ConfigLoad {
    Config config;
    std::vector<Diagnostic> diagnostics;  // every problem, as file:line:col with the line and a caret
    bool ok() const;
};

// Hands the configuration's database_password_file to Db::open (as $PERFWATCH_DB_PASSWORD_FILE,
// unless that is set already).
void export_password_file(const Config& config);

// Reads a configuration; unknown keys and wrong types are errors, all of them collected.
ConfigLoad parse_config_text(const std::string& file, std::string_view text);
ConfigLoad load_config(const std::string& path);

}  // namespace perfwatch
