#include "engine/history.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <limits>
#include <set>

namespace perfwatch {

namespace {

// Labels naming one build, and labels describing the machine a run had (its environment):
// neither makes another series, and the environment ones are named when they change.
constexpr auto k_identity_labels = std::to_array<std::string_view>({
    "commit", "branch", "build", "build_id", "pipeline", "job", "job_id", "time", "date", "timestamp",
    "tool_version", "host", "hostname", "driver", "cuda_driver", "cuda_runtime", "cupti", "rocm", "clocks",
    "sm_clock", "memory_clock", "power_limit",
});

std::string branch_of(const Labels& labels, const std::string& default_branch) {
    auto it = labels.find("branch");
    return it == labels.end() ? default_branch : it->second;
}

}  // namespace

bool is_identity_label(std::string_view key) {
    return std::find(k_identity_labels.begin(), k_identity_labels.end(), key) != k_identity_labels.end();
}

std::string gpu_of(const Labels& labels) { return label_value(labels, "gpu"); }

bool comparable(const Labels& a, const Labels& b, const std::vector<std::string>& match) {
    if (gpu_of(a) != gpu_of(b) || label_value(a, "benchmark") != label_value(b, "benchmark")) return false;
    if (!match.empty()) {
        for (const std::string& k : match)
            if (label_value(a, k) != label_value(b, k)) return false;
        return true;
    }
    auto config = [](const Labels& l) {
        Labels out;
        for (const auto& [k, v] : l)
            if (!is_identity_label(k)) out.emplace(k, v);
        return out;
    };
    return config(a) == config(b);
}

std::string series_key(const Labels& labels, const BaselineSpec& spec) {
    std::string key;
    for (const auto& [k, v] : labels) {
        if (k == "gpu" || is_identity_label(k)) continue;
        if (k != "benchmark" && !spec.match.empty() && std::find(spec.match.begin(), spec.match.end(), k) == spec.match.end()) continue;
        key += fmt::format("{}={};", k, v);
    }
    return key + fmt::format("gpu={};branch={}", gpu_of(labels), branch_of(labels, spec.branch));
}

namespace {

// Which runs of a series may be a baseline, from its regressions: none before an accepted
// regression's first bad run (the accepted level is the baseline since), and none from an open
// regression's first bad run on, nor between a resolved one's first and last bad runs.
struct BaselineWindow {
    std::int64_t from = 0;
    std::vector<std::pair<std::int64_t, std::int64_t>> excluded;  // [first, last] run ids
    bool admits(std::int64_t id) const {
        if (id < from) return false;
        for (const auto& [a, b] : excluded)
            if (id >= a && id <= b) return false;
        return true;
    }
};

// Also records, in `out`, the first bad run of each open regression and its commit.
Result<BaselineWindow> baseline_window(const Db& db, const std::string& series, std::int64_t current, Baseline& out) {
    BaselineWindow w;
    auto regressions = db.regressions().of_series(series);
    if (!regressions) return std::unexpected(regressions.error());
    for (const RegressionState& r : *regressions) {
        if (r.opened_run >= current) continue;  // opened by this run or a later one
        // A false alarm: its runs are baseline runs again.
        if (r.status == RegressionStatus::invalid) continue;
        const std::int64_t first = r.first_bad_run.value_or(r.opened_run);
        const bool closed_before = r.resolved_run && *r.resolved_run < current;
        if (r.status == RegressionStatus::accepted && closed_before)
            w.from = std::max(w.from, first);
        else if (r.status == RegressionStatus::resolved && closed_before)
            w.excluded.emplace_back(first, r.last_bad_run);
        else
            w.excluded.emplace_back(first, std::numeric_limits<std::int64_t>::max());
        if (!closed_before) {
            const std::tuple key{r.entity_kind, r.entity_kind == EntityKind::run ? std::string() : r.entity_name, r.metric};
            out.open_first_bad[key] = first;
            auto value = db.browse().metric_values(r.entity_kind,
                                                   r.entity_kind == EntityKind::run ? std::nullopt : std::optional(r.entity_name),
                                                   r.metric, {first});
            if (!value) return std::unexpected(value.error());
            if (auto it = value->find(first); it != value->end()) out.open_first_bad_values[key] = it->second.value;
            if (!out.commits.contains(first)) {
                auto run = db.history().find_runs({}, first + 1, 1);
                if (!run) return std::unexpected(run.error());
                if (!run->empty() && run->front().id == first)
                    out.commits[first] = label_value(run->front().labels, "commit");
            }
        }
    }
    return w;
}

// Comparable runs stored before `before`, newest first, at most `limit`, on `branch` when given,
// admitted by `window` when given.
Result<std::vector<std::int64_t>> comparable_runs(const Db& db, const Labels& labels, const BaselineSpec& spec,
                                                  std::int64_t before, const std::string* branch, std::size_t limit,
                                                  const BaselineWindow* window = nullptr) {
    // The labels a comparable run must carry go to the query; the rest (labels it must not have,
    // a missing branch counting as the baseline branch) is checked here, a page at a time.
    Labels must;
    for (const auto& [k, v] : labels) {
        const bool config = spec.match.empty() ? !is_identity_label(k)
                                               : std::find(spec.match.begin(), spec.match.end(), k) != spec.match.end();
        if (config || k == "gpu" || k == "benchmark") must.emplace(k, v);
    }
    const std::size_t page = std::max<std::size_t>(4 * limit, 32);
    std::vector<std::int64_t> out;
    while (out.size() < limit) {
        if (window != nullptr && before != 0 && before <= window->from) break;
        auto candidates = db.history().find_runs(must, before, page);
        if (!candidates) return std::unexpected(candidates.error());
        for (const RunLabels& r : *candidates) {
            if (out.size() >= limit) break;
            if (branch != nullptr && branch_of(r.labels, spec.branch) != *branch) continue;
            if (window != nullptr && !window->admits(r.id)) continue;
            if (comparable(labels, r.labels, spec.match)) out.push_back(r.id);
        }
        if (candidates->size() < page) break;
        before = candidates->back().id;
    }
    return out;
}

// The runs of `newest_first`, oldest first, read in one batch (those in `cache` from memory).
Result<void> load_runs(const Db& db, const std::vector<std::int64_t>& newest_first,
                       std::vector<std::shared_ptr<const StoredRun>>& out, RunCache* cache) {
    const std::vector<std::int64_t> oldest_first(newest_first.rbegin(), newest_first.rend());
    if (cache != nullptr) {
        auto runs = cache->get_many(db, oldest_first);
        if (!runs) return std::unexpected(runs.error());
        for (auto& run : *runs)
            if (run) out.push_back(std::move(run));
        return {};
    }
    auto runs = db.history().load_runs(oldest_first);
    if (!runs) return std::unexpected(runs.error());
    for (StoredRun& run : *runs) out.push_back(std::make_shared<const StoredRun>(std::move(run)));
    return {};
}

// A rough size in memory of a stored run, for the cache's bound.
std::size_t approx_bytes(const StoredRun& run) {
    std::size_t bytes = sizeof(StoredRun) + run.batch.source.size();
    for (const Entity& e : run.batch.entities) {
        bytes += sizeof(Entity) + e.name.size() + e.metrics.size() * sizeof(Metric);  // names interned
        for (const auto& [k, v] : e.attributes) bytes += sizeof(Attributes::value_type) + v.size();  // keys interned
        for (const auto& [k, v] : e.samples) bytes += 64 + v.size() * sizeof(double);
        for (const ToolFinding& f : e.tool_findings) bytes += sizeof(ToolFinding) + f.text.size();
    }
    return bytes;
}

}  // namespace

Result<std::shared_ptr<const StoredRun>> RunCache::get(const Db& db, std::int64_t id) {
    auto runs = get_many(db, {id});
    if (!runs) return std::unexpected(runs.error());
    return std::move(runs->front());
}

Result<std::vector<std::shared_ptr<const StoredRun>>> RunCache::get_many(const Db& db,
                                                                         const std::vector<std::int64_t>& ids) {
    std::vector<std::shared_ptr<const StoredRun>> out(ids.size());
    std::vector<std::int64_t> missing;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (auto it = m_slots.find(ids[i]); it != m_slots.end()) {
            m_ages.splice(m_ages.begin(), m_ages, it->second.age);
            out[i] = it->second.run;
        } else {
            missing.push_back(ids[i]);
        }
    }
    if (missing.empty()) return out;
    auto loaded = db.history().load_runs(missing);
    if (!loaded) return std::unexpected(loaded.error());
    std::unordered_map<std::int64_t, std::shared_ptr<const StoredRun>> fresh;
    for (StoredRun& r : *loaded) {
        const std::int64_t id = r.id;
        fresh.emplace(id, std::make_shared<const StoredRun>(std::move(r)));
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (out[i]) continue;
        auto it = fresh.find(ids[i]);
        if (it == fresh.end()) continue;
        out[i] = it->second;
        if (m_slots.contains(ids[i])) continue;
        const std::size_t bytes = approx_bytes(*it->second);
        m_ages.push_front(ids[i]);
        m_slots.emplace(ids[i], Slot{it->second, bytes, m_ages.begin()});
        m_bytes += bytes;
    }
    while (m_bytes > m_max_bytes && m_ages.size() > 1) {
        auto old = m_slots.find(m_ages.back());
        m_bytes -= old->second.bytes;
        m_slots.erase(old);
        m_ages.pop_back();
    }
    return out;
}

