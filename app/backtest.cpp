#include "app/backtest.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <set>

#include "app/commands.hpp"
#include "engine/backtest.hpp"
#include "engine/rules.hpp"
#include "notify/entity_name.hpp"
#include "storage/db.hpp"

namespace perfwatch {

namespace {

// The rule set of the shipped packs and `paths`, its errors printed; nullopt when it has any.
std::optional<RuleSet> compiled(const std::vector<std::string>& paths) {
    RuleSet rules = compile_rules(load_rule_files(paths));
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
        const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
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
        scope.since = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::sys_seconds(std::chrono::seconds(ms / 1000)));
    }
    const auto in_effect = compiled(command.in_effect);
    std::vector<std::string> with_candidate = command.in_effect;
    with_candidate.insert(with_candidate.end(), command.candidate.begin(), command.candidate.end());
    const auto candidate = compiled(with_candidate);
    if (!in_effect || !candidate) return 2;
    std::vector<std::string> ids;
    std::set<std::string> seen;
    for (const std::string& path : expand_rule_paths(command.candidate))
        for (const RuleSpec& r : parse_rule_file(path).rules)
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
