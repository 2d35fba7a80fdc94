#include "engine/evaluate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include "core/vocabulary.hpp"

namespace perfwatch {

namespace {

using Memo = AggregateMemo;

// A hash index of one entity's metric names (open addressing, positions + 1): rules look up
// the same entity's metrics many times, and a missing metric would otherwise cost a full scan.
class MetricIndex {
public:
    explicit MetricIndex(const Entity& e) {
        std::size_t capacity = 8;
        while (capacity < 2 * e.metrics.size()) capacity *= 2;
        m_mask = capacity - 1;
        m_slots.assign(capacity, 0);
        for (std::size_t i = 0; i < e.metrics.size() && i < 0xffff; ++i) {
            std::size_t at = hash(e.metrics[i].name) & m_mask;
            while (m_slots[at] != 0) at = (at + 1) & m_mask;
            m_slots[at] = static_cast<std::uint16_t>(i + 1);
        }
    }

    const Metric* find(const Entity& e, std::string_view name) const {
        for (std::size_t at = hash(name) & m_mask;; at = (at + 1) & m_mask) {
            const std::uint16_t slot = m_slots[at];
            if (slot == 0) return nullptr;
            const Metric& m = e.metrics[slot - 1u];
            if (m.name == name) return &m;
        }
    }

private:
    static std::size_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
    std::size_t m_mask = 0;
    std::vector<std::uint16_t> m_slots;
};

class EntityScope final : public EvalScope {
public:
    EntityScope(const Entity& entity, const Entity* run, const RunBatch* batch = nullptr, Memo* memo = nullptr,
                const RunHistory* history = nullptr, std::int64_t run_id = 0, const MetricIndex* index = nullptr)
        : m_entity(entity), m_run(run), m_batch(batch), m_memo(memo), m_history(history), m_run_id(run_id),
          m_index(index) {}

    std::optional<double> metric(std::string_view name) const override {
        const Metric* m = m_index != nullptr ? m_index->find(m_entity, name) : m_entity.metric(name);
        if (m == nullptr) return std::nullopt;
        return m->value;
    }

    std::optional<double> run_metric(std::string_view name) const override {
        if (m_run == nullptr) return std::nullopt;
        return m_run->value(name);
    }

    std::optional<std::string> attribute(std::string_view name) const override {
        if (name == "name") return m_entity.name;
        if (name == "kind") return std::string(to_string(m_entity.kind));
        auto it = m_entity.attributes.find(std::string(name));
        if (it == m_entity.attributes.end()) return std::nullopt;
        return it->second;
    }

    void for_each_entity(std::string_view kind, const std::function<void(const EvalScope&)>& fn) const override {
        if (m_batch == nullptr) return;
        const auto k = entity_kind_from_string(kind);
        if (!k) return;
        for (const Entity& e : m_batch->entities)
            if (e.kind == *k) fn(EntityScope(e, m_run, m_batch, m_memo, m_history, m_run_id));
    }

    Memo* memo() const override { return m_memo; }

    std::optional<Comparison> compare(std::string_view metric, bool run_level) const override {
        const Entity* e = subject(run_level);
        if (e == nullptr) return std::nullopt;
        return m_history->compare(*e, metric);
    }

    std::optional<double> latest_baseline(std::string_view metric, bool run_level) const override {
        const Entity* e = subject(run_level);
        if (e == nullptr) return std::nullopt;
        return m_history->latest(*e, metric);
    }

    std::optional<bool> is_new() const override {
        if (m_history == nullptr) return std::nullopt;
        return m_history->is_new(m_entity);
    }

    std::optional<std::vector<std::string>> vanished(std::string_view kind) const override {
        const auto k = entity_kind_from_string(kind);
        if (m_history == nullptr || !k) return std::nullopt;
        return m_history->vanished(*k);
    }

