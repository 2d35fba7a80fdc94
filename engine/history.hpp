#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <unordered_map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "engine/stats.hpp"
#include "storage/db.hpp"
#include "core/model.hpp"

namespace perfwatch {

using Labels = std::map<std::string, std::string>;

// Labels naming one build rather than its configuration; comparable runs may differ in them.
bool is_identity_label(std::string_view key);

// How a rule chooses the runs it compares against.
struct BaselineSpec {
    std::string branch = "main";     // runs without a branch label count as on this branch
    std::size_t runs = 10;           // the last N comparable runs
    std::vector<std::string> match;  // labels that must match; empty: every non-identity label
    auto operator<=>(const BaselineSpec&) const = default;
};

// The run's GPU model: its `gpu` label (from --label, a sidecar or the report); "" when unknown.
std::string gpu_of(const Labels& labels);

// Runs may be compared when they measured the same benchmark on the same GPU model (both unknown
// counts as the same) and their configuration labels match: the labels of `match`, or every non-identity label.
bool comparable(const Labels& a, const Labels& b, const std::vector<std::string>& match);

// The key of the series a run belongs to for `spec`: its benchmark, configuration labels, GPU and branch.
std::string series_key(const Labels& labels, const BaselineSpec& spec);

// The runs one run is compared with, oldest first.
struct Baseline {
    std::vector<std::shared_ptr<const StoredRun>> runs;  // oldest first
    // The first bad run of each open regression of the series, by entity kind, name and metric
    // (decided when it opened, and kept), with the commit of that run where it has one.
    std::map<std::tuple<EntityKind, std::string, std::string>, std::int64_t> open_first_bad;
    std::map<std::int64_t, std::string> commits;
    // The stored value of each open regression's metric at its first bad run (not a baseline run).
    std::map<std::tuple<EntityKind, std::string, std::string>, double> open_first_bad_values;
    // The long-horizon reference: the comparable runs just before `runs` (oldest first), so a
    // slow drift the window follows is still seen. Empty unless the window is full and at least
    // k_min_history_runs runs precede it.
    std::vector<std::shared_ptr<const StoredRun>> reference;
    // The last 2 x `runs` comparable runs on the branch, oldest first, regressions or not: where a
    // series' modes are seen (a regression's runs are cut from the window, a mode's must not be).
    std::vector<std::shared_ptr<const StoredRun>> recent;
    bool given = false;  // chosen by the user (check --baseline), not from history
    std::string description;  // "last 10 comparable runs on main", "pinned run 7 ...", "run 3 (given)"
};

// Runs read from the database, kept for the baselines of the runs that follow (a stored run never
// changes). Bounded by an estimate of their size in memory, least recently used out first.
// Not thread-safe: one per database writer.
class RunCache {
public:
    explicit RunCache(std::size_t max_bytes = std::size_t{64} << 20) : m_max_bytes(max_bytes) {}
    // The run `id`, from memory or the database; nullptr when there is no such run.
    Result<std::shared_ptr<const StoredRun>> get(const Db& db, std::int64_t id);
    // The runs `ids` in their order (nullptr where there is no such run); those not in memory
    // read from the database in one batch.
    Result<std::vector<std::shared_ptr<const StoredRun>>> get_many(const Db& db, const std::vector<std::int64_t>& ids);
    std::size_t bytes() const { return m_bytes; }
    // Forgets every run (after retention pruned some, or their samples).
    void clear() {
        m_slots.clear();
        m_ages.clear();
        m_bytes = 0;
    }

private:
    struct Slot {
        std::shared_ptr<const StoredRun> run;
        std::size_t bytes = 0;
        std::list<std::int64_t>::iterator age;
    };
    std::size_t m_max_bytes;
    std::size_t m_bytes = 0;
    std::list<std::int64_t> m_ages;  // most recently used first
    std::unordered_map<std::int64_t, Slot> m_slots;
};

// Runs in the long-horizon reference of a baseline.
inline constexpr std::size_t k_reference_runs = 10;

// Chooses the baseline of `current` for `spec`: a pinned comparable run (the newest pin stored
// before it) with the comparable runs of its branch before it, else the last `spec.runs`
// comparable runs on the baseline branch stored before `current` that the series' regressions
// admit (none from an open regression's first bad run on, none between a resolved one's first
// and last bad runs, none before an accepted one's first bad run), with the k_reference_runs
// admitted runs before them as the reference.
// Runs are read through `cache` when given.
Result<Baseline> select_baseline(const Db& db, const StoredRun& current, const BaselineSpec& spec,
                                 RunCache* cache = nullptr);

// The comparable runs of `current`'s series stored before it (any level, regressions or not),
// oldest first, at most `limit`: what a trend chart shows.
Result<std::vector<std::shared_ptr<const StoredRun>>> series_runs(const Db& db, const StoredRun& current,
                                                                  const BaselineSpec& spec, std::size_t limit);

// An explicit baseline (check --baseline): refused when it ran on another GPU model.
Result<Baseline> explicit_baseline(const Db& db, const StoredRun& current, std::int64_t baseline_run);

// Baseline runs a history needs before timings are judged: fewer give no run-to-run spread worth
// trusting, and per-launch samples alone ignore run-to-run noise. A given baseline needs one.
inline constexpr std::size_t k_min_history_runs = 5;

// The baseline as seen from the entities of one current run. Entities match by kind and name
// (the run entity by kind). Baseline runs measured at another clock setting than the current run
// (another `clocks` label, or SM clocks more than k_clock_tolerance apart) are left out of every
// comparison but the clocks' own. Results are memoized per entity and metric.
class RunHistory {
public:
    RunHistory(Baseline baseline, const RunBatch& current);

