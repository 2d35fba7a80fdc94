#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/pipeline.hpp"
#include "engine/rules.hpp"

namespace perfwatch::bench {

// A generated benchmark history: 8 kernels (the largest is `k_shifted_kernel`) of `launches`
// launches each per run, per-launch log-normal noise of coefficient of variation `cv`, a run-level
// factor (clocks, temperature) of CV cv/4, and 2% of launches 2-4x slower (warm-up, preemption).
struct SeriesSpec {
    enum class Change {
        none,     // stable throughout
        shift,    // the largest kernel x (1 + size) from run `at` on
        ramp,     // the largest kernel x (1 + size * (r - at + 1)) from run `at` on
        uniform,  // run `at` alone: every kernel x (1 + size) (a throttled GPU)
        revert,   // the largest kernel x (1 + size) for `revert_after` runs from `at`, then back
        bimodal,  // the largest kernel x (1 + size) in about half the runs, chosen at random per run
                  // (an autotuner picking either of two algorithms): nothing changes
        clock,    // from run `at` on the SM clock (the run's sm_frequency) is 1 / (1 + size) of its
                  // 1.98 GHz and every kernel x (1 + size): a throttled or re-clocked GPU, not the code
    };
    Change change = Change::none;
    double cv = 0.05;
    double size = 0.10;
    int runs = 30;
    int at = 20;  // 0-based run index of the change
    int revert_after = 4;
    int launches = 60;
    std::uint64_t seed = 1;
};

// A series changed by `change` of `size`, from run `at` on, `runs` runs long; the rest as the
// defaults.
inline SeriesSpec series_of(SeriesSpec::Change change, double size, int at = SeriesSpec{}.at,
                            int runs = SeriesSpec{}.runs) {
    SeriesSpec spec;
    spec.change = change;
    spec.size = size;
    spec.at = at;
    spec.runs = runs;
    return spec;
}

inline constexpr const char* k_shifted_kernel = "gemm_main";

// What the pipeline made of one run of a series.
struct RunRecord {
    int index = 0;
    std::int64_t run_id = 0;
    std::vector<RegressionEvent> events;
    std::vector<Finding> findings;
    std::vector<double> levels;  // each kernel's median per launch, in k_kernels order (the shifted one first)
};

// The shipped history rules (rules/regression.yaml: every regression rule, run-level ones
// included, and the whole-run environment finding).
RuleSet history_rules();

// Stores and processes every run of the series through the real pipeline on an in-memory SQLite.
std::vector<RunRecord> run_series(const RuleSet& rules, const SeriesSpec& spec);

// What a user would call an alert: a regression opened, or the whole-run environment finding.
bool is_alert(const RunRecord& run);

// Tallies over many series of one spec.
struct Tally {
    int series = 0;
    int detected = 0;         // shift: opened on the shifted kernel within 3 runs; ramp: by its 10th run
    int first_bad_exact = 0;  // of the detected: the first bad run named is the change's run
    int still_open = 0;       // shift: 6 runs after the change, the rule still fires naming the change's run
    int false_alerts = 0;     // alerts where nothing changed (before the change, or in a stable series)
    int comparisons = 0;      // runs judged where nothing had changed (k_min_history_runs baseline runs on)
    int improvement_alerts = 0;  // improving series (size < 0): alerts from the change on, on the improved kernel or the run
    int uniform_single = 0;   // uniform: exactly one whole-run finding and no regression at the change
    int per_kernel_alerts = 0;   // uniform: regressions opened at the change (should be none)
    int resolved = 0;         // revert: every regression opened was resolved by the end
    int noisy_told = 0;       // runs judged where nothing had changed told a kernel is too noisy to judge at 5%
    int bimodal_told = 0;     // bimodal: runs judged told their series has two modes
    int bimodal_shown_runs = 0;    // bimodal: runs judged after both modes showed (3 runs each, two switches)
    int bimodal_shown_alerts = 0;  // of those: runs with an alert
    int run_detected = 0;     // shift: run-gpu-time-regression opened within 3 runs of the change
    int run_on_time = 0;      // of those: opened at the change's run
    int run_first_bad_exact = 0;  // of those: naming the change's run as the first bad one
    int clock_told = 0;       // clock: run-clock-changed said so at the change's run
    int clock_regressions = 0;    // clock: regressions opened from the change on (should be none)
    // The same series through the comparators (bench/comparators.hpp), counted as above.
    int t_detected = 0;       // the median t-test alerted on the shifted kernel within 3 runs
    int t_false_alerts = 0;   // runs where nothing had changed and it alerted on any kernel
    int ph_detected = 0;      // Perfherder alerted on the shifted kernel naming the change's run (+-1)
    int ph_delay = 0;         // summed over those: runs from the change to the alert
    int ph_false_alerts = 0;  // runs where nothing had changed and it alerted on any kernel
};
void tally(const SeriesSpec& spec, const std::vector<RunRecord>& runs, Tally& into);

}  // namespace perfwatch::bench
