#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

// N runs against M runs: two branches, two commit ranges, before and after a date.
namespace perfwatch {

// One entity's (or the run's) values of one metric on each side, a value per run.
struct RangeSamples {
    std::string name;  // the kernel, or "" for the run
    std::vector<double> a;
    std::vector<double> b;
};

// What the comparison of one entity's two sides came to.
struct RangeComparison {
    enum class Verdict { slower, faster, unchanged, too_few_runs, only_in_a, only_in_b };
    std::string name;
    Verdict verdict = Verdict::unchanged;
    std::size_t runs_a = 0, runs_b = 0;
    double median_a = 0, median_b = 0;
    double change_pct = 0;                 // Hodges-Lehmann shift of b against a, in % of a's median
    std::optional<double> confidence;      // that the sides differ (two-sided Mann-Whitney), 0-1
    std::optional<double> noise_pct;       // run-to-run spread: robust sigma of the pooled sides, % of a's median
    std::optional<double> detectable_pct;  // the smallest shift these runs could tell at `confidence_needed`
};

struct RangeCompareOptions {
    double confidence_needed = 0.99;
    double min_change_pct = 1.0;     // smaller shifts are unchanged whatever their confidence
    std::size_t min_runs_per_side = 3;
};

std::string_view to_string(RangeComparison::Verdict verdict);

// The same noise-aware judgement the engine makes of a run against its baseline runs, made of
// two sets of runs: a Mann-Whitney rank test of the per-run values (two-sided) for confidence,
// the Hodges-Lehmann shift for the change, the pooled robust spread (MAD of each side around its
// median) for the noise and for the smallest detectable change (normal approximation, the rank
// test's efficiency 3/pi). Slower or faster needs `confidence_needed` and `min_change_pct`; with
// fewer than `min_runs_per_side` runs on a side the verdict is too_few_runs (one run against one
// run cannot tell noise from change).
RangeComparison compare_ranges(const RangeSamples& samples, const RangeCompareOptions& options = {});

}  // namespace perfwatch
