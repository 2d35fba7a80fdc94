#include <gtest/gtest.h>

#include <fmt/format.h>

#include "bench/regression_scenarios.hpp"
#include "engine/history.hpp"

namespace perfwatch::test {

namespace {

using bench::series_of;
using bench::SeriesSpec;
using bench::Tally;

// The run of the change: a baseline of 12 runs (shorter series than bench_regression's 20, to keep
// the suite quick under the sanitizers).
constexpr int k_at = 12;

// Runs `series` generated series of `spec` (seeds from `seed`) through the real pipeline; the
// alerts raised before any change are printed, to say what a failure was.
Tally run(SeriesSpec spec, int series, std::uint64_t seed) {
    static const RuleSet rules = bench::history_rules();
    Tally t;
    for (int i = 0; i < series; ++i) {
        spec.seed = seed + static_cast<std::uint64_t>(i);
        const auto runs = bench::run_series(rules, spec);
        bench::tally(spec, runs, t);
        for (const bench::RunRecord& r : runs)
            if (bench::is_alert(r) && (spec.change == SeriesSpec::Change::none ||
                                       spec.change == SeriesSpec::Change::bimodal || r.index < spec.at))
                for (const Finding& f : r.findings)
                    fmt::print("seed {} run {}: {}: {}\n", spec.seed, r.index, f.rule, f.message);
    }
    return t;
}

}  // namespace

// The generated histories of bench/bench_regression (8 kernels, 5% per-launch noise, run-level
// noise, 2% outlier launches), a few series per kind of change, judged by every shipped history
// rule through the real pipeline. bench/run measures the rates over many more series.
TEST(RegressionScenarios, StableSeriesRaiseNoAlert) {
    SeriesSpec stable;
    stable.runs = 25;
    const Tally t = run(stable, 4, 101);
    EXPECT_EQ(t.comparisons, 4 * (25 - static_cast<int>(k_min_history_runs)));
    // bench/bench_regression measures the rate (under 1 per 1,000 runs at this noise); a few
    // series can show at most one.
    EXPECT_LE(t.false_alerts, 1);
}

TEST(RegressionScenarios, ATenPercentShiftIsFoundWithinThreeRunsAndStaysOpenAtItsFirstBadRun) {
    SeriesSpec shift = series_of(SeriesSpec::Change::shift, 0.10, k_at, k_at + 7);
    const Tally t = run(shift, 4, 201);
    EXPECT_EQ(t.detected, 4);
    EXPECT_EQ(t.first_bad_exact, 4);
    EXPECT_EQ(t.still_open, 4) << "6 runs after the shift the rule still fires, naming the first bad run";
    EXPECT_EQ(t.false_alerts, 0);
}

TEST(RegressionScenarios, AUniformlySlowerRunIsOneWholeRunFinding) {
    SeriesSpec uniform = series_of(SeriesSpec::Change::uniform, 0.15, k_at, k_at + 1);
    const Tally t = run(uniform, 4, 301);
    EXPECT_EQ(t.uniform_single, 4);
    EXPECT_EQ(t.per_kernel_alerts, 0);
}

TEST(RegressionScenarios, ARampOfOnePercentPerRunIsCaughtByItsTenthRun) {
    SeriesSpec ramp = series_of(SeriesSpec::Change::ramp, 0.01, k_at, k_at + 10);
    const Tally t = run(ramp, 3, 401);
    EXPECT_EQ(t.detected, 3);
}

TEST(RegressionScenarios, AnImprovementRaisesNothingAndARevertedShiftResolves) {
    SeriesSpec better = series_of(SeriesSpec::Change::shift, -0.15, k_at, k_at + 4);
    EXPECT_EQ(run(better, 3, 501).improvement_alerts, 0);
    SeriesSpec revert = series_of(SeriesSpec::Change::revert, 0.15, k_at);
    revert.runs = k_at + revert.revert_after + 6;  // resolve_after is 3
    EXPECT_EQ(run(revert, 3, 601).resolved, 3);
}

TEST(RegressionScenarios, AFivePercentShiftAtLowNoiseIsFoundWithinThreeRuns) {
    SeriesSpec shift = series_of(SeriesSpec::Change::shift, 0.05, k_at, k_at + 3);
    shift.cv = 0.02;
    const Tally t = run(shift, 3, 701);
    EXPECT_EQ(t.detected, 3) << "5% is 10 per-run standard errors once the run's common factor is out";
    EXPECT_EQ(t.false_alerts, 0);
}

TEST(RegressionScenarios, ARunLevelRegressionOpensAtItsFirstBadRunAndNamesIt) {
    SeriesSpec shift = series_of(SeriesSpec::Change::shift, 0.20, k_at, k_at + 3);
    const Tally t = run(shift, 3, 801);
    EXPECT_EQ(t.run_detected, 3);
    EXPECT_EQ(t.run_on_time, 3);
    EXPECT_EQ(t.run_first_bad_exact, 3);
}

TEST(RegressionScenarios, AClockChangeIsSaidAndOpensNoRegression) {
    SeriesSpec clock = series_of(SeriesSpec::Change::clock, 1.98 / 1.755 - 1, k_at, k_at + 3);
    const Tally t = run(clock, 3, 901);
    EXPECT_EQ(t.clock_told, 3);
    // Without the clock split every series opens one (bench_regression: 20 in 20); a false alert of
    // the base rate may remain.
    EXPECT_LE(t.clock_regressions, 1) << "timings are compared only with runs at the same clock";
}

// Until a series has shown both modes (3 runs each, two switches), a switch is a shift like any
// other (the first switches may alert: bench_regression measures their rate); from then on every
// switch is judged against its own mode and none is called a regression.
TEST(RegressionScenarios, ASeriesAlternatingBetweenTwoModesIsToldSoOnceItHasShownThem) {
    SeriesSpec bimodal;
    bimodal.change = SeriesSpec::Change::bimodal;
    bimodal.at = 0;
    bimodal.size = 0.13;
    bimodal.cv = 0.02;
    const Tally t = run(bimodal, 3, 1001);
    ASSERT_GT(t.bimodal_shown_runs, 0);
    EXPECT_EQ(t.bimodal_shown_alerts, 0);
    EXPECT_GE(t.bimodal_told * 10, t.comparisons * 7) << t.bimodal_told << " of " << t.comparisons;
}

}  // namespace perfwatch::test
