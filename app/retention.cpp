#include "app/retention.hpp"

#include <fmt/format.h>

#include "app/commands.hpp"
#include "core/vocabulary.hpp"
#include "engine/retention.hpp"

namespace perfwatch {

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

}  // namespace perfwatch