Result<Baseline> select_baseline(const Db& db, const StoredRun& current, const BaselineSpec& spec, RunCache* cache) {
    Baseline out;
    const Labels& labels = current.batch.labels;
    auto pins = db.pins().list();
    if (!pins) return std::unexpected(pins.error());
    for (const BaselinePin& pin : *pins) {
        if (pin.run_id >= current.id) continue;
        auto pinned = db.history().find_runs({}, pin.run_id + 1, 1);
        if (!pinned) return std::unexpected(pinned.error());
        if (pinned->empty() || pinned->front().id != pin.run_id) continue;
        const Labels& pl = pinned->front().labels;
        if (!comparable(labels, pl, spec.match)) continue;
        const std::string branch = branch_of(pl, spec.branch);
        auto ids = comparable_runs(db, pl, spec, pin.run_id, &branch, spec.runs - 1);
        if (!ids) return std::unexpected(ids.error());
        ids->insert(ids->begin(), pin.run_id);
        if (auto r = load_runs(db, *ids, out.runs, cache); !r) return std::unexpected(r.error());
        out.description = fmt::format("pinned run {} and {} earlier comparable run(s) on {}", pin.run_id,
                                      ids->size() - 1, branch);
        return out;
    }
    const std::string branch = spec.branch;
    auto window = baseline_window(db, series_key(labels, spec), current.id, out);
    if (!window) return std::unexpected(window.error());
    auto ids = comparable_runs(db, labels, spec, current.id, &branch, spec.runs + k_reference_runs, &*window);
    if (!ids) return std::unexpected(ids.error());
    // The newest `runs` are the window; the k_reference_runs before them the long-horizon reference.
    std::vector<std::int64_t> reference;
    if (ids->size() >= spec.runs + k_min_history_runs)
        reference.assign(ids->begin() + static_cast<std::ptrdiff_t>(spec.runs), ids->end());
    // Window and reference in one batch: `ids` is newest first (the window, then the reference),
    // so the runs read, oldest first, are the reference and then the window.
    std::vector<std::shared_ptr<const StoredRun>> loaded;
    if (auto r = load_runs(db, *ids, loaded, cache); !r) return std::unexpected(r.error());
    const auto window_start = loaded.end() - static_cast<std::ptrdiff_t>(std::min(loaded.size(), spec.runs));
    if (!reference.empty()) out.reference.assign(loaded.begin(), window_start);
    out.runs.assign(window_start, loaded.end());
    const bool cut = window->from > 0 || !window->excluded.empty();
    out.description = out.runs.empty() ? fmt::format("no comparable run on {} yet", spec.branch)
                                       : fmt::format("last {} comparable run(s) on {}", out.runs.size(), spec.branch);
    if (cut && !out.runs.empty()) {
        std::vector<std::string> parts;
        if (window->from > 0) parts.push_back(fmt::format("from run {} (an accepted level)", window->from));
        for (const auto& [a, b] : window->excluded)
            parts.push_back(b == std::numeric_limits<std::int64_t>::max() ? fmt::format("before run {} (an open regression)", a)
                                                                          : fmt::format("not runs {}-{} (a regression)", a, b));
        out.description += fmt::format(", {}", fmt::join(parts, ", "));
    }
    if (!out.reference.empty())
        out.description += fmt::format("; reference: the {} run(s) before them", out.reference.size());
    // The recent runs whatever the regressions, mostly the window's again (the cache has them).
    if (cut) {
        auto recent = comparable_runs(db, labels, spec, current.id, &branch, 2 * spec.runs);
        if (!recent) return std::unexpected(recent.error());
        if (auto r = load_runs(db, *recent, out.recent, cache); !r) return std::unexpected(r.error());
    } else {
        out.recent.assign(loaded.begin(), loaded.end());
    }
    return out;
}

