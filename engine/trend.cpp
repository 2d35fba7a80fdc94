#include "engine/trend.hpp"

#include <fmt/format.h>

#include <cmath>

#include "engine/history.hpp"

namespace perfwatch {

Result<std::optional<Trend>> trend_for(const Db& db, const StoredRun& run, const Finding& f) {
    if (!f.comparison) return std::optional<Trend>{};
    const FindingComparison& cmp = *f.comparison;
    const bool run_level = cmp.metric.starts_with("run.");
    const std::string metric = run_level ? cmp.metric.substr(4) : cmp.metric;
    const EntityKind kind = run_level ? EntityKind::run : f.entity_kind;
    const std::string name = run_level ? std::string() : f.entity_name;
    BaselineSpec spec;
    const std::string branch = label_value(run.batch.labels, "branch");
    if (!branch.empty()) spec.branch = branch;
    auto runs = series_runs(db, run, spec, 30);
    if (!runs) return std::unexpected(runs.error());
    Baseline all;
    all.runs = std::move(*runs);
    const RunHistory history(std::move(all), run.batch);
    const Entity* current = nullptr;
    for (const Entity& e : run.batch.entities)
        if (e.kind == kind && (kind == EntityKind::run || e.name == name)) current = &e;
    if (current == nullptr) return std::optional<Trend>{};
    Trend t;
    t.title = fmt::format("{} '{}': {} ({})", to_string(kind), run_level ? "run" : name, metric, f.rule);
    t.metric = metric;
    const auto levels = history.baseline_levels(*current, metric);
    for (std::size_t i = 0; i < levels.size(); ++i) {
        if (!levels[i]) continue;
        const StoredRun& r = *history.baseline().runs[i];
        const std::string commit = label_value(r.batch.labels, "commit");
        t.points.push_back({r.id, commit.empty() ? fmt::format("run {}", r.id) : commit, *levels[i]});
    }
    const auto now = history.level(*current, metric);
    if (!now) return std::optional<Trend>{};
    const std::string commit = label_value(run.batch.labels, "commit");
    t.points.push_back({run.id, commit.empty() ? fmt::format("run {}", run.id) : commit, *now});
    if (t.points.size() < 2) return std::optional<Trend>{};

    t.baseline = t.band_low = t.band_high = cmp.baseline;
    std::optional<std::int64_t> first_bad = cmp.first_bad_run;
    auto regressions = db.regressions().of_series(series_key(run.batch.labels, spec));
    if (!regressions) return std::unexpected(regressions.error());
    for (const RegressionState& r : *regressions) {
        if (r.rule != f.rule || r.entity_kind != f.entity_kind || r.entity_name != f.entity_name) continue;
        if (r.opened_run > run.id || (r.resolved_run && *r.resolved_run < run.id)) continue;
        const double margin = std::fabs(r.band_limit - r.baseline);
        t.baseline = r.baseline;
        t.band_low = r.baseline - margin;
        t.band_high = r.baseline + margin;
        if (r.first_bad_run) first_bad = r.first_bad_run;
    }
    if (first_bad)
        for (std::size_t i = 0; i < t.points.size(); ++i)
            if (t.points[i].run_id == *first_bad) t.change_point = i;
    return std::optional<Trend>{std::move(t)};
}

}  // namespace perfwatch