    std::optional<std::string> first_bad(std::string_view metric, bool run_level) const override {
        const Entity* e = subject(run_level);
        if (e == nullptr || m_batch == nullptr) return std::nullopt;
        const auto run = m_history->first_bad_run(*e, metric, m_run_id);
        if (!run) return std::nullopt;
        return m_history->describe_run(*run, m_batch->labels);
    }

    std::optional<std::string> last_good(std::string_view metric, bool run_level) const override {
        const Entity* e = subject(run_level);
        if (e == nullptr || m_batch == nullptr || m_history == nullptr) return std::nullopt;
        const auto run = m_history->last_good_run(*e, metric, m_run_id);
        if (!run) return std::nullopt;
        return fmt::format("{} at {}", m_history->describe_run(run->first, m_batch->labels),
                           format_metric(metric.starts_with("run.") ? metric.substr(4) : metric, run->second));
    }

    std::optional<UniformChange> uniform_change(std::string_view metric) const override {
        if (m_history == nullptr) return std::nullopt;
        return m_history->uniform_change(metric);
    }

    std::optional<std::string> changed_labels() const override {
        if (m_history == nullptr) return std::nullopt;
        return m_history->changed_labels();
    }

private:
    // The entity history functions read: this one, or the run for run.METRIC; nullptr without history.
    const Entity* subject(bool run_level) const {
        if (m_history == nullptr) return nullptr;
        return run_level ? m_run : &m_entity;
    }

