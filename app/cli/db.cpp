#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include "core/vocabulary.hpp"
#include "engine/retention.hpp"
#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

struct DbPruneOptions {
    std::string db_path;
    std::optional<int> samples_days;  // per-launch samples of runs older than this go
    std::optional<int> runs_days;     // runs (entities, findings) older than this go
    std::vector<std::string> rule_paths;  // rules whose baselines open regressions use
    bool dry_run = false;
    bool vacuum = false;  // rewrite the file afterwards so it shrinks (takes a copy's time and space)
};

// `perfwatch db prune`: applies the retention policy, keeping pinned runs and what open
// regressions need; prints what went and the bytes in use before and after. Exit 0, or 2.
int run_db_prune(const DbPruneOptions& options) {
    if (!options.samples_days && !options.runs_days) {
        fmt::print(stderr, "perfwatch: error: nothing to prune: give --samples-days and/or --runs-days, or "
                           "retention: in the configuration\n");
        return 2;
    }
    const RuleSet rules = compile_rules(load_rule_files(options.rule_paths));
    for (const Diagnostic& d : rules.diagnostics) fmt::print(stderr, "{}\n", d.to_string());
    if (rules.has_errors()) return 2;
    auto db = open_db(options.db_path);
    if (!db) return 2;
    auto report = apply_retention(*db, rules, options.samples_days, options.runs_days, options.dry_run);
    if (!report) {
        print_error(report.error());
        return 2;
    }
    if (options.vacuum && !options.dry_run) {
        if (auto v = db->vacuum(); !v) {
            print_error(v.error());
            return 2;
        }
        auto after = db->bytes_in_use();
        if (after) report->bytes_after = *after;
    }
    const auto bytes = [](std::int64_t b) { return format_in_unit(static_cast<double>(b), "bytes").value_or("?"); };
    fmt::print("{}{} run(s) older than {} days, per-launch samples of {} entities older than {} days, {} delivered "
               "message(s)\n",
               options.dry_run ? "would prune " : "pruned ", report->runs,
               options.runs_days ? std::to_string(*options.runs_days) : "-", report->sample_sets,
               options.samples_days ? std::to_string(*options.samples_days) : "-", report->messages);
    fmt::print("kept {} old run(s): pinned, or the baseline and bad runs of an open regression\n",
               report->kept_protected);
    fmt::print("database in use: {} -> {}{}\n", bytes(report->bytes_before), bytes(report->bytes_after),
               options.vacuum && !options.dry_run ? " (vacuumed)" : "");
    return 0;
}

// `perfwatch db migrate --from A --to B`: copies the whole history of A (runs, findings,
// regressions, pins, silences, the outbox) into the empty database B, typically a SQLite file
// into PostgreSQL; prints each table's rows, counted on both sides. Exit 0, or 2.
int run_db_migrate(const std::string& from, const std::string& to) {
    auto source = open_db(from);
    if (!source) return 2;
    auto destination = open_db(to);
    if (!destination) return 2;
    auto counts = source->copy_into(*destination);
    if (!counts) {
        print_error(counts.error());
        return 2;
    }
    std::int64_t rows = 0;
    for (const auto& [table, n] : *counts) {
        fmt::print("{:<20} {:>10} rows\n", table, n);
        rows += n;
    }
    fmt::print("copied {} rows from {} to {}; every table's count is the same on both sides\n", rows, source->name(),
               destination->name());
    return 0;
}

class DbCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("db", "Database maintenance: prune, migrate");
        cmd->require_subcommand(1);
        m_prune = cmd->add_subcommand(
            "prune", "Apply retention: drop per-launch samples and runs past their age, keeping pinned runs and what "
                     "open regressions need");
        m_prune->add_option("--db", m_options.db_path, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");
        m_prune->add_option("--samples-days", m_samples_days,
                            "Drop per-launch samples of runs older than this (default: the configuration's retention)");
        m_prune->add_option("--runs-days", m_runs_days,
                            "Drop runs and their findings older than this (default: the configuration's retention)");
        m_prune->add_option("--rules", m_options.rule_paths, "Extra rule file (repeatable): baselines of its regressions");
        m_prune->add_flag("--dry-run", m_options.dry_run, "Count what would go; change nothing");
        m_prune->add_flag("--vacuum", m_options.vacuum, "Rewrite the file afterwards so it shrinks (as long as a copy)");
        auto* migrate = cmd->add_subcommand(
            "migrate", "Copy a whole history (e.g. a SQLite file) into an empty database (e.g. postgresql://...)");
        migrate->add_option("--from", m_from, "Source: SQLite file or postgresql:// URI")->required();
        migrate->add_option("--to", m_to, "Empty destination: postgresql:// URI or SQLite file")->required();
        return cmd;
    }
    int run(const Context& c) override {
        if (!m_prune->parsed()) return run_db_migrate(m_from, m_to);
        m_options.db_path = c.db_or_default(m_options.db_path);
        m_options.samples_days = m_samples_days ? m_samples_days : c.config.retention_samples_days;
        m_options.runs_days = m_runs_days ? m_runs_days : c.config.retention_runs_days;
        m_options.rule_paths.insert(m_options.rule_paths.begin(), c.config.rules.begin(), c.config.rules.end());
        return run_db_prune(m_options);
    }

private:
    CLI::App* m_prune = nullptr;
    DbPruneOptions m_options;
    std::optional<int> m_samples_days, m_runs_days;
    std::string m_from, m_to;
};

}  // namespace

std::unique_ptr<Command> make_db_command() { return std::make_unique<DbCommand>(); }

}  // namespace perfwatch::cli