Result<std::vector<std::shared_ptr<const StoredRun>>> series_runs(const Db& db, const StoredRun& current,
                                                                  const BaselineSpec& spec, std::size_t limit) {
    const std::string branch = spec.branch;
    auto ids = comparable_runs(db, current.batch.labels, spec, current.id, &branch, limit);
    if (!ids) return std::unexpected(ids.error());
    std::vector<std::shared_ptr<const StoredRun>> out;
    if (auto r = load_runs(db, *ids, out, nullptr); !r) return std::unexpected(r.error());
    return out;
}

Result<Baseline> explicit_baseline(const Db& db, const StoredRun& current, std::int64_t baseline_run) {
    auto run = db.load(baseline_run);
    if (!run) return std::unexpected(run.error());
    if (!*run) return fail("", 0, fmt::format("no run {} to compare with", baseline_run));
    const std::string a = gpu_of(current.batch.labels), b = gpu_of((*run)->batch.labels);
    if (a != b)
        return fail((*run)->batch.source, 0,
                    fmt::format("baseline run {} ran on {}, run {} on {}: runs on different GPU models are not compared",
                                baseline_run, b.empty() ? "an unknown GPU" : b, current.id,
                                a.empty() ? "an unknown GPU" : a));
    Baseline out;
    out.runs.push_back(std::make_shared<const StoredRun>(std::move(**run)));
    out.given = true;
    out.description = fmt::format("run {} (given)", baseline_run);
    return out;
}

bool uses_duration_samples(std::string_view metric) {
    return metric == "duration" || metric == "duration_mean" || metric == "duration_median";
}

bool is_clock_metric(std::string_view metric) { return metric == "sm_frequency" || metric == "dram_frequency"; }

namespace {

// The clock setting a run was measured at: its `clocks` label and its SM clock where measured.
struct ClockSetting {
    std::string label;
    std::optional<double> sm;

    explicit ClockSetting(const RunBatch& batch) : label(label_value(batch.labels, "clocks")) {
        for (const Entity& e : batch.entities)
            if (e.kind == EntityKind::run) sm = e.value("sm_frequency");
        if (sm && !(*sm > 0)) sm.reset();
    }
    // The same label and, where both measured it, SM clocks within k_clock_tolerance.
    bool same_as(const ClockSetting& o) const {
        if (label != o.label) return false;
        return !sm || !o.sm || std::fabs(*sm - *o.sm) <= k_clock_tolerance * std::max(*sm, *o.sm);
    }
};

}  // namespace

