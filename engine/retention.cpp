#include "engine/retention.hpp"

#include <algorithm>

#include "engine/history.hpp"

namespace perfwatch {

Result<std::set<std::int64_t>> runs_open_regressions_need(const Db& db, const RuleSet& rules) {
    auto open = db.regressions().list(true);
    if (!open) return std::unexpected(open.error());
    std::set<std::int64_t> keep;
    for (const RegressionState& r : *open) {
        BaselineSpec spec;
        for (const CompiledRule& rule : rules.rules)
            if (rule.spec.id == r.rule) spec = rule.spec.baseline;
        const std::int64_t first_bad = r.first_bad_run.value_or(r.opened_run);
        keep.insert({r.opened_run, first_bad, r.last_run});
        if (r.last_bad_run > 0) keep.insert(r.last_bad_run);
        // The series as the newest run of the regression sees it: runs before it, then itself.
        auto newest = db.load(std::max(r.last_run, r.last_bad_run));
        if (!newest) return std::unexpected(newest.error());
        if (!*newest) continue;
        auto before = series_runs(db, **newest, spec, 1'000'000);
        if (!before) return std::unexpected(before.error());
        std::vector<std::int64_t> series;
        for (const auto& run : *before) series.push_back(run->id);
        series.push_back((*newest)->id);
        const auto at = std::find_if(series.begin(), series.end(), [&](std::int64_t id) { return id >= first_bad; });
        const std::size_t first = static_cast<std::size_t>(at - series.begin());
        const std::size_t window = spec.runs + k_reference_runs;
        for (std::size_t i = first > window ? first - window : 0; i < series.size(); ++i) keep.insert(series[i]);
    }
    return keep;
}

Result<PruneReport> apply_retention(Db& db, const RuleSet& rules, std::optional<int> samples_days,
                                    std::optional<int> runs_days, bool dry_run) {
    auto keep = runs_open_regressions_need(db, rules);
    if (!keep) return std::unexpected(keep.error());
    RetentionPolicy policy;
    policy.samples_days = samples_days;
    policy.runs_days = runs_days;
    policy.keep = std::move(*keep);
    return db.prune(policy, dry_run);
}

}  // namespace perfwatch
