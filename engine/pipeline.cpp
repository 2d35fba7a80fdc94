#include "engine/pipeline.hpp"

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <set>

namespace perfwatch {

namespace {

const Entity* find_entity(const RunBatch& batch, EntityKind kind, const std::string& name) {
    for (const Entity& e : batch.entities)
        if (e.kind == kind && (kind == EntityKind::run || e.name == name)) return &e;
    return nullptr;
}

const Entity* run_entity_of(const RunBatch& batch) { return find_entity(batch, EntityKind::run, ""); }

// Opens, continues or resolves the regressions `rule` follows in `run`'s series.
Result<void> follow_regressions(Db& db, const CompiledRule& rule, const RunHistory& history, const StoredRun& run,
                                const Evaluation& evaluation, std::vector<RegressionEvent>& events) {
    const RegressionCheck& check = rule.regressions.front();
    const std::string series = series_key(run.batch.labels, rule.spec.baseline);
    auto open = db.regressions().open(series);
    if (!open) return std::unexpected(open.error());
    std::map<std::pair<EntityKind, std::string>, RegressionState*> by_entity;
    for (RegressionState& r : *open)
        if (r.rule == rule.spec.id) by_entity[{r.entity_kind, r.entity_name}] = &r;

    std::vector<RegressionState> changed;
    std::set<std::pair<EntityKind, std::string>> fired;
    for (const Finding& f : evaluation.findings) {
        if (f.rule != rule.spec.id) continue;
        const auto key = std::make_pair(f.entity_kind, f.entity_name);
        if (!fired.insert(key).second) continue;
        if (auto it = by_entity.find(key); it != by_entity.end()) {
            RegressionState& r = *it->second;
            if (r.last_run >= run.id) continue;  // this run was processed before
            r.last_run = r.last_bad_run = run.id;
            r.inside_runs = 0;
            changed.push_back(r);
            continue;
        }
        const Entity* entity = find_entity(run.batch, f.entity_kind, f.entity_name);
        const Entity* subject = check.run_level ? run_entity_of(run.batch) : entity;
        if (subject == nullptr) continue;
        const auto cmp = history.compare(*subject, check.metric);
        if (!cmp) continue;
        RegressionState r;
        r.rule = rule.spec.id;
        r.entity_kind = f.entity_kind;
        r.entity_name = f.entity_name;
        r.series = series;
        r.metric = check.metric;
        r.higher_is_worse = check.higher_is_worse;
        r.baseline = cmp->baseline;
        // Back inside means nearer the baseline than the level it opened at, and than half the
        // smallest change worth an alert: a shift that persists stays out, a revert comes back in.
        const double margin =
            std::max(std::fabs(cmp->baseline) * check.min_change_pct / 200, std::fabs(cmp->current - cmp->baseline) / 2);
        r.band_limit = check.higher_is_worse ? cmp->baseline + margin : cmp->baseline - margin;
        r.opened_run = r.last_run = r.last_bad_run = run.id;
        r.current = cmp->current;
        r.change_pct = cmp->change_pct;
        r.first_bad_run = history.first_bad_run(*subject, check.metric, run.id);
        changed.push_back(r);
    }
    for (auto& [key, state] : by_entity) {
        RegressionState& r = *state;
        if (fired.contains(key) || r.last_run >= run.id) continue;
        const Entity* entity = find_entity(run.batch, key.first, key.second);
        const Entity* subject = check.run_level ? run_entity_of(run.batch) : entity;
        if (entity == nullptr || subject == nullptr) continue;
        const auto v = history.level(*subject, r.metric);
        if (!v) continue;
        const bool inside = r.higher_is_worse ? *v <= r.band_limit : *v >= r.band_limit;
        r.inside_runs = inside ? r.inside_runs + 1 : 0;
        r.last_run = run.id;
        if (r.inside_runs >= static_cast<std::int64_t>(rule.spec.resolve_after)) {
            r.resolved_run = run.id;
            r.status = RegressionStatus::resolved;
            r.resolution = fmt::format("back inside the band for {} comparable run(s)", r.inside_runs);
        }
        changed.push_back(r);
    }
    if (changed.empty()) return {};
    std::vector<bool> opened(changed.size());
    for (std::size_t i = 0; i < changed.size(); ++i) opened[i] = changed[i].id == 0;
    if (auto saved = db.regressions().save(changed); !saved) return std::unexpected(saved.error());
    for (std::size_t i = 0; i < changed.size(); ++i) {
        if (opened[i]) events.push_back({RegressionEvent::Kind::opened, changed[i]});
        else if (changed[i].resolved_run == run.id) events.push_back({RegressionEvent::Kind::resolved, changed[i]});
    }
    return {};
}

}  // namespace

Result<RunHistories> choose_histories(const Db& db, const RuleSet& rules, const StoredRun& run,
                                      std::optional<std::int64_t> baseline_run, RunCache* cache) {
    RunHistories out;
    out.per_rule.assign(rules.rules.size(), nullptr);
    // One history per distinct baseline spec (or the explicit baseline for all).
    std::map<BaselineSpec, RunHistory*> by_spec;
    RunHistory* given = nullptr;
    for (std::size_t i = 0; i < rules.rules.size(); ++i) {
        const CompiledRule& rule = rules.rules[i];
        if (!rule.uses_history) continue;
        if (baseline_run) {
            if (given == nullptr) {
                auto b = explicit_baseline(db, run, *baseline_run);
                if (!b) return std::unexpected(b.error());
                out.descriptions.push_back(b->description);
                out.owned.push_back(std::make_unique<RunHistory>(std::move(*b), run.batch));
                given = out.owned.back().get();
            }
            out.per_rule[i] = given;
            continue;
        }
        auto it = by_spec.find(rule.spec.baseline);
        if (it == by_spec.end()) {
            auto b = select_baseline(db, run, rule.spec.baseline, cache);
            if (!b) return std::unexpected(b.error());
            out.descriptions.push_back(b->description);
            out.owned.push_back(std::make_unique<RunHistory>(std::move(*b), run.batch));
            it = by_spec.emplace(rule.spec.baseline, out.owned.back().get()).first;
        }
        out.per_rule[i] = it->second;
    }
    return out;
}

Result<RunOutcome> process_run(Db& db, const RuleSet& rules, const StoredRun& run, const PipelineOptions& options) {
    RunOutcome out;
    auto histories = choose_histories(db, rules, run, options.baseline_run, options.cache);
    if (!histories) return std::unexpected(histories.error());
    out.baselines = histories->descriptions;
    const std::vector<const RunHistory*>& per_rule = histories->per_rule;
    out.evaluation = evaluate_run(rules, run, per_rule, options.record_checks);
    if (auto stored = db.store_findings(run.id, out.evaluation.findings); !stored)
        return std::unexpected(stored.error());
    if (options.baseline_run) return out;
    for (std::size_t i = 0; i < rules.rules.size(); ++i) {
        const CompiledRule& rule = rules.rules[i];
        if (rule.regressions.empty() || per_rule[i] == nullptr) continue;
        if (auto r = follow_regressions(db, rule, *per_rule[i], run, out.evaluation, out.events); !r)
            return std::unexpected(r.error());
    }
    if (options.mark_processed)
        if (auto marked = db.mark_processed(run.id); !marked) return std::unexpected(marked.error());
    return out;
}

}  // namespace perfwatch