RunHistory::RunHistory(Baseline baseline, const RunBatch& current) : m_baseline(std::move(baseline)), m_current(current) {
    // Timings are compared only with runs measured at the same clock; the clocks themselves with
    // every baseline run (run-clock-changed says when they differ).
    m_all_runs = m_baseline.runs;
    const ClockSetting clock(current);
    auto keep_same_clock = [&](std::vector<std::shared_ptr<const StoredRun>>& runs) {
        const auto before = runs.size();
        std::erase_if(runs, [&](const auto& r) { return !clock.same_as(ClockSetting(r->batch)); });
        return before - runs.size();
    };
    if (const std::size_t left_out = keep_same_clock(m_baseline.runs); left_out > 0)
        m_baseline.description += fmt::format(" ({} at another clock left out)", left_out);
    keep_same_clock(m_baseline.reference);
    keep_same_clock(m_baseline.recent);
    auto index_runs = [&](const std::vector<std::shared_ptr<const StoredRun>>& runs, auto& indexes) {
        for (const auto& run_ptr : runs) {
            auto& index = indexes.emplace_back();
            for (const Entity& e : run_ptr->batch.entities) {
                if (e.kind == EntityKind::launch) continue;
                index.emplace(std::make_pair(e.kind, e.kind == EntityKind::run ? std::string() : e.name), &e);
            }
            index_launches(run_ptr->batch);
        }
    };
    index_runs(m_baseline.runs, m_index);
    index_runs(m_baseline.reference, m_reference_index);
    index_runs(m_baseline.recent, m_recent_index);
    index_runs(m_all_runs, m_all_index);
    index_launches(current);
}

void RunHistory::index_launches(const RunBatch& batch) {
    // A run may be in the window, the reference and the recent runs alike: indexed once.
    if (!m_launch_indexed.insert(&batch).second) return;
    for (std::size_t i = 0; i < batch.entities.size(); ++i) {
        const Entity& e = batch.entities[i];
        if (e.kind == EntityKind::launch && e.parent >= 0 && static_cast<std::size_t>(e.parent) < batch.entities.size())
            m_launches[&batch.entities[static_cast<std::size_t>(e.parent)]].push_back(&e);
        if (e.kind == EntityKind::kernel) m_kernels[&batch].push_back(&e);
        if (e.kind == EntityKind::run) m_batch_of[&e] = &batch;
    }
}

namespace {

const std::vector<const Entity*>& find_matches(
    const Entity& entity, const std::vector<std::map<std::pair<EntityKind, std::string>, const Entity*>>& indexes,
    std::map<const Entity*, std::vector<const Entity*>>& memo) {
    auto [it, fresh] = memo.try_emplace(&entity);
    if (fresh) {
        const auto key = std::make_pair(entity.kind, entity.kind == EntityKind::run ? std::string() : entity.name);
        for (const auto& index : indexes) {
            auto found = index.find(key);
            it->second.push_back(found == index.end() ? nullptr : found->second);
        }
    }
    return it->second;
}

}  // namespace

const std::vector<const Entity*>& RunHistory::matches(const Entity& entity) const {
    return find_matches(entity, m_index, m_matches);
}

std::vector<double> RunHistory::samples_of(const Entity& entity, std::string_view metric) const {
    if (!uses_duration_samples(metric)) return {};
    if (auto it = entity.samples.find("duration"); it != entity.samples.end()) return it->second;
    std::vector<double> out;
    if (auto it = m_launches.find(&entity); it != m_launches.end())
        for (const Entity* l : it->second)
            if (auto v = l->value("duration")) out.push_back(*v);
    return evenly_spaced(out);
}

std::optional<double> RunHistory::robust_run_time(const Entity& run) const {
    auto batch = m_batch_of.find(&run);
    if (batch == m_batch_of.end()) return std::nullopt;
    auto kernels = m_kernels.find(batch->second);
    if (kernels == m_kernels.end() || kernels->second.empty()) return std::nullopt;
    double total = 0;
    for (const Entity* k : kernels->second) {
        const std::vector<double> s = samples_of(*k, "duration");
        const auto launches = k->value("launches");
        if (s.size() >= 3 && launches) {
            total += *launches * median(s);
        } else if (auto t = k->value("duration_total")) {
            total += *t;
        } else {
            return std::nullopt;
        }
    }
    return total;
}

std::optional<double> RunHistory::level(const Entity& entity, std::string_view metric) const {
    // Read by every comparison, the spread floor and the common factors: each computed once.
    auto key = std::make_pair(&entity, std::string(metric));
    if (auto it = m_levels.find(key); it != m_levels.end()) return it->second;
    std::optional<double> out;
    if (entity.kind == EntityKind::run && metric == "gpu_time") out = robust_run_time(entity);
    if (!out) {
        const std::vector<double> s = samples_of(entity, metric);
        out = s.size() >= 3 ? std::optional<double>(median(s)) : entity.value(metric);
    }
    m_levels.emplace(std::move(key), out);
    return out;
}

