#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/rules.hpp"
#include "storage/db.hpp"

namespace perfwatch {

// Which stored runs a backtest replays: ingested at or after `since` (ISO 8601 UTC, compared as
// text; empty: all) and carrying every label of `labels`.
struct BacktestScope {
    std::string since;
    std::map<std::string, std::string> labels;
    std::size_t examples = 3;  // added and removed findings shown per rule
};

// One finding as a backtest names it.
struct BacktestExample {
    std::int64_t run_id = 0;
    std::string source;
    EntityKind entity_kind = EntityKind::kernel;
    std::string entity_name;
    std::string message;
};

// What one rule raised over the replayed runs with the candidate rules, beside the rules in effect.
struct RuleBacktest {
    std::string rule;
    bool is_new = false;  // no rule of this id is in effect
    std::size_t runs = 0, findings = 0;                  // candidate: runs with a finding, findings
    std::size_t runs_in_effect = 0, findings_in_effect = 0;
    std::size_t added = 0, removed = 0;                  // findings (run, entity) only one side raised
    std::vector<BacktestExample> added_examples, removed_examples;
};

struct BacktestResult {
    std::size_t runs = 0;            // runs replayed
    std::vector<RuleBacktest> rules;  // the rules `rule_ids` names, in that order
};

// Evaluates the runs in `scope` with `in_effect` and with `candidate` (each run against the history
// stored before it, nothing written) and compares, for each rule of `rule_ids`, what each raised.
Result<BacktestResult> backtest_rules(const Db& db, const RuleSet& in_effect, const RuleSet& candidate,
                                      const std::vector<std::string>& rule_ids, const BacktestScope& scope);

}  // namespace perfwatch
