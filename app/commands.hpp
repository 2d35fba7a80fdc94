#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/convert.hpp"
#include "collectors/labels.hpp"
#include "storage/db.hpp"

namespace perfwatch {

struct IngestOptions {
    std::string db_path;
    LabelSources labels;
    std::vector<std::string> files;
    std::vector<Converter> converters = default_converters();
};

struct ShowOptions {
    std::string db_path;
    long long run_id = 0;
    std::string format = "text";
};

struct CheckOptions {
    std::string db_path;  // empty: a temporary in-memory database
    std::vector<std::string> rule_paths;
    LabelSources labels;
    std::string baseline;  // a run id or a report file to compare with; empty: the history
    std::string format = "text";
    std::string fail_on = "error";
    std::vector<std::string> files;
    std::vector<Converter> converters = default_converters();
};

// Each command prints to stdout/stderr and returns the process exit code.
// 0 when every report was stored (or set aside because its converter tool is missing); 2 otherwise.
int run_ingest(const IngestOptions& options);
int run_show(const ShowOptions& options);
// 0: nothing at or above fail_on; 1: findings at or above it; 2: bad usage or unreadable input.
int run_check(const CheckOptions& options);
int run_metrics();
// Lints rule files with the shipped packs: every diagnostic; 1 on errors, else 0.
int run_rules_lint(const std::vector<std::string>& paths);
// Prints the effective rule set (shipped packs, then `paths`, after overrides); 2 on errors.
int run_rules_list(const std::vector<std::string>& paths, bool verbose);
// Runs YAML rule tests; 0 when all pass (skips allowed), 1 otherwise.
int run_rules_test(const std::vector<std::string>& paths);
// Validates a configuration file: prints every diagnostic; 0 when valid, 1 otherwise.
int run_config_check(const std::string& path);

// Prints `perfwatch: error: ...` (or `skipped:`) for `e` on stderr.
void print_error(const Error& e);
// Opens the database, printing why not; nullopt when it cannot be opened.
std::optional<Db> open_db(const std::string& path);
// An absolute UTC time (2026-12-01T08:00:00Z, 2026-12-01 08:00, 2026-12-01) in Unix ms, or a
// duration (30m, 4h, 2d, 1w) added to `now`; nullopt when neither.
std::optional<std::int64_t> parse_until(const std::string& text, std::int64_t now);
// The report formats, then the binary reports the converters turn into one of them.
int run_formats(const std::vector<Converter>& converters);

struct DiffCommand {
    std::string db_path;
    std::string before, after;  // run ids or report files
    std::string kind;  // empty: every kind the runs hold
    double min_change_pct = 5;
    std::string format = "text";
    std::vector<Converter> converters = default_converters();
};
// Compares two runs entity by entity; 0, or 2 when a run cannot be read.
int run_diff(const DiffCommand& options);

struct HistoryCommand {
    std::string db_path;
    std::string metric;
    std::string entity;  // empty: the run's own metric
    std::string kind;  // empty: every kind the runs hold
    std::map<std::string, std::string> labels;
    std::string format = "text";
};
// Prints a metric over the runs matching the labels, oldest first, with change points.
int run_history(const HistoryCommand& options);

// baseline pin RUN / unpin RUN / show [RUN].
int run_baseline_pin(const std::string& db_path, long long run_id, const std::string& comment);
int run_baseline_unpin(const std::string& db_path, long long run_id);
int run_baseline_show(const std::string& db_path, long long run_id, const std::vector<std::string>& rule_paths);

struct SilenceAdd {
    std::string db_path;
    std::vector<std::string> matchers;  // KEY=VALUE (value may be a glob)
    std::string until;                  // 2026-12-01T08:00:00Z, 2026-12-01, or a duration from now: 4h, 2d
    std::string comment;
};
// silence add / list / expire: 0, or 2 on bad input.
int run_silence_add(const SilenceAdd& options);
int run_silence_list(const std::string& db_path, bool all);
int run_silence_expire(const std::string& db_path, long long id);
// report RUN --html FILE: writes the run's self-contained HTML report; 0, or 2.
int run_report(const std::string& db_path, long long run_id, const std::string& html_path);

// The newest outbox messages: state, attempts, receiver, title and last error.
int run_outbox(const std::string& db_path, std::size_t limit);

}  // namespace perfwatch