std::optional<Comparison> RunHistory::compare_with(const Entity& entity, std::string_view metric,
                                                   const std::vector<const Entity*>& baseline, double min_cv) const {
    const auto current = level(entity, metric);
    if (!current) return std::nullopt;
    // Each run is seen through its level: the median per launch where launches were sampled (one
    // slow launch, a warm-up or a spike, moves a mean, not a median), launches x median per
    // kernel for a run's GPU time. The rank test adds the pooled per-launch samples.
    const std::vector<double> current_samples = samples_of(entity, metric);
    std::vector<double> levels, pooled;
    for (const Entity* e : baseline) {
        if (e == nullptr) continue;
        const auto v = level(*e, metric);
        if (!v) continue;
        levels.push_back(*v);
        const std::vector<double> s = samples_of(*e, metric);
        pooled.insert(pooled.end(), s.begin(), s.end());
    }
    if (levels.empty()) return std::nullopt;
    std::optional<Comparison> result;
    if (!m_baseline.given && levels.size() < k_min_history_runs)
        result = compare_to_baseline(*current, {}, levels, {}, 0.005, k_min_history_runs);  // too little history: no test
    else
        result = compare_to_baseline(*current, current_samples, levels, pooled, min_cv);
    // Value, baseline and change in one estimator: the change is the ratio of the two levels.
    result->current = *current;
    const double scale = std::fabs(result->baseline);
    result->change_pct = scale > 0 ? 100.0 * (*current - result->baseline) / scale : 0.0;
    return result;
}

RunHistory::TypicalSpread RunHistory::typical_spread(std::string_view metric, bool reference, bool own) const {
    auto& memo = own ? (reference ? m_typical_own_reference : m_typical_own_window)
                     : (reference ? m_typical_reference : m_typical_window);
    if (auto it = memo.find(metric); it != memo.end()) return it->second;
    // The run-to-run spread of each kernel relative to its level, over the baseline runs (`own`:
    // with each run's common factor taken out): kernels share the
    // noise's sources, so their median sees it better than one kernel's few runs do.
    const Part part = reference ? Part::reference : Part::window;
    const CommonFactors* f = own ? &common_factors(metric, part) : nullptr;
    std::vector<double> relative;
    double runs = 0;
    for (const Entity& e : m_current.entities) {
        if (e.kind != EntityKind::kernel) continue;
        const auto& m = part_matches(e, part);
        std::vector<double> levels;
        for (std::size_t i = 0; i < m.size(); ++i)
            if (const auto v = f ? own_level(m[i], i, metric, *f) : (m[i] ? level(*m[i], metric) : std::nullopt))
                levels.push_back(*v);
        if (levels.size() < k_min_history_runs) continue;
        const double mid = median(levels);
        if (!(mid > 0)) continue;
        // The MAD of a few values runs low: Croux and Rousseeuw's small-sample factor n / (n - 0.8).
        const double n = static_cast<double>(levels.size());
        relative.push_back(mad_sigma(levels) / mid * n / (n - 0.8));
        runs += static_cast<double>(levels.size() - 1);
    }
    // Its degrees of freedom: the kernels' together, at the MAD's 37% efficiency, and the median of
    // three or more kernels' spreads at the median's 2/pi of the mean's (normal values).
    TypicalSpread out;
    if (!relative.empty())
        out = {median(relative), k_mad_efficiency * runs * (relative.size() >= 3 ? k_median_efficiency : 1.0)};
    memo.emplace(std::string(metric), out);
    return out;
}

const std::vector<const Entity*>& RunHistory::part_matches(const Entity& entity, Part part) const {
    switch (part) {
        case Part::reference: return find_matches(entity, m_reference_index, m_reference_matches);
        case Part::recent: return find_matches(entity, m_recent_index, m_recent_matches);
        case Part::window: break;
    }
    return matches(entity);
}

const RunHistory::CommonFactors& RunHistory::common_factors(std::string_view metric, Part part) const {
    auto key = std::make_pair(part, std::string(metric));
    if (auto it = m_common.find(key); it != m_common.end()) return it->second;
    // Each run's common factor: the median over the current run's kernels of its level against
    // the kernel's median level over the runs. It is what moved every kernel of a run together.
    const std::size_t n = part == Part::reference ? m_baseline.reference.size()
                          : part == Part::recent  ? m_baseline.recent.size()
                                                  : m_baseline.runs.size();
    std::vector<std::vector<double>> ratios(n);
    std::vector<double> current_ratios;
    std::size_t kernels = 0;
    for (const Entity& e : m_current.entities) {
        if (e.kind != EntityKind::kernel) continue;
        const auto& m = part_matches(e, part);
        std::vector<std::optional<double>> levels;
        std::vector<double> present;
        for (const Entity* b : m) {
            levels.push_back(b == nullptr ? std::nullopt : level(*b, metric));
            if (levels.back()) present.push_back(*levels.back());
        }
        const auto now = level(e, metric);
        if (present.size() < k_min_history_runs || !now) continue;
        const double ref = median(present);
        if (!(ref > 0)) continue;
        ++kernels;
        for (std::size_t i = 0; i < levels.size() && i < n; ++i)
            if (levels[i]) ratios[i].push_back(*levels[i] / ref);
        current_ratios.push_back(*now / ref);
    }
    CommonFactors out;
    if (kernels >= 3) {
        out.per_run.resize(n);
        for (std::size_t i = 0; i < n; ++i)
            if (!ratios[i].empty()) out.per_run[i] = median(ratios[i]);
        out.current = median(current_ratios);
    }
    return m_common.emplace(std::move(key), std::move(out)).first->second;
}