    const Baseline& baseline() const { return m_baseline; }
    // Comparison of `metric` of `entity` (a current-run entity) with the baseline; nullopt when
    // the entity or metric is missing on either side. Value, baseline and change are levels. It is
    // the comparison with the recent window, or with the long-horizon reference where that sees a
    // larger change at least as confidently (a drift the window follows).
    std::optional<Comparison> compare(const Entity& entity, std::string_view metric) const;
    // The level of `metric` on an entity as comparisons see it: the median of its per-launch
    // samples where it has them; for a run's gpu_time, launches x median launch time summed over
    // its kernels (outlier launches move neither); else its value.
    std::optional<double> level(const Entity& entity, std::string_view metric) const;
    // The recent runs' entities in the mode nearest to `entity`'s level, when the series' recent
    // levels fall in two alternating modes (stats' two_modes, two switches or more).
    struct ModeBaseline {
        Modes modes;
        std::vector<const Entity*> runs;
    };
    std::optional<ModeBaseline> mode_baseline(const Entity& entity, std::string_view metric) const;
    // The common change of the current run's kernels in `metric` (a whole run slower: the
    // machine, not the code).
    std::optional<UniformChange> uniform_change(std::string_view metric) const;
    // Labels (other than those naming the build) and tool version that differ from the newest
    // baseline run: "driver 550 -> 560"; nullopt when none or no baseline.
    std::optional<std::string> changed_labels() const;
    // The level of `metric` of the entity matching `entity` in each baseline run, oldest first
    // (nullopt where a run lacks it).
    std::vector<std::optional<double>> baseline_levels(const Entity& entity, std::string_view metric) const;
    // The metric's value in the newest baseline run that has the entity.
    std::optional<double> latest(const Entity& entity, std::string_view metric) const;
    // True when no baseline run has the entity (nullopt: no baseline at all).
    std::optional<bool> is_new(const Entity& entity) const;
    // Entities of `kind` in the newest baseline run that the current run lacks.
    std::optional<std::vector<std::string>> vanished(EntityKind kind) const;
    // The first run of the shift in `metric`: E-Divisive over the baseline values and the current
    // one finds where the last segment starts; the current run when no earlier start is significant.
    std::optional<std::int64_t> first_bad_run(const Entity& entity, std::string_view metric,
                                              std::int64_t current_run) const;
    // The newest baseline run before the first bad run that holds the metric, with its level:
    // the last good end of a bisection. nullopt without one.
    std::optional<std::pair<std::int64_t, double>> last_good_run(const Entity& entity, std::string_view metric,
                                                                 std::int64_t current_run) const;
    // "commit abc1234 (run 7)" or "run 7".
    std::string describe_run(std::int64_t run_id, const Labels& current_labels) const;
    // The commit label of a baseline run, of an open regression's first bad run, or else of the
    // current run; "" when unlabelled.
    std::string commit_of(std::int64_t run_id, const Labels& current_labels) const;
    // The level of `metric` on the entity in run `run_id` (a baseline run, or the current one as
    // `current_run`); nullopt where history does not hold it.
    std::optional<double> level_at(const Entity& entity, std::string_view metric, std::int64_t run_id,
                                   std::int64_t current_run) const;

private:
    // Baseline entities matching `entity`, one per baseline run (nullptr where absent).
    const std::vector<const Entity*>& matches(const Entity& entity) const;
    // `min_cv`: the floor of the run-to-run spread, relative to the baseline.
    std::optional<Comparison> compare_with(const Entity& entity, std::string_view metric,
                                           const std::vector<const Entity*>& baseline, double min_cv = 0.005) const;
    std::optional<double> robust_run_time(const Entity& run) const;
    // The median over the current run's kernels of their run-to-run spread relative to their level,
    // over the window (or the reference) runs (`own`: with each run's common factor taken out);
    // 0 when no kernel has enough runs.
    struct TypicalSpread {
        double relative = 0;  // relative to the level
        double df = 0;        // degrees of freedom of the estimate
    };
    TypicalSpread typical_spread(std::string_view metric, bool reference, bool own = false) const;
    // Per baseline (or reference) run and for the current run, the factor that moved all the
    // current run's kernels together; empty with fewer than 3 kernels to tell.
    struct CommonFactors {
        std::vector<std::optional<double>> per_run;
        std::optional<double> current;
    };
    // The runs of a baseline part: the window, the long-horizon reference, the recent runs.
    enum class Part { window, reference, recent };
    const std::vector<const Entity*>& part_matches(const Entity& entity, Part part) const;
    const CommonFactors& common_factors(std::string_view metric, Part part) const;
    // `entity`'s comparison with every level and sample divided by its run's common factor (its
    // own change); nullopt when that cannot be told.
    std::optional<Comparison> own_comparison(const Entity& entity, std::string_view metric, bool reference) const;
    // The level of `metric` on `e`, the entity of run `i` of a part, over that run's factor in `f`;
    // nullopt where either is missing.
    std::optional<double> own_level(const Entity* e, std::size_t i, std::string_view metric, const CommonFactors& f) const;
    // Per-instance values behind `metric` of `entity`: its stored samples, else its launches' values.
    std::vector<double> samples_of(const Entity& entity, std::string_view metric) const;
    void index_launches(const RunBatch& batch);

