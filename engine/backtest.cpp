#include "engine/backtest.hpp"

#include <algorithm>
#include <tuple>

#include "engine/evaluate.hpp"
#include "engine/pipeline.hpp"

namespace perfwatch {

namespace {

using FindingKey = std::tuple<std::int64_t, EntityKind, std::string>;  // run, entity kind, name

// The findings of `rules` on `run`, by rule id and (run, entity).
Result<std::map<std::string, std::map<FindingKey, BacktestExample>>> raised(const Db& db, const RuleSet& rules,
                                                                           const StoredRun& run) {
    auto histories = choose_histories(db, rules, run);
    if (!histories) return std::unexpected(histories.error());
    const Evaluation evaluation = evaluate_run(rules, run, histories->per_rule);
    std::map<std::string, std::map<FindingKey, BacktestExample>> out;
    for (const Finding& f : evaluation.findings)
        out[f.rule].try_emplace(FindingKey{run.id, f.entity_kind, f.entity_name},
                                BacktestExample{run.id, run.batch.source, f.entity_kind, f.entity_name, f.message});
    return out;
}

}  // namespace

Result<BacktestResult> backtest_rules(const Db& db, const RuleSet& in_effect, const RuleSet& candidate,
                                      const std::vector<std::string>& rule_ids, const BacktestScope& scope) {
    auto listed = db.list_runs();
    if (!listed) return std::unexpected(listed.error());
    std::set<std::int64_t> labelled;
    if (!scope.labels.empty()) {
        auto runs = db.history().find_runs(scope.labels);
        if (!runs) return std::unexpected(runs.error());
        for (const RunLabels& r : *runs) labelled.insert(r.id);
    }
    BacktestResult result;
    std::map<std::string, std::map<FindingKey, BacktestExample>> now, then;
    std::map<std::string, std::set<std::int64_t>> runs_now, runs_then;
    for (const RunSummary& summary : *listed) {
        if (!scope.since.empty() && summary.ingested_at < scope.since) continue;
        if (!scope.labels.empty() && !labelled.contains(summary.id)) continue;
        auto run = db.load(summary.id);
        if (!run) return std::unexpected(run.error());
        if (!*run) continue;
        ++result.runs;
        for (auto [rules, into, runs] : {std::tuple{&in_effect, &now, &runs_now}, std::tuple{&candidate, &then, &runs_then}}) {
            auto got = raised(db, *rules, **run);
            if (!got) return std::unexpected(got.error());
            for (auto& [rule, findings] : *got) {
                if (!findings.empty()) (*runs)[rule].insert(summary.id);
                (*into)[rule].merge(findings);
            }
        }
    }
    for (const std::string& id : rule_ids) {
        RuleBacktest r;
        r.rule = id;
        r.is_new = std::none_of(in_effect.rules.begin(), in_effect.rules.end(),
                                [&](const CompiledRule& c) { return c.spec.id == id; });
        const auto& before = now[id];
        const auto& after = then[id];
        r.findings = after.size();
        r.findings_in_effect = before.size();
        r.runs = runs_then[id].size();
        r.runs_in_effect = runs_now[id].size();
        for (const auto& [key, example] : after)
            if (!before.contains(key) && r.added++ < scope.examples) r.added_examples.push_back(example);
        for (const auto& [key, example] : before)
            if (!after.contains(key) && r.removed++ < scope.examples) r.removed_examples.push_back(example);
        result.rules.push_back(std::move(r));
    }
    return result;
}

}  // namespace perfwatch
