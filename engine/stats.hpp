#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace perfwatch {

// Median of `values`; NaN when empty.
double median(std::vector<double> values);

// Median absolute deviation times 1.4826: a robust estimate of the standard deviation (equal to
// it under normal noise) that one outlier cannot inflate. 0 for fewer than two values.
double mad_sigma(const std::vector<double>& values);

// Mann-Whitney U test of `after` against `before` (normal approximation with tie and continuity
// correction). p_greater: probability of a U at least this large if both came from one
// distribution, i.e. small when `after` tends to be larger.
struct RankTest {
    double u = 0;  // U of `after`: pairs (b, a) with a > b, ties counting one half
    double z = 0;
    double p_greater = 1;
    double p_less = 1;
};
RankTest mann_whitney(const std::vector<double>& before, const std::vector<double>& after);

// Hodges-Lehmann shift: the median of all differences after_j - before_i. Pairs are taken from
// at most `max_side` evenly spaced values of each side (sorted), so the cost stays bounded.
double hodges_lehmann(const std::vector<double>& before, const std::vector<double>& after, std::size_t max_side = 256);

// A series whose values fall in two modes (a GPU that runs either of two clock or placement
// states, say): each mode's median and how many values it holds.
struct Modes {
    double low = 0, high = 0;  // the modes' medians
    std::size_t low_count = 0, high_count = 0;
};

// The two modes of `values` when their widest gap (sorted) leaves at least `min_count` values on
// each side, is at least `min_gap` of the median, and is `separation` times wider than the
// spread inside either side (MAD sigma, floored at 0.5% of the median); nullopt otherwise.
std::optional<Modes> two_modes(std::vector<double> values, std::size_t min_count = 3, double separation = 4,
                               double min_gap = 0.03);

// One metric of one entity compared with its baseline.
struct Comparison {
    double current = 0;
    double baseline = 0;       // median of the baseline runs' values
    double spread = 0;         // run-to-run robust standard deviation of the baseline (0: unknown)
    double change_se_pct = 0;  // standard error of change_pct from the run-to-run test (0: no such test)
    // The smallest change (percent) the run-to-run test calls at k_detectable_confidence: its
    // quantile times the standard error (0: no such test, or under k_detectable_runs runs).
    double detectable_pct = 0;
    double change_pct = 0;     // relative change (Hodges-Lehmann shift when both sides have samples)
    double confidence_up = 0;  // confidence that the metric went up (0-1; 0 when it cannot be told)
    double confidence_down = 0;
    std::size_t baseline_runs = 0;
    std::size_t current_samples = 0;
    std::size_t baseline_samples = 0;
    bool window_test = false;  // the run-to-run test was used (3 or more baseline runs)
    bool rank_test = false;    // the Mann-Whitney test on per-instance samples was used
    bool horizon = false;      // against the long-horizon reference rather than the recent window
    // The baseline runs fall in two modes: the run was judged against the mode nearest to it.
    std::optional<Modes> modes;
};

// Standard errors of its change by which a change may fall short of a rule's min_change and still
// count (90% one-sided): a true shift of exactly min_change measures below it half the time.
inline constexpr double k_min_change_allowance = 1.2816;

// How the kernels of a run moved together against their baselines.
struct UniformChange {
    std::size_t kernels = 0;  // kernels with a tested comparison
    double change_pct = 0;    // their common change; 0 unless 3 or more moved alike
};

// Baseline runs a run-to-run test needs.
inline constexpr std::size_t k_min_runs_tested = 3;

// The efficiency of the MAD as an estimate of a normal standard deviation: n values' MAD is worth
// about 0.37 n values' standard deviation.
inline constexpr double k_mad_efficiency = 0.37;

// The efficiency of the median of many normal values as an estimate of their centre: 2/pi.
inline constexpr double k_median_efficiency = 0.6366;

// How much larger than a pooled spread a series' own must be to be tested with its own.
inline constexpr double k_clearly_noisier = 1.5;

// The confidence of the shipped timing rules, at which detectable_pct is stated, from this many
// baseline runs on.
inline constexpr double k_detectable_confidence = 0.9999;
inline constexpr std::size_t k_detectable_runs = 10;

// Compares `current` (the run's value, with its per-instance samples, possibly none) with the
// values of the baseline runs (oldest first) and their pooled samples. With `min_runs` or more
// baseline runs the value is tested against the run-to-run spread (median and MAD, Student t
// prediction interval); with samples on both sides a Mann-Whitney test is applied too, and the
// confidence is the lower of the two. The spread is floored at `min_cv` of the median, so
// identical baseline values do not make any change certain.
// Where the floor is a pooled estimate of the same spread (over many series of like noise),
// `floor_df` > 0 gives its degrees of freedom: it is the spread tested with unless this series'
// own is k_clearly_noisier times larger.
Comparison compare_to_baseline(double current, const std::vector<double>& current_samples,
                               const std::vector<double>& baseline_values, const std::vector<double>& baseline_samples,
                               double min_cv = 0.005, std::size_t min_runs = k_min_runs_tested, double floor_df = 0);

// The band a value is judged normal in, from the runs before it.
struct Band {
    double median = 0;
    double low = 0;
    double high = 0;
};

// For each value of `series` (oldest first), the band of the `window` usable values before it (all
// when `usable` is empty; a regression's bad runs are not a baseline): their median +- `k` robust
// standard deviations (MAD), the deviation floored at `min_cv` of the median; nullopt until
// `min_runs` usable values precede it.
std::vector<std::optional<Band>> rolling_band(const std::vector<double>& series, const std::vector<bool>& usable = {},
                                              std::size_t window = 10, double k = 3, double min_cv = 0.005,
                                              std::size_t min_runs = 3);

struct ChangePointOptions {
    std::size_t min_segment = 2;  // shortest segment a split may leave (the last may be shorter, see below)
    std::size_t min_last = 2;     // shortest last segment (1 lets the newest value alone start a shift)
    double alpha = 1.0;           // distance exponent of the energy statistic, in (0, 2)
    int permutations = 199;
    double significance = 0.01;
    std::uint64_t seed = 0x5eed;  // fixed: the same series always gives the same answer
};

// E-Divisive means (Matteson & James 2014): recursive binary segmentation by the energy
// statistic, each split accepted when a permutation test finds it significant. Returns the
// indices where a new segment starts, ascending.
std::vector<std::size_t> change_points(const std::vector<double>& series, const ChangePointOptions& options = {});

// The best single split of `series` by the energy statistic and its permutation p-value.
struct Split {
    std::size_t index = 0;  // first index of the second segment; 0 when none fits
    double statistic = 0;
    double p_value = 1;
};
Split best_split(const std::vector<double>& series, const ChangePointOptions& options = {});

}  // namespace perfwatch
