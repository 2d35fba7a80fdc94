#include "app/cli/backtest.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <set>
#include <vector>

#include "app/cli/common.hpp"
#include "engine/backtest.hpp"
#include "engine/rules.hpp"
#include "notify/entity_name.hpp"
#include "storage/db.hpp"

namespace perfwatch {

namespace {

// The compiled rule set of `files`, its errors printed; nullopt when it has any.
std::optional<RuleSet> compiled(const std::vector<RuleFile>& files) {
    RuleSet rules = compile_rules(files);
    for (const Diagnostic& d : rules.diagnostics)
        if (d.level == Diagnostic::Level::error) fmt::print(stderr, "{}\n", d.to_string());
    if (rules.has_errors()) return std::nullopt;
    return rules;
}

void print_examples(char sign, const std::vector<BacktestExample>& examples, std::size_t total) {
    for (const BacktestExample& e : examples) {
        const auto [kind, name] = shown_entity(to_string(e.entity_kind), e.entity_name, e.source);
        fmt::print("    {} run {} {} '{}': {}\n", sign, e.run_id, kind, name, e.message);
    }
    if (total > examples.size()) fmt::print("    {} ... {} more\n", sign, total - examples.size());
}

}  // namespace

int run_rules_backtest(const BacktestCommand& command) {
    BacktestScope scope;
    scope.labels = command.labels;
    scope.examples = command.examples;
    if (!command.since.empty()) {
        const std::int64_t now = now_ms();
        // A duration counts back from now; a date is taken as it is.
        const auto at = parse_until(command.since, now);
        if (!at) {
            fmt::print(stderr, "perfwatch: error: --since '{}' is neither a duration (30d, 12h) nor a date "
                               "(2026-11-01)\n",
                       command.since);
            return 2;
        }
        const bool duration = *at > now;
        const std::int64_t ms = duration ? now - (*at - now) : *at;
        scope.since = utc_text(ms);
    }
    // Each file is read once: the shipped packs and the rules in effect, then the candidates.
    std::vector<RuleFile> files = load_rule_files(command.in_effect);
    const std::size_t in_effect_files = files.size();
    for (const std::string& path : expand_rule_paths(command.candidate)) files.push_back(parse_rule_file(path));
    const auto in_effect = compiled({files.begin(), files.begin() + static_cast<std::ptrdiff_t>(in_effect_files)});
    const auto candidate = compiled(files);
    if (!in_effect || !candidate) return 2;
    std::vector<std::string> ids;
    std::set<std::string> seen;
    for (std::size_t i = in_effect_files; i < files.size(); ++i)
        for (const RuleSpec& r : files[i].rules)
            if (seen.insert(r.id).second) ids.push_back(r.id);
    auto db = open_db(command.db_path);
    if (!db) return 2;
    auto result = backtest_rules(*db, *in_effect, *candidate, ids, scope);
    if (!result) {
        print_error(result.error());
        return 2;
    }
    std::string labels;
    for (const auto& [k, v] : scope.labels) labels += fmt::format(" {}={}", k, v);
    fmt::print("backtest of {} rule{} over {} stored run{}{}{}\n", ids.size(), ids.size() == 1 ? "" : "s", result->runs,
               result->runs == 1 ? "" : "s", scope.since.empty() ? "" : " ingested since " + scope.since,
               labels.empty() ? "" : " with" + labels);
    for (const RuleBacktest& r : result->rules) {
        fmt::print("\n{} ({}): {} finding{} in {} run{}; in effect: {} in {} run{}; {} added, {} removed\n", r.rule,
                   r.is_new ? "new" : "changed", r.findings, r.findings == 1 ? "" : "s", r.runs, r.runs == 1 ? "" : "s",
                   r.findings_in_effect, r.runs_in_effect, r.runs_in_effect == 1 ? "" : "s", r.added, r.removed);
        print_examples('+', r.added_examples, r.added);
        print_examples('-', r.removed_examples, r.removed);
    }
    return 0;
}

}  // namespace perfwatch
