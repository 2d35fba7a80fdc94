#include <gtest/gtest.h>

#include "engine/range_compare.hpp"

namespace perfwatch {

// Ten runs against ten, every B value 10 above its A value: the shift is 10 (of a median of
// 100: +10%), every pair ordered so the rank test is sure; noise is the spread around each
// side's median (1 either way: MAD 1, sigma 1.4826).
TEST(RangeCompare, AShiftOfEveryRunIsSlowerWithItsConfidenceAndNoise) {
    RangeSamples s{"gemm", {99, 100, 101, 100, 99, 101, 100, 99, 101, 100}, {109, 110, 111, 110, 109, 111, 110, 109, 111, 110}};
    const RangeComparison c = compare_ranges(s);
    EXPECT_EQ(c.verdict, RangeComparison::Verdict::slower);
    EXPECT_DOUBLE_EQ(c.median_a, 100);
    EXPECT_DOUBLE_EQ(c.median_b, 110);
    EXPECT_NEAR(c.change_pct, 10.0, 1e-9);
    ASSERT_TRUE(c.confidence);
    EXPECT_GT(*c.confidence, 0.999);
    ASSERT_TRUE(c.noise_pct);
    EXPECT_NEAR(*c.noise_pct, 1.4826, 1e-3);
    // z(0.995) 2.5758 x 1.4826% x sqrt(1/10 + 1/10) / sqrt(3/pi).
    ASSERT_TRUE(c.detectable_pct);
    EXPECT_NEAR(*c.detectable_pct, 2.5758 * 1.4826 * 0.44721 / 0.97721, 0.01);
    std::swap(s.a, s.b);
    EXPECT_EQ(compare_ranges(s).verdict, RangeComparison::Verdict::faster);
}

// The same noisy values in another order on each side: unchanged, whatever their spread; one
// run against one cannot tell; a kernel on one side only is said so.
TEST(RangeCompare, NoiseIsUnchangedAndOneRunCannotTell) {
    const RangeSamples noisy{"noisy", {80, 120, 95, 105, 70, 130, 100, 90, 110, 100}, {100, 110, 90, 130, 70, 105, 95, 120, 80, 100}};
    const RangeComparison c = compare_ranges(noisy);
    EXPECT_EQ(c.verdict, RangeComparison::Verdict::unchanged);
    EXPECT_NEAR(c.change_pct, 0.0, 1e-9);
    ASSERT_TRUE(c.confidence);
    EXPECT_LT(*c.confidence, 0.5);
    EXPECT_GT(*c.detectable_pct, 10.0);
    const RangeComparison one = compare_ranges({"k", {100}, {140}});
    EXPECT_EQ(one.verdict, RangeComparison::Verdict::too_few_runs);
    EXPECT_FALSE(one.confidence);
    EXPECT_NEAR(one.change_pct, 40.0, 1e-9);
    EXPECT_EQ(compare_ranges({"k", {}, {1, 2, 3}}).verdict, RangeComparison::Verdict::only_in_b);
    EXPECT_EQ(compare_ranges({"k", {1, 2, 3}, {}}).verdict, RangeComparison::Verdict::only_in_a);
}

}  // namespace perfwatch