namespace {

// The metric whose common factor divides `entity`'s `metric`: a kernel's own, the kernels'
// duration for a run's GPU time; nullopt for anything else.
std::optional<std::string_view> factor_metric(const Entity& entity, std::string_view metric) {
    if (entity.kind == EntityKind::kernel) return metric;
    if (entity.kind == EntityKind::run && metric == "gpu_time") return "duration";
    return std::nullopt;
}

// Run i's common factor, where there is a positive one.
std::optional<double> factor_at(const std::vector<std::optional<double>>& per_run, std::size_t i) {
    if (i >= per_run.size() || !per_run[i] || !(*per_run[i] > 0)) return std::nullopt;
    return per_run[i];
}

}  // namespace

std::optional<double> RunHistory::own_level(const Entity* e, std::size_t i, std::string_view metric,
                                            const CommonFactors& f) const {
    const auto factor = factor_at(f.per_run, i);
    if (e == nullptr || !factor) return std::nullopt;
    const auto v = level(*e, metric);
    if (!v) return std::nullopt;
    return *v / *factor;
}

std::optional<Comparison> RunHistory::own_comparison(const Entity& entity, std::string_view metric,
                                                     bool reference) const {
    const auto by = factor_metric(entity, metric);
    if (!by) return std::nullopt;
    const Part part = reference ? Part::reference : Part::window;
    const CommonFactors& f = common_factors(*by, part);
    if (!f.current || !(*f.current > 0)) return std::nullopt;
    const auto now = level(entity, metric);
    if (!now) return std::nullopt;
    // Every level and sample divided by its run's common factor: what is left is the kernel's own
    // change, without the run-to-run noise all kernels share.
    const auto& m = part_matches(entity, part);
    std::vector<double> levels, pooled;
    for (std::size_t i = 0; i < m.size(); ++i) {
        const auto v = own_level(m[i], i, metric, f);
        if (!v) continue;
        levels.push_back(*v);
        for (double x : samples_of(*m[i], metric)) pooled.push_back(x / *f.per_run[i]);
    }
    if (levels.size() < k_min_history_runs) return std::nullopt;
    // A sum over kernels has no pool of its own: its spread is floored at half the typical kernel's.
    if (entity.kind == EntityKind::run)
        return compare_to_baseline(*now / *f.current, {}, levels, {},
                                   std::max(0.005, 0.5 * typical_spread(*by, reference, true).relative));
    std::vector<double> current_samples = samples_of(entity, metric);
    for (double& x : current_samples) x /= *f.current;
    // The kernels' typical spread is the floor, with the degrees of freedom of all their runs.
    const TypicalSpread typical = typical_spread(metric, reference, true);
    return compare_to_baseline(*now / *f.current, current_samples, levels, pooled, std::max(0.005, typical.relative),
                               k_min_runs_tested, typical.df);
}

std::optional<RunHistory::ModeBaseline> RunHistory::mode_baseline(const Entity& entity, std::string_view metric) const {
    const auto current = level(entity, metric);
    if (!current) return std::nullopt;
    // Levels with each run's common factor taken out where there is one (the machine's noise
    // hides modes a few percent apart); a run's GPU time by its kernels' factor.
    const auto by = factor_metric(entity, metric);
    const CommonFactors* f = by ? &common_factors(*by, Part::recent) : nullptr;
    if (f && !(f->current && *f->current > 0)) f = nullptr;
    std::vector<double> levels;
    std::vector<const Entity*> entities;
    const auto& m = part_matches(entity, Part::recent);
    for (std::size_t i = 0; i < m.size(); ++i)
        if (const auto v = f ? own_level(m[i], i, metric, *f) : (m[i] ? level(*m[i], metric) : std::nullopt)) {
            levels.push_back(*v);
            entities.push_back(m[i]);
        }
    const double now = f ? *current / *f->current : *current;
    auto modes = two_modes(levels);
    if (!modes) return std::nullopt;
    // Modes alternate in time (two switches or more); one switch is a shift, judged as such.
    const double split = (modes->low + modes->high) / 2;
    std::size_t switches = 0;
    for (std::size_t i = 1; i < levels.size(); ++i) switches += (levels[i] > split) != (levels[i - 1] > split) ? 1 : 0;
    if (switches < 2) return std::nullopt;
    ModeBaseline out{*modes, {}};
    const bool high = std::fabs(now - modes->high) < std::fabs(now - modes->low);
    for (std::size_t i = 0; i < levels.size(); ++i)
        if ((levels[i] > split) == high) out.runs.push_back(entities[i]);
    return out;
}

