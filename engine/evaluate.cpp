#include "engine/evaluate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>

#include "core/vocabulary.hpp"
#include "engine/scopes.hpp"

namespace perfwatch {

namespace {

// (kernel, launch) index pairs into a run's entities, by kernel: a run keeps few launches, so
// this costs nothing per kernel.
using LaunchesOf = std::vector<std::pair<std::size_t, std::size_t>>;

// Speedup the profiler itself estimated for the rule's concern on this entity: for a kernel,
// the duration-weighted mean over its launches (launches without the result count as 0).
std::optional<double> tool_speedup(const CompiledRule& rule, const RunBatch& batch, std::size_t index,
                                   const LaunchesOf& launches_of) {
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
    const auto [first, last] = std::equal_range(launches_of.begin(), launches_of.end(), std::pair{index, std::size_t{0}},
                                                [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto it = first; it != last; ++it) {
        const Entity& child = batch.entities[it->second];
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

// A kernel finding below its rule's min_impact: what the rule's summary line names.
struct BelowMinImpact {
    const std::string* entity_name;  // the run's entity's
    std::optional<double> share_pct;
    std::optional<double> impact;
};

// Appends "name (12.3%)" to a list of entities with their shares, names past 60 characters cut.
void append_named_share(std::string& list, std::string_view name, double share_pct) {
    std::string n(name);
    if (n.size() > 60) n = n.substr(0, 57) + "...";
    list += fmt::format("{}{} ({:.1f}%)", list.empty() ? "" : ", ", n, share_pct);
}

// One line for a rule's kernel findings below its min_impact: how many, their share of GPU time
// and estimated gain together, the largest by name. Severity info, on the run.
Finding summary_finding(const CompiledRule& rule, const StoredRun& run, std::vector<BelowMinImpact> below) {
    std::sort(below.begin(), below.end(), [](const BelowMinImpact& a, const BelowMinImpact& b) {
        return a.share_pct.value_or(0) > b.share_pct.value_or(0);
    });
    double share = 0, impact = 0;
    bool any_impact = false;
    for (const BelowMinImpact& f : below) {
        share += f.share_pct.value_or(0);
        if (f.impact) {
            impact += *f.impact;
            any_impact = true;
        }
    }
    std::string names;
    for (std::size_t i = 0; i < below.size() && i < 3; ++i)
        append_named_share(names, *below[i].entity_name, below[i].share_pct.value_or(0));
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

// A `fix: run` rule's findings from `first` on become one: the largest (by impact, else share),
// its message naming the others, its share and impact theirs together.
void merge_run_wide(std::vector<Finding>& findings, std::size_t first) {
    if (findings.size() < first + 2) return;
    const auto size = [](const Finding& f) { return f.impact.value_or(f.share_pct.value_or(0)); };
    std::stable_sort(findings.begin() + static_cast<std::ptrdiff_t>(first), findings.end(),
                     [&](const Finding& a, const Finding& b) { return size(a) > size(b); });
    Finding& head = findings[first];
    double share = head.share_pct.value_or(0), impact = head.impact.value_or(0);
    std::string others;
    for (std::size_t i = first + 1; i < findings.size(); ++i) {
        const Finding& f = findings[i];
        share += f.share_pct.value_or(0);
        impact += f.impact.value_or(0);
        append_named_share(others, f.entity_name, f.share_pct.value_or(0));
    }
    const std::size_t more = findings.size() - first - 1;
    // A copy's share is of the GPU's work (kernels, copies and sets), a kernel's of kernel time.
    head.message += fmt::format(" The same change fixes {} more {}{}: {}; together {:.1f}% of {}.", more,
                                to_string(head.entity_kind), more == 1 ? "" : "s", others, share,
                                head.entity_kind == EntityKind::memcpy ? "the GPU's work" : "GPU time");
    if (head.share_pct) head.share_pct = share;
    if (head.impact) head.impact = impact;
    head.metrics["entities"] = static_cast<double>(more + 1);
    findings.erase(findings.begin() + static_cast<std::ptrdiff_t>(first) + 1, findings.end());
}

// Makes a warning or error information, saying which floor it fell under.
void demote(Finding& f, const char* why) {
    if (f.severity == Severity::info) return;
    f.severity = Severity::info;
    f.labels["floor"] = why;
}

// Ranks `findings` and demotes those too small to act on: every one of a whole-program timeline
// whose kernels, copies and sets (`work`, ns) add up to under k_min_work_ns (a PyTorch profiler
// trace, which counts CPU operators, is a window the user chose around steady-state steps: its
// size says nothing of whether the work matters); a kernel regression moving the run by under
// k_min_regression_impact_pct; any other finding saving under k_min_warning_impact_pct of the
// run; and, beside the headline (the first warning with an estimated impact), one saving under
// k_secondary_impact_ratio of what the headline saves.
void apply_floors(std::vector<Finding>& findings, const Entity* run_entity, double work) {
    const bool too_small = run_entity != nullptr && run_entity->value("span") && !run_entity->value("cpu_ops") &&
                           work < k_min_work_ns;
    for (Finding& f : findings) {
        if (too_small && !f.comparison) demote(f, "too little GPU work to act on");
        if (f.comparison && f.entity_kind == EntityKind::kernel && f.impact && *f.impact < k_min_regression_impact_pct)
            demote(f, "moves the run by under the regression impact floor");
        static_assert(k_min_warning_impact_pct == 4.0, "the demotion below names the floor");
        if (!f.comparison && f.impact && *f.impact < k_min_warning_impact_pct)
            demote(f, "saves under 4% of the run's GPU time (k_min_warning_impact_pct)");
    }
    rank_findings(findings);
    const auto headline = std::find_if(findings.begin(), findings.end(), [](const Finding& f) {
        return f.severity > Severity::info && f.impact && !f.comparison;
    });
    if (headline == findings.end()) return;
    static_assert(k_secondary_impact_ratio == 0.4, "the demotion below names the ratio");
    const double floor = *headline->impact * k_secondary_impact_ratio;
    for (Finding& f : findings)
        if (&f != &*headline && !f.comparison && f.impact && *f.impact < floor)
            demote(f, "saves under 40% of what the headline saves (k_secondary_impact_ratio)");
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
    const double memory_time = run_entity ? run_entity->value("memory_time").value_or(0.0) : 0.0;
    // Launch entities per parent, built once: a kernel's tool findings live on its launches.
    LaunchesOf launches_of;
    for (std::size_t i = 0; i < batch.entities.size(); ++i) {
        const Entity& e = batch.entities[i];
        if (e.kind == EntityKind::launch && e.parent >= 0 && static_cast<std::size_t>(e.parent) < batch.entities.size())
            launches_of.emplace_back(static_cast<std::size_t>(e.parent), i);
    }
    std::stable_sort(launches_of.begin(), launches_of.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

    AggregateMemo memo;  // aggregates over this run, computed once
    // Rows per entity kind, built when a rule of the kind first needs them, with the columns of
    // every metric the kind's rules read.
    std::map<EntityKind, std::unique_ptr<RunRows>> rows_of;
    std::map<EntityKind, std::set<std::string>> read_by_kind;
    for (const CompiledRule& rule : rules.rules) {
        auto& names = read_by_kind[rule.spec.scope];
        names.insert(rule.when.metrics_read().begin(), rule.when.metrics_read().end());
        names.insert({"duration_total", "duration"});  // a finding's share of GPU time
    }
    // Metric indexes of the entities findings are built on, made on first use (0.1-0.3 KB each).
    std::unordered_map<std::size_t, MetricIndex> indexes;
    std::vector<BelowMinImpact> below;  // a rule's kernel findings below its min_impact
    for (std::size_t r = 0; r < rules.rules.size(); ++r) {
        const CompiledRule& rule = rules.rules[r];
        const RunHistory* history = r < histories.size() ? histories[r] : nullptr;
        const std::size_t first_of_rule = result.findings.size();
        auto& rows = rows_of[rule.spec.scope];
        if (!rows) {
            rows = std::make_unique<RunRows>(batch, rule.spec.scope, run_entity, &memo, run.id);
            rows->gather(read_by_kind[rule.spec.scope]);
        }
        rows->set_history(history);
        const std::vector<Truth> decided = rule.when.decide_rows(*rows);
        for (std::size_t row = 0; row < decided.size(); ++row) {
            if (decided[row] == Truth::missing) {
                ++result.not_applicable;
                continue;
            }
            const std::size_t i = rows->entity(row);
            ++result.evaluated;
            if (record_checks) result.checks.push_back({r, i});
            if (decided[row] == Truth::no) continue;

            const Entity& entity = batch.entities[i];
            // Share and estimated gain first: a finding too small to tell on its own is not rendered.
            std::optional<double> share;
            // A rank's estimated speedup is already a share of its job's step.
            // A device's idle time is the run's too.
            if (entity.kind == EntityKind::run || entity.kind == EntityKind::rank || entity.kind == EntityKind::device) {
                share = 100.0;
            } else if (entity.kind == EntityKind::memcpy && gpu_time + memory_time > 0) {
                // A copy's share is of the GPU's work: kernels, copies and sets together.
                if (const auto t = rows->metric(row, "duration_total")) share = 100.0 * *t / (gpu_time + memory_time);
            } else if (gpu_time > 0) {
                const auto t = rows->metric(row, entity.kind == EntityKind::kernel ? "duration_total" : "duration");
                if (t) share = 100.0 * *t / gpu_time;
            }
            if (rule.min_share_pct && share && *share < *rule.min_share_pct) continue;
            // A kernel's and a copy's impact are on one scale, the GPU's work (kernels, copies and
            // sets): a kernel's share of kernel time would rank its fix above a copy fix that saves
            // more. (The run's timeline is not that scale: on the tune half of the headline set it
            // put idle findings above the small grids and faults that cause the idle time.)
            std::optional<double> work_share = share;
            if (share && entity.kind == EntityKind::kernel && gpu_time > 0 && memory_time > 0)
                work_share = *share * gpu_time / (gpu_time + memory_time);
            const MetricIndex& index = indexes.try_emplace(i, entity).first->second;
            const EntityScope scope(entity, run_entity, &batch, &memo, history, run.id, &index);
            std::optional<double> speedup = tool_speedup(rule, batch, i, launches_of);
            if (!speedup && rule.estimated_speedup) {
                const Value v = rule.estimated_speedup->evaluate(scope);
                if (const double* d = std::get_if<double>(&v); d && std::isfinite(*d)) speedup = std::clamp(*d, 0.0, 100.0);
            }
            std::optional<double> impact;
            if (work_share && speedup) impact = *work_share * *speedup / 100.0;
            // A kernel finding that could move the run by less than the rule's min_impact is said
            // in the rule's one summary line instead (history rules judge change, not size).
            const double could_move = impact ? *impact : share.value_or(100.0);
            if (entity.kind == EntityKind::kernel && !rule.uses_history && share && could_move < rule.min_impact_pct) {
                below.push_back({&entity.name, share, impact});
                continue;
            }

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
            f.estimated_speedup_pct = speedup;
            f.share_pct = share;
            f.impact = impact;
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
            result.findings.push_back(std::move(f));
        }
        if (rule.spec.fix == FixScope::run) merge_run_wide(result.findings, first_of_rule);
        if (!below.empty()) result.findings.push_back(summary_finding(rule, run, std::move(below)));
        below.clear();
    }
    apply_floors(result.findings, run_entity, gpu_time + memory_time);
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
