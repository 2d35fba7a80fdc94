#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>

#include "app/backtest.hpp"
#include "app/commands.hpp"
#include "app/regressions.hpp"
#include "app/retention.hpp"
#include "app/config.hpp"
#include "app/daemon.hpp"
#include "app/db_migrate.hpp"

namespace {

// --db, else $PERFWATCH_DB, else the configuration's database, else perfwatch.db.
std::string default_db(const perfwatch::Config& config) {
    const char* env = std::getenv("PERFWATCH_DB");
    if (env != nullptr && *env != '\0') return env;
    return config.database.value_or("perfwatch.db");
}

// Splits K=V label arguments; returns false (and says why) on a malformed one.
bool parse_labels(const std::vector<std::string>& args, std::map<std::string, std::string>& out) {
    for (const std::string& a : args) {
        const auto eq = a.find('=');
        if (eq == std::string::npos || eq == 0) {
            fmt::print(stderr, "perfwatch: error: --label '{}' is not KEY=VALUE\n", a);
            return false;
        }
        out[a.substr(0, eq)] = a.substr(eq + 1);
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"perfwatch: catches GPU performance problems and regressions in profiler reports"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "perfwatch 0.1.0");
    app.fallthrough();
    std::string config_path;
    app.add_option("--config", config_path, "Configuration file (default $PERFWATCH_CONFIG)");

    perfwatch::IngestOptions ingest;
    std::vector<std::string> ingest_labels;
    auto* ingest_cmd = app.add_subcommand("ingest", "Store profiler reports in the database");
    ingest_cmd->add_option("--db", ingest.db_path, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or perfwatch.db)");
    ingest_cmd->add_option("--label", ingest_labels, "Label KEY=VALUE for the runs (repeatable)")
        ->allow_extra_args(false);
    ingest_cmd->add_option("files", ingest.files, "Report files")->required();

    perfwatch::ShowOptions show;
    auto* show_cmd = app.add_subcommand("show", "Print a stored run: labels, entities, metrics");
    show_cmd->add_option("--db", show.db_path, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or perfwatch.db)");
    show_cmd->add_option("run", show.run_id, "Run id")->required();
    show_cmd->add_option("--format", show.format, "text or json")->check(CLI::IsMember({"text", "json"}));

    perfwatch::CheckOptions check;
    std::vector<std::string> check_labels;
    auto* check_cmd = app.add_subcommand("check", "Ingest reports, evaluate rules, print findings; exit 1 on "
                                                  "findings at or above --fail-on");
    check_cmd->add_option("--db", check.db_path, "Database: SQLite file or postgresql:// URI to keep runs in (default: temporary)");
    check_cmd->add_option("--rules", check.rule_paths, "Extra rule file (repeatable); same id overrides a shipped rule")
        ->allow_extra_args(false);
    check_cmd->add_option("--label", check_labels, "Label KEY=VALUE for the runs (repeatable)")
        ->allow_extra_args(false);
    check_cmd->add_option("--baseline", check.baseline,
                          "Compare with this run id or report file instead of the history (same GPU model only)");
    check_cmd->add_option("--format", check.format, "text, json, markdown (pull-request comment, < 65,000 characters) "
                                                    "or junit (JUnit XML for Jenkins and GitLab)")
        ->check(CLI::IsMember({"text", "json", "markdown", "junit"}));
    check_cmd->add_option("--fail-on", check.fail_on, "info, warning or error (default error)")
        ->check(CLI::IsMember({"info", "warning", "error"}));
    check_cmd->add_option("files", check.files, "Report files")->required();

    std::vector<std::string> rule_args;
    bool list_verbose = false;
    auto* rules_cmd = app.add_subcommand("rules", "Rule authoring tools: lint, list, test, backtest");
    rules_cmd->require_subcommand(1);
    auto* lint_cmd = rules_cmd->add_subcommand("lint", "Report every error and warning in rule files; exit 1 on errors");
    lint_cmd->add_option("files", rule_args,
                        "Rule files or directories of *.yaml (checked with the shipped packs; none: the packs alone)");
    auto* list_cmd = rules_cmd->add_subcommand("list", "Print the effective rule set after overrides");
    list_cmd->add_option("files", rule_args, "Extra rule files, loaded after the shipped packs");
    list_cmd->add_flag("-v,--verbose", list_verbose, "Show conditions, lets, appended conditions and overrides");
    perfwatch::BacktestCommand backtest;
    std::vector<std::string> backtest_labels;
    auto* backtest_cmd = rules_cmd->add_subcommand(
        "backtest", "What new or changed rules would have raised on the stored runs, beside the rules in effect");
    backtest_cmd->add_option("--rules", backtest.candidate, "New or changed rule files or directories")->required();
    backtest_cmd->add_option("--db", backtest.db_path, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");
    backtest_cmd->add_option("--since", backtest.since, "Only runs ingested since: 30d, 12h, 2026-11-01");
    backtest_cmd->add_option("--label", backtest_labels, "Only runs with label KEY=VALUE (repeatable)");
    backtest_cmd->add_option("--examples", backtest.examples, "Added and removed findings shown per rule (default 3)");
    auto* test_cmd = rules_cmd->add_subcommand("test", "Run YAML rule tests; exit 1 on a failure");
    test_cmd->add_option("files", rule_args, "Rule test files or directories of *.yaml")->required();

    std::string config_check_path;
    auto* config_cmd = app.add_subcommand("config", "Configuration tools");
    config_cmd->require_subcommand(1);
    auto* config_check_cmd = config_cmd->add_subcommand("check", "Validate a configuration file; exit 1 on errors");
    config_check_cmd->add_option("file", config_check_path, "Configuration file")->required();

    perfwatch::DiffCommand diff;
    auto* diff_cmd = app.add_subcommand("diff", "Compare two runs entity by entity: added, removed, slower, faster");
    diff_cmd->add_option("before", diff.before, "Run id or report file")->required();
    diff_cmd->add_option("after", diff.after, "Run id or report file")->required();
    diff_cmd->add_option("--db", diff.db_path, "Database: SQLite file or postgresql:// URI for run ids (default $PERFWATCH_DB or perfwatch.db)");
    diff_cmd->add_option("--kind", diff.kind, "Entities to compare: kernel, memcpy, api_call, nvtx_range (default: every kind the runs hold)")
        ->check(CLI::IsMember({"kernel", "memcpy", "api_call", "nvtx_range"}));
    diff_cmd->add_option("--min-change", diff.min_change_pct, "Smaller changes of the per-launch time are unchanged "
                                                             "(percent, default 5)");
    diff_cmd->add_option("--format", diff.format, "text or json")->check(CLI::IsMember({"text", "json"}));

    perfwatch::HistoryCommand history;
    std::vector<std::string> history_labels;
    auto* history_cmd = app.add_subcommand("history", "Print a metric over the stored runs with its change points");
    history_cmd->add_option("--metric", history.metric, "Metric (see `perfwatch metrics`)")->required();
    history_cmd->add_option("--entity", history.entity, "Entity name (default: the run's own metric)");
    history_cmd->add_option("--kind", history.kind, "Kind of the entity (default kernel)")
        ->check(CLI::IsMember({"kernel", "memcpy", "api_call", "nvtx_range", "device"}));
    history_cmd->add_option("--label", history_labels, "Only runs with label KEY=VALUE (repeatable)")
        ->allow_extra_args(false);
    history_cmd->add_option("--db", history.db_path, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or perfwatch.db)");
    history_cmd->add_option("--format", history.format, "text or json")->check(CLI::IsMember({"text", "json"}));

    std::string baseline_db, pin_comment;
    long long baseline_run = 0;
    auto* baseline_cmd = app.add_subcommand("baseline", "Pinned baselines: pin, unpin, show");
    baseline_cmd->require_subcommand(1);
    baseline_cmd->add_option("--db", baseline_db, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or perfwatch.db)");
    auto* pin_cmd = baseline_cmd->add_subcommand("pin", "Make a run the baseline of the runs comparable with it");
    pin_cmd->add_option("run", baseline_run, "Run id")->required();
    pin_cmd->add_option("--comment", pin_comment, "Why (shown by baseline show)");
    auto* unpin_cmd = baseline_cmd->add_subcommand("unpin", "Remove a pin");
    unpin_cmd->add_option("run", baseline_run, "Run id")->required();
    auto* baseline_show_cmd = baseline_cmd->add_subcommand("show", "Pins, open regressions, and a run's baselines");
    baseline_show_cmd->add_option("run", baseline_run, "Run id: show the baseline each history rule uses for it");

    std::string daemon_db;
    auto* daemon_cmd = app.add_subcommand("daemon", "Watch report directories as a service: ingest each report once, "
                                                    "evaluate the rules, serve /healthz and /metrics (needs --config)");
    daemon_cmd->add_option("--db", daemon_db, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");

    perfwatch::SilenceAdd silence_add;
    std::string silence_db;
    bool silence_all = false;
    long long silence_id = 0;
    auto* silence_cmd = app.add_subcommand("silence", "Alert silences: add, list, expire");
    silence_cmd->require_subcommand(1);
    silence_cmd->fallthrough();
    silence_cmd->add_option("--db", silence_db, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");
    auto* silence_add_cmd = silence_cmd->add_subcommand("add", "Stop alerts matching every --match until --until");
    silence_add_cmd->add_option("--match", silence_add.matchers, "KEY=VALUE on run labels, rule or severity; the "
                                                                 "value may be a glob (repeatable)")
        ->required()
        ->allow_extra_args(false);
    silence_add_cmd->add_option("--until", silence_add.until, "2026-12-01T08:00:00Z, 2026-12-01, or 30m, 4h, 2d")
        ->required();
    silence_add_cmd->add_option("--comment", silence_add.comment, "Why (shown by silence list)");
    auto* silence_list_cmd = silence_cmd->add_subcommand("list", "Active silences (--all: expired ones too)");
    silence_list_cmd->add_flag("--all", silence_all, "Include expired silences");
    auto* silence_expire_cmd = silence_cmd->add_subcommand("expire", "End a silence now");
    silence_expire_cmd->add_option("id", silence_id, "Silence id")->required();

    std::string report_db, report_html;
    long long report_run = 0;
    auto* report_cmd = app.add_subcommand("report", "Write a run's self-contained HTML report (charts, findings, "
                                                    "regression trends)");
    report_cmd->add_option("run", report_run, "Run id")->required();
    report_cmd->add_option("--db", report_db, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");
    report_cmd->add_option("--html", report_html, "The HTML file to write")->required();

    std::string regressions_db, regressions_format = "text", accept_comment;
    bool regressions_open = false;
    long long accept_id = 0;
    auto* regressions_cmd = app.add_subcommand("regressions", "Regressions followed over history: list, accept");
    regressions_cmd->require_subcommand(1);
    regressions_cmd->add_option("--db", regressions_db, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");
    auto* regressions_list_cmd = regressions_cmd->add_subcommand(
        "list", "Every regression, newest first: series, rule, entity, baseline, change, first bad run, state, since");
    regressions_list_cmd->add_flag("--open", regressions_open, "Only the open ones");
    regressions_list_cmd->add_option("--format", regressions_format, "text or json")
        ->check(CLI::IsMember({"text", "json"}));
    auto* regressions_accept_cmd = regressions_cmd->add_subcommand(
        "accept", "Accept an open regression's new level: its series' baseline becomes the runs from its first bad run on");
    regressions_accept_cmd->add_option("id", accept_id, "Regression id (regressions list)")->required();
    regressions_accept_cmd->add_option("--comment", accept_comment, "Why (shown by regressions list)");

    perfwatch::DbPruneOptions prune;
    std::optional<int> prune_samples_days, prune_runs_days;
    auto* db_cmd = app.add_subcommand("db", "Database maintenance: prune, migrate");
    db_cmd->require_subcommand(1);
    auto* db_prune_cmd = db_cmd->add_subcommand(
        "prune", "Apply retention: drop per-launch samples and runs past their age, keeping pinned runs and what "
                 "open regressions need");
    db_prune_cmd->add_option("--db", prune.db_path, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");
    db_prune_cmd->add_option("--samples-days", prune_samples_days,
                             "Drop per-launch samples of runs older than this (default: the configuration's retention)");
    db_prune_cmd->add_option("--runs-days", prune_runs_days,
                             "Drop runs and their findings older than this (default: the configuration's retention)");
    db_prune_cmd->add_option("--rules", prune.rule_paths, "Extra rule file (repeatable): baselines of its regressions");
    db_prune_cmd->add_flag("--dry-run", prune.dry_run, "Count what would go; change nothing");
    db_prune_cmd->add_flag("--vacuum", prune.vacuum, "Rewrite the file afterwards so it shrinks (as long as a copy)");
    std::string migrate_from, migrate_to;
    auto* db_migrate_cmd = db_cmd->add_subcommand(
        "migrate", "Copy a whole history (e.g. a SQLite file) into an empty database (e.g. postgresql://...)");
    db_migrate_cmd->add_option("--from", migrate_from, "Source: SQLite file or postgresql:// URI")->required();
    db_migrate_cmd->add_option("--to", migrate_to, "Empty destination: postgresql:// URI or SQLite file")->required();

    std::string outbox_db;
    std::size_t outbox_limit = 20;
    auto* outbox_cmd = app.add_subcommand("outbox", "The newest alert messages: state, attempts, last error");
    outbox_cmd->add_option("--db", outbox_db, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");
    outbox_cmd->add_option("--limit", outbox_limit, "How many (default 20)");

    auto* metrics_cmd = app.add_subcommand("metrics", "List the canonical metric vocabulary rules are written in");
    auto* formats_cmd = app.add_subcommand("formats", "List the supported report formats");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return 2;
    }

    if (config_check_cmd->parsed()) return perfwatch::run_config_check(config_check_path);
    if (lint_cmd->parsed()) return perfwatch::run_rules_lint(rule_args);
    if (test_cmd->parsed()) return perfwatch::run_rules_test(rule_args);

    if (config_path.empty())
        if (const char* env = std::getenv("PERFWATCH_CONFIG"); env != nullptr) config_path = env;
    if (daemon_cmd->parsed()) {
        if (config_path.empty()) {
            fmt::print(stderr, "perfwatch: error: the daemon needs --config FILE (see deploy/config.yaml)\n");
            return 2;
        }
        if (const char* env = std::getenv("PERFWATCH_DB"); daemon_db.empty() && env != nullptr) daemon_db = env;
        return perfwatch::run_daemon(config_path, daemon_db);
    }
    perfwatch::Config config;
    if (!config_path.empty()) {
        perfwatch::ConfigLoad load = perfwatch::load_config(config_path);
        for (const auto& d : load.diagnostics) fmt::print(stderr, "{}\n", d.to_string());
        if (!load.ok()) return 2;
        config = std::move(load.config);
    }
    perfwatch::export_password_file(config);

    if (ingest_cmd->parsed()) {
        if (ingest.db_path.empty()) ingest.db_path = default_db(config);
        ingest.converters = config.converters;
        ingest.labels.path_templates = config.path_templates;
        if (!parse_labels(ingest_labels, ingest.labels.given)) return 2;
        return perfwatch::run_ingest(ingest);
    }
    if (show_cmd->parsed()) {
        if (show.db_path.empty()) show.db_path = default_db(config);
        return perfwatch::run_show(show);
    }
    if (check_cmd->parsed()) {
        if (!parse_labels(check_labels, check.labels.given)) return 2;
        check.labels.path_templates = config.path_templates;
        check.converters = config.converters;
        check.rule_paths.insert(check.rule_paths.begin(), config.rules.begin(), config.rules.end());
        return perfwatch::run_check(check);
    }
    if (backtest_cmd->parsed()) {
        if (backtest.db_path.empty()) backtest.db_path = default_db(config);
        if (!parse_labels(backtest_labels, backtest.labels)) return 2;
        backtest.in_effect = config.rules;
        return perfwatch::run_rules_backtest(backtest);
    }
    if (list_cmd->parsed()) {
        std::vector<std::string> files = config.rules;
        files.insert(files.end(), rule_args.begin(), rule_args.end());
        return perfwatch::run_rules_list(files, list_verbose);
    }
    if (diff_cmd->parsed()) {
        if (diff.db_path.empty()) diff.db_path = default_db(config);
        diff.converters = config.converters;
        return perfwatch::run_diff(diff);
    }
    if (history_cmd->parsed()) {
        if (history.db_path.empty()) history.db_path = default_db(config);
        if (!parse_labels(history_labels, history.labels)) return 2;
        return perfwatch::run_history(history);
    }
    if (baseline_cmd->parsed()) {
        if (baseline_db.empty()) baseline_db = default_db(config);
        if (pin_cmd->parsed()) return perfwatch::run_baseline_pin(baseline_db, baseline_run, pin_comment);
        if (unpin_cmd->parsed()) return perfwatch::run_baseline_unpin(baseline_db, baseline_run);
        return perfwatch::run_baseline_show(baseline_db, baseline_run, config.rules);
    }
    if (silence_cmd->parsed()) {
        if (silence_db.empty()) silence_db = default_db(config);
        if (silence_add_cmd->parsed()) {
            silence_add.db_path = silence_db;
            return perfwatch::run_silence_add(silence_add);
        }
        if (silence_list_cmd->parsed()) return perfwatch::run_silence_list(silence_db, silence_all);
        return perfwatch::run_silence_expire(silence_db, silence_id);
    }
    if (report_cmd->parsed())
        return perfwatch::run_report(report_db.empty() ? default_db(config) : report_db, report_run, report_html);
    if (regressions_cmd->parsed()) {
        if (regressions_db.empty()) regressions_db = default_db(config);
        if (regressions_list_cmd->parsed())
            return perfwatch::run_regressions_list(regressions_db, regressions_open, regressions_format);
        return perfwatch::run_regressions_accept(regressions_db, accept_id, accept_comment);
    }
    if (db_prune_cmd->parsed()) {
        if (prune.db_path.empty()) prune.db_path = default_db(config);
        prune.samples_days = prune_samples_days ? prune_samples_days : config.retention_samples_days;
        prune.runs_days = prune_runs_days ? prune_runs_days : config.retention_runs_days;
        prune.rule_paths.insert(prune.rule_paths.begin(), config.rules.begin(), config.rules.end());
        return perfwatch::run_db_prune(prune);
    }
    if (db_migrate_cmd->parsed()) return perfwatch::run_db_migrate(migrate_from, migrate_to);
    if (outbox_cmd->parsed()) return perfwatch::run_outbox(outbox_db.empty() ? default_db(config) : outbox_db, outbox_limit);
    if (metrics_cmd->parsed()) return perfwatch::run_metrics();
    if (formats_cmd->parsed()) return perfwatch::run_formats(config.converters);
    return 2;
}