    Baseline m_baseline;
    const RunBatch& m_current;
    using Index = std::map<std::pair<EntityKind, std::string>, const Entity*>;
    std::vector<Index> m_index;            // per baseline run
    std::vector<Index> m_reference_index;  // per reference run
    std::vector<Index> m_recent_index;     // per recent run
    std::vector<std::shared_ptr<const StoredRun>> m_all_runs;  // the window before runs at another clock left
    std::vector<Index> m_all_index;        // per run of m_all_runs
    std::set<const RunBatch*> m_launch_indexed;  // runs whose launches index_launches has seen
    std::map<const Entity*, std::vector<const Entity*>> m_launches;  // kernel -> its launches
    std::map<const RunBatch*, std::vector<const Entity*>> m_kernels;  // every batch's kernels
    std::map<const Entity*, const RunBatch*> m_batch_of;              // run entity -> its batch
    mutable std::map<const Entity*, std::vector<const Entity*>> m_matches, m_reference_matches, m_recent_matches,
        m_all_matches;
    mutable std::map<std::pair<const Entity*, std::string>, std::optional<Comparison>> m_memo;
    mutable std::map<std::string, UniformChange, std::less<>> m_uniform;
    mutable std::map<std::string, TypicalSpread, std::less<>> m_typical_window, m_typical_reference, m_typical_own_window,
        m_typical_own_reference;
    mutable std::map<std::pair<const Entity*, std::string>, std::optional<double>> m_levels;
    mutable std::map<std::pair<Part, std::string>, CommonFactors> m_common;
};

// Metrics that say at what clock a run was measured (sm_frequency, dram_frequency): compared with
// every baseline run, while timings are compared only with runs at the same clock.
bool is_clock_metric(std::string_view metric);

// SM clocks within this fraction of each other count as the same clock setting.
inline constexpr double k_clock_tolerance = 0.03;

// True for metrics where per-instance durations stand behind the value (duration, its mean and median).
bool uses_duration_samples(std::string_view metric);

}  // namespace perfwatch