    const Entity& m_entity;
    const Entity* m_run;
    const RunBatch* m_batch;
    Memo* m_memo;
    const RunHistory* m_history;
    std::int64_t m_run_id;
    const MetricIndex* m_index;
};

// Speedup the profiler itself estimated for the rule's concern on this entity: for a kernel,
// the duration-weighted mean over its launches (launches without the result count as 0).
std::optional<double> tool_speedup(const CompiledRule& rule, const RunBatch& batch, std::size_t index,
                                   const std::vector<std::vector<std::size_t>>& launches_of) {
    if (!rule.tool_finding) return std::nullopt;
    auto best_on = [&](const Entity& e) -> std::optional<double> {
        std::optional<double> best;
        for (const ToolFinding& f : e.tool_findings) {
            if (!f.speedup_pct) continue;
            if (!std::regex_search(f.rule + ": " + f.text, *rule.tool_finding)) continue;
            best = std::max(best.value_or(0.0), *f.speedup_pct);
        }
        return best;
    };
    const Entity& entity = batch.entities[index];
    if (auto own = best_on(entity)) return own;
    double weighted = 0, weight = 0;
    bool any = false;
    for (std::size_t c : launches_of[index]) {
        const Entity& child = batch.entities[c];
        const double w = child.value("duration").value_or(1.0);
        const auto s = best_on(child);
        any = any || s.has_value();
        weighted += s.value_or(0.0) * w;
        weight += w;
    }
    if (!any || weight <= 0) return std::nullopt;
    return weighted / weight;
}

void collect_values(const std::set<std::string>& names, const EntityScope& scope, std::map<std::string, double>& out) {
    for (const std::string& n : names) {
        std::optional<double> v =
            n.starts_with("run.") ? scope.run_metric(std::string_view(n).substr(4)) : scope.metric(n);
        if (v) out[n] = *v;
    }
}

// One line for a rule's kernel findings below its min_impact: how many, their share of GPU time
// and estimated gain together, the largest by name. Severity info, on the run.
Finding summary_finding(const CompiledRule& rule, const StoredRun& run, std::vector<Finding> below) {
    std::sort(below.begin(), below.end(),
              [](const Finding& a, const Finding& b) { return a.share_pct.value_or(0) > b.share_pct.value_or(0); });
    double share = 0, impact = 0;
    bool any_impact = false;
    for (const Finding& f : below) {
        share += f.share_pct.value_or(0);
        if (f.impact) {
            impact += *f.impact;
            any_impact = true;
        }
    }
    std::string names;
    for (std::size_t i = 0; i < below.size() && i < 3; ++i) {
        std::string n = below[i].entity_name;
        if (n.size() > 60) n = n.substr(0, 57) + "...";
        names += fmt::format("{}{} ({:.1f}%)", i == 0 ? "" : ", ", n, below[i].share_pct.value_or(0));
    }
    Finding f;
    f.rule = rule.spec.id;
    f.title = rule.spec.title;
    f.severity = Severity::info;
    f.run_id = run.id;
    f.entity_kind = EntityKind::run;
    f.entity_name = "run";
    f.labels = rule.spec.labels;
    f.labels["summary"] = "below min_impact";
    f.message = fmt::format(
        "{} kernel{} where this holds, together {:.1f}% of GPU time{}; each could move the run by less than {:g}% "
        "(min_impact), so none is told on its own. Largest: {}{}.",
        below.size(), below.size() == 1 ? "" : "s", share,
        any_impact ? fmt::format(" (estimated gain together {:.2f}% of it)", impact) : "", rule.min_impact_pct, names,
        below.size() > 3 ? fmt::format(" and {} more", below.size() - 3) : "");
    f.metrics["kernels"] = static_cast<double>(below.size());
    f.share_pct = share;
    if (any_impact) {
        f.impact = impact;
        if (share > 0) f.estimated_speedup_pct = 100.0 * impact / share;
    }
    return f;
}

}  // namespace

Evaluation evaluate_run(const RuleSet& rules, const StoredRun& run, const std::vector<const RunHistory*>& histories,
                        bool record_checks) {
    Evaluation result;
    const RunBatch& batch = run.batch;
    const Entity* run_entity = nullptr;
    for (const Entity& e : batch.entities)
        if (e.kind == EntityKind::run) run_entity = &e;
    const double gpu_time = run_entity ? run_entity->value("gpu_time").value_or(0.0) : 0.0;
    // Launch entities per parent, built once: a kernel's tool findings live on its launches.
    std::vector<std::vector<std::size_t>> launches_of(batch.entities.size());
    for (std::size_t i = 0; i < batch.entities.size(); ++i) {
        const Entity& e = batch.entities[i];
        if (e.kind == EntityKind::launch && e.parent >= 0 && static_cast<std::size_t>(e.parent) < launches_of.size())
            launches_of[static_cast<std::size_t>(e.parent)].push_back(i);
    }

    Memo memo;  // aggregates over this run, computed once
    // Metric indexes of the entities rules look at, built on first use (0.1-0.3 KB each).
    std::vector<std::unique_ptr<MetricIndex>> indexes(batch.entities.size());
    std::vector<Finding> below;  // a rule's kernel findings below its min_impact
    for (std::size_t r = 0; r < rules.rules.size(); ++r) {
        const CompiledRule& rule = rules.rules[r];
        const RunHistory* history = r < histories.size() ? histories[r] : nullptr;
        for (std::size_t i = 0; i < batch.entities.size(); ++i) {
            const Entity& entity = batch.entities[i];
            if (entity.kind != rule.spec.scope) continue;
            if (!indexes[i]) indexes[i] = std::make_unique<MetricIndex>(entity);
            const EntityScope scope(entity, run_entity, &batch, &memo, history, run.id, indexes[i].get());
            const Value cond = rule.when.evaluate(scope);
            const bool* fired = std::get_if<bool>(&cond);
            if (fired == nullptr) {
                ++result.not_applicable;
                continue;
            }
            ++result.evaluated;
            if (record_checks) result.checks.push_back({r, i});
            if (!*fired) continue;

            Finding f;
            f.rule = rule.spec.id;
            f.title = rule.spec.title;
            f.severity = rule.spec.severity;
            f.run_id = run.id;
            f.entity_kind = entity.kind;
            f.entity_name = entity.name;
            f.labels = rule.spec.labels;
            f.message = rule.message.render(scope);
            collect_values(rule.when.metrics_read(), scope, f.metrics);
            collect_values(rule.message.metrics_read(), scope, f.metrics);
            // A regression carries its comparison as the engine judged it.
            if (history != nullptr && !rule.regressions.empty()) {
                const RegressionCheck& check = rule.regressions.front();
                const Entity* subject = check.run_level ? run_entity : &entity;
                if (subject != nullptr)
                    if (const auto c = history->compare(*subject, check.metric)) {
                        FindingComparison fc;
                        fc.metric = check.run_level ? "run." + check.metric : check.metric;
                        fc.baseline = c->baseline;
                        fc.current = c->current;
                        fc.change_pct = c->change_pct;
                        if (c->window_test || c->rank_test)
                            fc.confidence_pct = 100.0 * (check.higher_is_worse ? c->confidence_up : c->confidence_down);
                        fc.first_bad_run = history->first_bad_run(*subject, check.metric, run.id);
                        fc.reference = c->horizon ? "horizon" : "window";
                        if (fc.first_bad_run) {
                            fc.first_bad_commit = history->commit_of(*fc.first_bad_run, batch.labels);
                            fc.first_bad_value = history->level_at(*subject, check.metric, *fc.first_bad_run, run.id);
                        }
                        if (const auto good = history->last_good_run(*subject, check.metric, run.id)) {
                            fc.last_good_run = good->first;
                            fc.last_good_value = good->second;
                            fc.last_good_commit = history->commit_of(good->first, batch.labels);
                        }
                        f.comparison = std::move(fc);
                    }
            }
            f.estimated_speedup_pct = tool_speedup(rule, batch, i, launches_of);
            if (!f.estimated_speedup_pct && rule.estimated_speedup) {
                const Value s = rule.estimated_speedup->evaluate(scope);
                if (const double* d = std::get_if<double>(&s); d && std::isfinite(*d))
                    f.estimated_speedup_pct = std::clamp(*d, 0.0, 100.0);
            }
            // A rank's estimated speedup is already a share of its job's step.
            if (entity.kind == EntityKind::run || entity.kind == EntityKind::rank) {
                f.share_pct = 100.0;
            } else if (gpu_time > 0) {
                const auto t = scope.metric(entity.kind == EntityKind::kernel ? "duration_total" : "duration");
                if (t) f.share_pct = 100.0 * *t / gpu_time;
            }
            if (rule.min_share_pct && f.share_pct && *f.share_pct < *rule.min_share_pct) continue;
            if (f.share_pct && f.estimated_speedup_pct) f.impact = *f.share_pct * *f.estimated_speedup_pct / 100.0;
            // A kernel finding that could move the run by less than the rule's min_impact is said
            // in the rule's one summary line instead (history rules judge change, not size).
            const double could_move = f.impact ? *f.impact : f.share_pct.value_or(100.0);
            if (entity.kind == EntityKind::kernel && !rule.uses_history && f.share_pct && could_move < rule.min_impact_pct) {
                below.push_back(std::move(f));
                continue;
            }
            result.findings.push_back(std::move(f));
        }
        if (!below.empty()) result.findings.push_back(summary_finding(rule, run, std::move(below)));
        below.clear();
    }
    rank_findings(result.findings);
    return result;
}

void rank_findings(std::vector<Finding>& findings) {
    // Sorts positions, then moves each finding once (findings are large to move around).
    std::vector<std::size_t> order(findings.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
        const Finding& a = findings[x];
        const Finding& b = findings[y];
        const double ia = a.impact.value_or(-1), ib = b.impact.value_or(-1);
        if (ia != ib) return ia > ib;
        if (a.severity != b.severity) return a.severity > b.severity;
        const double sa = a.share_pct.value_or(-1), sb = b.share_pct.value_or(-1);
        if (sa != sb) return sa > sb;
        if (a.rule != b.rule) return a.rule < b.rule;
        return a.entity_name < b.entity_name;
    });
    std::vector<Finding> ranked;
    ranked.reserve(findings.size());
    for (std::size_t i : order) ranked.push_back(std::move(findings[i]));
    findings = std::move(ranked);
}

}  // namespace perfwatch