std::optional<Comparison> RunHistory::compare(const Entity& entity, std::string_view metric) const {
    const auto key = std::make_pair(&entity, std::string(metric));
    if (auto it = m_memo.find(key); it != m_memo.end()) return it->second;
    if (is_clock_metric(metric)) {
        auto result = compare_with(entity, metric, find_matches(entity, m_all_index, m_all_matches));
        m_memo.emplace(key, result);
        return result;
    }
    // A series in two modes is judged against the recent runs of the mode nearest to this run: a
    // switch between modes is no regression, a move away from both still is.
    if (const auto modal = mode_baseline(entity, metric)) {
        const double floor = std::max(0.005, entity.kind == EntityKind::kernel ? 0.75 * typical_spread(metric, false).relative : 0.0);
        std::optional<Comparison> result = compare_with(entity, metric, modal->runs, floor);
        if (result) result->modes = modal->modes;
        // A kernel's change must hold against its run's common factor too.
        if (result && entity.kind == EntityKind::kernel && (result->window_test || result->rank_test))
            if (const auto own = own_comparison(entity, metric, false); own && own->window_test) {
                result->confidence_up = std::min(result->confidence_up, own->confidence_up);
                result->confidence_down = std::min(result->confidence_down, own->confidence_down);
            }
        m_memo.emplace(key, result);
        return result;
    }
    // A kernel's spread is floored at three quarters of the typical kernel's, so a kernel whose
    // few baseline runs happen to agree closely does not make every change look certain.
    const bool kernel = entity.kind == EntityKind::kernel;
    // A run's GPU time (a sum over its kernels, which share its machine's noise) at half of it.
    const bool run_time = entity.kind == EntityKind::run && metric == "gpu_time";
    auto floor_of = [&](bool reference) {
        if (kernel) return std::max(0.005, 0.75 * typical_spread(metric, reference).relative);
        if (run_time) return std::max(0.005, 0.5 * typical_spread("duration", reference).relative);
        return 0.005;
    };
    const double floor_near = floor_of(false);
    std::optional<Comparison> result = compare_with(entity, metric, matches(entity), floor_near);
    if (result && (result->window_test || result->rank_test) && m_baseline.reference.size() >= k_min_history_runs) {
        const double floor_far = floor_of(true);
        auto far = compare_with(entity, metric, find_matches(entity, m_reference_index, m_reference_matches), floor_far);
        if (far && (far->window_test || far->rank_test)) {
            const bool up = far->change_pct > 0;
            const double conf_far = up ? far->confidence_up : far->confidence_down;
            const double conf_near = up ? result->confidence_up : result->confidence_down;
            if (std::fabs(far->change_pct) > std::fabs(result->change_pct) && (far->change_pct > 0) == (result->change_pct > 0) &&
                conf_far >= conf_near) {
                far->horizon = true;
                result = far;
            }
        }
    }
    // A kernel, and a run's GPU time, are judged by what moved beyond the run's common factor (one
    // kernel's code, more launches): what moved every kernel together (clocks, another job) is the
    // machine's, and the run says so once (run-uniformly-slower).
    if ((kernel || run_time) && result && (result->window_test || (kernel && result->rank_test)))
        if (const auto own = own_comparison(entity, metric, result->horizon); own && own->window_test) {
            result->confidence_up = own->confidence_up;
            result->confidence_down = own->confidence_down;
            result->detectable_pct = own->detectable_pct;
        }
    m_memo.emplace(key, result);
    return result;
}

std::optional<UniformChange> RunHistory::uniform_change(std::string_view metric) const {
    if (m_baseline.runs.empty()) return std::nullopt;
    if (auto it = m_uniform.find(metric); it != m_uniform.end()) return it->second;
    // Against the recent window only: each kernel's change, and whether it is confident.
    const double floor = std::max(0.005, 0.75 * typical_spread(metric, false).relative);
    std::vector<double> changes;
    std::size_t confident = 0;
    for (const Entity& e : m_current.entities) {
        if (e.kind != EntityKind::kernel) continue;
        const auto c = compare_with(e, metric, matches(e), floor);
        if (!c || !(c->window_test || c->rank_test)) continue;
        changes.push_back(c->change_pct);
        if ((c->change_pct > 0 ? c->confidence_up : c->confidence_down) >= 0.99) ++confident;
    }
    UniformChange u;
    u.kernels = changes.size();
    if (changes.size() >= 3 && confident == changes.size()) {
        const double mid = median(changes);
        // Every kernel moved the same way, confidently, by about the same factor: within a
        // quarter of the common change, or 2 points, of it.
        const double tolerance = std::max(2.0, std::fabs(mid) / 4);
        const bool same = std::all_of(changes.begin(), changes.end(), [&](double c) {
            return std::fabs(c - mid) <= tolerance && (c > 0) == (mid > 0);
        });
        if (same && std::fabs(mid) >= 3) u.change_pct = mid;
    }
    m_uniform.emplace(std::string(metric), u);
    return u;
}

std::optional<std::string> RunHistory::changed_labels() const {
    if (m_all_runs.empty()) return std::nullopt;
    const Labels& before = m_all_runs.back()->batch.labels;
    const Labels& now = m_current.labels;
    std::vector<std::string> parts;
    auto differs = [&](const std::string& k) {
        static const std::set<std::string> k_build = {"commit", "branch", "build", "build_id", "pipeline", "job",
                                                      "job_id", "time", "date", "timestamp"};
        return !k_build.contains(k) && label_value(before, k) != label_value(now, k);
    };
    std::set<std::string> keys;
    for (const auto& [k, v] : before) keys.insert(k);
    for (const auto& [k, v] : now) keys.insert(k);
    for (const std::string& k : keys)
        if (differs(k))
            parts.push_back(fmt::format("{} {} -> {}", k, label_value(before, k).empty() ? "(none)" : label_value(before, k),
                                        label_value(now, k).empty() ? "(none)" : label_value(now, k)));
    if (m_all_runs.back()->batch.tool_version != m_current.tool_version && !m_current.tool_version.empty())
        parts.push_back(fmt::format("tool version {} -> {}", m_all_runs.back()->batch.tool_version,
                                    m_current.tool_version));
    if (parts.empty()) return std::nullopt;
    return fmt::format("{}", fmt::join(parts, ", "));
}

