#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/stats.hpp"

namespace perfwatch {
namespace {

TEST(Stats, MedianAndMadSigma) {
    EXPECT_DOUBLE_EQ(median({3, 1, 2, 10}), 2.5);
    EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3);
    EXPECT_TRUE(std::isnan(median({})));
    // median 3, absolute deviations {2, 1, 0, 1, 97}: their median is 1; the outlier does not count.
    EXPECT_DOUBLE_EQ(mad_sigma({1, 2, 3, 4, 100}), 1.4826);
    EXPECT_DOUBLE_EQ(mad_sigma({7}), 0);
}

TEST(Stats, MannWhitneyMatchesTheHandComputedNormalApproximation) {
    // Every `after` value beats every `before` value: U = 3 * 3 = 9, mean 4.5,
    // variance 3 * 3 / 12 * 7 = 5.25; with continuity z = (9 - 4.5 - 0.5) / sqrt(5.25) = 1.7457,
    // one-sided p = 1 - Phi(1.7457) = 0.04043.
    const RankTest t = mann_whitney({1, 2, 3}, {4, 5, 6});
    EXPECT_DOUBLE_EQ(t.u, 9);
    EXPECT_NEAR(t.p_greater, 0.04043, 5e-5);
    EXPECT_NEAR(t.p_less, 0.98545, 5e-5);  // Phi((9 - 4.5 + 0.5) / sqrt(5.25)) = Phi(2.1822)
    // Identical samples: nothing to tell.
    const RankTest same = mann_whitney({2, 2, 2}, {2, 2, 2});
    EXPECT_DOUBLE_EQ(same.p_greater, 1);
    EXPECT_DOUBLE_EQ(same.p_less, 1);
}

TEST(Stats, HodgesLehmannIsTheMedianOfPairwiseDifferences) {
    // Differences: 10 9 8 / 11 10 9 / 13 12 11 -> sorted 8 9 9 10 10 11 11 12 13 -> 10.
    EXPECT_DOUBLE_EQ(hodges_lehmann({1, 2, 3}, {11, 12, 14}), 10);
}

TEST(Stats, WindowComparisonUsesMedianAndSpread) {
    const std::vector<double> base{100, 101, 99, 100, 102, 98, 100, 101, 99, 100};
    const Comparison up = compare_to_baseline(110, {}, base, {});
    EXPECT_TRUE(up.window_test);
    EXPECT_FALSE(up.rank_test);
    EXPECT_DOUBLE_EQ(up.baseline, 100);
    EXPECT_DOUBLE_EQ(up.change_pct, 10);
    EXPECT_DOUBLE_EQ(up.spread, 1.4826);  // deviations 0 1 1 0 2 2 0 1 1 0: median 1
    EXPECT_GT(up.confidence_up, 0.9999);
    EXPECT_LT(up.confidence_down, 1e-4);
    // Inside the spread: no confidence either way.
    const Comparison same = compare_to_baseline(100.5, {}, base, {});
    EXPECT_LT(same.confidence_up, 0.9);
    // Two runs give no run-to-run spread, and no samples: nothing tested.
    const Comparison few = compare_to_baseline(150, {}, {100, 100}, {});
    EXPECT_FALSE(few.window_test || few.rank_test);
    EXPECT_DOUBLE_EQ(few.confidence_up, 0);
}

TEST(Stats, IdenticalBaselineValuesDoNotMakeEveryChangeCertain) {
    // MAD 0: the spread is floored at 0.5% of the median, so +0.3% is not significant.
    const Comparison c = compare_to_baseline(100.3, {}, {100, 100, 100, 100, 100}, {});
    EXPECT_LT(c.confidence_up, 0.99);
}

TEST(Stats, RankTestOnSamplesGivesTheShiftAndConfidence) {
    std::mt19937 rng(7);
    std::normal_distribution<double> noise(0, 2);
    std::vector<double> before, after;
    for (int i = 0; i < 200; ++i) before.push_back(100 + noise(rng));
    for (int i = 0; i < 200; ++i) after.push_back(110 + noise(rng));
    const Comparison c = compare_to_baseline(110, after, {100}, before);
    EXPECT_TRUE(c.rank_test);
    EXPECT_NEAR(c.change_pct, 10, 0.8);
    EXPECT_GT(c.confidence_up, 0.999);
}

TEST(Stats, EDivisiveFindsAShiftAndNothingInASteadySeries) {
    const std::vector<double> noise{0.3, -0.2, 0.1, -0.4, 0.2, 0.0, -0.1, 0.4, -0.3, 0.1};
    std::vector<double> series;
    for (int i = 0; i < 20; ++i) series.push_back(10 + noise[static_cast<std::size_t>(i) % noise.size()]);
    std::vector<double> steady = series;
    for (int i = 0; i < 15; ++i) series.push_back(15 + noise[static_cast<std::size_t>(i) % noise.size()]);
    EXPECT_EQ(change_points(series), std::vector<std::size_t>{20});
    EXPECT_TRUE(change_points(steady).empty());
    // The same series always gives the same answer (fixed seed).
    EXPECT_EQ(best_split(series).p_value, best_split(series).p_value);
}

TEST(Stats, EDivisiveFindsTwoShifts) {
    std::vector<double> series;
    const double levels[] = {5, 9, 3};
    for (double level : levels)
        for (int i = 0; i < 12; ++i) series.push_back(level + 0.1 * ((i * 7) % 5 - 2));
    EXPECT_EQ(change_points(series), (std::vector<std::size_t>{12, 24}));
}

// The band of each value is the median +- 3 MAD sigma of the usable values before it: computed
// by hand here for a short series with one unusable (bad) run.
TEST(Stats, RollingBandSkipsUnusableRuns) {
    const std::vector<double> series{10, 12, 11, 30, 13, 9};
    const std::vector<bool> usable{true, true, true, false, true, true};
    const auto bands = rolling_band(series, usable, 10, 3, 0.0, 3);
    ASSERT_EQ(bands.size(), series.size());
    EXPECT_FALSE(bands[0] || bands[1] || bands[2]);
    // Before index 3 and 4: {10, 12, 11} (30 is not usable): median 11, MAD 1 -> sigma 1.4826.
    for (const std::size_t i : {3u, 4u}) {
        ASSERT_TRUE(bands[i]);
        EXPECT_DOUBLE_EQ(bands[i]->median, 11);
        EXPECT_NEAR(bands[i]->high, 11 + 3 * 1.4826, 1e-12);
        EXPECT_NEAR(bands[i]->low, 11 - 3 * 1.4826, 1e-12);
    }
    // Before index 5: {10, 12, 11, 13}: median 11.5, deviations {1.5, .5, .5, 1.5} -> MAD 1.
    ASSERT_TRUE(bands[5]);
    EXPECT_DOUBLE_EQ(bands[5]->median, 11.5);
    EXPECT_NEAR(bands[5]->high, 11.5 + 3 * 1.4826, 1e-12);
}

}  // namespace
}  // namespace perfwatch
