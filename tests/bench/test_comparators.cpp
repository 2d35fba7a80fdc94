#include <gtest/gtest.h>

#include <cmath>

#include "bench/comparators.hpp"

namespace perfwatch::test {

namespace {

// 40 levels alternating 99 and 101 (mean 100, sample standard deviation about 1.01), with
// `step` added from index 20 on.
std::vector<double> stepped(double step) {
    std::vector<double> v;
    for (int i = 0; i < 40; ++i) v.push_back((i % 2 == 0 ? 99.0 : 101.0) + (i >= 20 ? step : 0.0));
    return v;
}

}  // namespace

TEST(Comparators, TheMedianTTestAlertsOnAStepAndNotOnTheFlatPart) {
    const auto alerts = bench::median_t_test(stepped(10));
    for (std::size_t i = 0; i < 20; ++i) EXPECT_FALSE(alerts[i]) << i;
    // At 20: t = 10 / (1.054 * sqrt(1.1)) = 9.05 with 9 degrees of freedom: p < 0.001.
    EXPECT_TRUE(alerts[20]);
    // A step of 2 (t about 1.8) is no alert at p < 0.001.
    EXPECT_FALSE(bench::median_t_test(stepped(2))[20]);
}

TEST(Comparators, PerfherderAlertsOnceTheForeWindowIsFullNamingTheStep) {
    const auto alerts = bench::perfherder(stepped(10));
    for (std::size_t i = 0; i < alerts.size(); ++i) {
        if (i == 31) {
            ASSERT_TRUE(alerts[i].has_value()) << "the fore window [20, 31] is complete at 31";
            EXPECT_EQ(*alerts[i], 20u);
        } else {
            EXPECT_FALSE(alerts[i].has_value()) << i;
        }
    }
    for (const auto& a : bench::perfherder(stepped(0))) EXPECT_FALSE(a.has_value());
}

}  // namespace perfwatch::test