std::vector<std::optional<double>> RunHistory::baseline_levels(const Entity& entity, std::string_view metric) const {
    std::vector<std::optional<double>> out;
    for (const Entity* e : matches(entity)) out.push_back(e == nullptr ? std::nullopt : level(*e, metric));
    return out;
}

std::optional<double> RunHistory::latest(const Entity& entity, std::string_view metric) const {
    const auto& m = matches(entity);
    for (auto it = m.rbegin(); it != m.rend(); ++it)
        if (*it != nullptr)
            if (auto v = (*it)->value(metric)) return v;
    return std::nullopt;
}

std::optional<bool> RunHistory::is_new(const Entity& entity) const {
    if (m_baseline.runs.empty()) return std::nullopt;
    const auto& m = matches(entity);
    return std::all_of(m.begin(), m.end(), [](const Entity* e) { return e == nullptr; });
}

std::optional<std::vector<std::string>> RunHistory::vanished(EntityKind kind) const {
    if (m_baseline.runs.empty()) return std::nullopt;
    std::set<std::string> present;
    for (const Entity& e : m_current.entities)
        if (e.kind == kind) present.insert(e.name);
    std::vector<std::string> out;
    for (const Entity& e : m_baseline.runs.back()->batch.entities)
        if (e.kind == kind && !present.contains(e.name)) out.push_back(e.name);
    return out;
}

std::optional<std::int64_t> RunHistory::first_bad_run(const Entity& entity, std::string_view metric,
                                                      std::int64_t current_run) const {
    // An open regression keeps the first bad run decided when it opened.
    if (auto it = m_baseline.open_first_bad.find({entity.kind, entity.kind == EntityKind::run ? std::string() : entity.name,
                                                 std::string(metric)});
        it != m_baseline.open_first_bad.end())
        return it->second;
    const auto current = level(entity, metric);
    if (!current) return std::nullopt;
    std::vector<double> series;
    std::vector<std::int64_t> runs;
    const auto& m = matches(entity);
    for (std::size_t i = 0; i < m.size(); ++i) {
        if (m[i] == nullptr) continue;
        if (auto v = level(*m[i], metric)) {
            series.push_back(*v);
            runs.push_back(m_baseline.runs[i]->id);
        }
    }
    if (series.empty()) return std::nullopt;
    series.push_back(*current);
    runs.push_back(current_run);
    ChangePointOptions o;
    o.min_segment = 2;
    o.min_last = 1;
    o.significance = 0.05;
    const Split s = best_split(series, o);
    if (s.index == 0 || s.p_value > o.significance) return current_run;
    return runs[s.index];
}

std::optional<std::pair<std::int64_t, double>> RunHistory::last_good_run(const Entity& entity, std::string_view metric,
                                                                      std::int64_t current_run) const {
    const auto first = first_bad_run(entity, metric, current_run);
    if (!first) return std::nullopt;
    std::optional<std::pair<std::int64_t, double>> out;
    const auto& m = matches(entity);
    // Baseline runs are oldest first.
    for (std::size_t i = 0; i < m.size(); ++i) {
        const std::int64_t id = m_baseline.runs[i]->id;
        if (id >= *first) break;
        if (m[i] == nullptr) continue;
        if (auto v = level(*m[i], metric)) out = std::make_pair(id, *v);
    }
    return out;
}

std::string RunHistory::commit_of(std::int64_t run_id, const Labels& current_labels) const {
    for (const auto& r : m_baseline.runs)
        if (r->id == run_id) return label_value(r->batch.labels, "commit");
    if (auto it = m_baseline.commits.find(run_id); it != m_baseline.commits.end()) return it->second;
    return label_value(current_labels, "commit");
}

std::string RunHistory::describe_run(std::int64_t run_id, const Labels& current_labels) const {
    const std::string commit = commit_of(run_id, current_labels);
    return commit.empty() ? fmt::format("run {}", run_id) : fmt::format("commit {} (run {})", commit, run_id);
}

std::optional<double> RunHistory::level_at(const Entity& entity, std::string_view metric, std::int64_t run_id,
                                           std::int64_t current_run) const {
    if (run_id == current_run) return level(entity, metric);
    const auto& m = matches(entity);
    for (std::size_t i = 0; i < m.size(); ++i)
        if (m_baseline.runs[i]->id == run_id && m[i] != nullptr) return level(*m[i], metric);
    const std::tuple key{entity.kind, entity.kind == EntityKind::run ? std::string() : entity.name, std::string(metric)};
    if (auto it = m_baseline.open_first_bad.find(key); it != m_baseline.open_first_bad.end() && it->second == run_id)
        if (auto v = m_baseline.open_first_bad_values.find(key); v != m_baseline.open_first_bad_values.end()) return v->second;
    return std::nullopt;
}

}  // namespace perfwatch
