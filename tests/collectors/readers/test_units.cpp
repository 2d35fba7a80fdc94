#include <gtest/gtest.h>

#include "collectors/readers/units.hpp"

namespace perfwatch {

TEST(Units, TimesFrequenciesSizesAndBandwidths) {
    struct Case {
        double value;
        const char* unit;
        double base;
        const char* base_unit;
    };
    const Case cases[] = {
        {184.51, "us", 184510, "ns"},         {30.51, "msecond", 30.51e6, "ns"},
        {7.85, "second", 7.85e9, "ns"},       {1.65, "s", 1.65e9, "ns"},
        {114.85, "usecond", 114850, "ns"},    {794.61, "Mhz", 794.61e6, "hz"},
        {6.24, "Ghz", 6.24e9, "hz"},          {5.99, "cycle/nsecond", 5.99e9, "hz"},
        {779.96, "cycle/usecond", 779.96e6, "hz"}, {102.40, "Kbyte", 102400, "byte"},
        {16.38, "Kbyte/block", 16380, "byte"}, {1024, "byte/block", 1024, "byte"},
        {29.73, "Gbyte/s", 29.73e9, "byte/s"}, {90.56, "Mbyte/second", 90.56e6, "byte/s"},
        {89.22, "%", 89.22, "percent"},       {168, "register/thread", 168, "count"},
        {508757, "cycle", 508757, "count"},   {288, "", 288, "count"},
        {1.28, "Kbyte/cycle", 1280, "byte/cycle"}, {200, "MB", 200e6, "byte"},
        {2, "KiB", 2048, "byte"},             {12, "B", 12, "byte"},
        {5.5, "MBps", 5.5e6, "byte/s"},
    };
    for (const Case& c : cases) {
        const BaseValue b = to_base_unit(c.value, c.unit);
        EXPECT_DOUBLE_EQ(b.value, c.base) << c.unit;
        EXPECT_EQ(b.unit, c.base_unit) << c.unit;
    }
}

TEST(Units, ReportNumbers) {
    EXPECT_EQ(parse_report_number("3,103,434"), 3103434);
    EXPECT_EQ(parse_report_number("23,771,132.18"), 23771132.18);
    EXPECT_EQ(parse_report_number("3.103.434,5"), 3103434.5);
    EXPECT_EQ(parse_report_number("0,5"), 0.5);
    EXPECT_EQ(parse_report_number(" 42 "), 42);
    EXPECT_EQ(parse_report_number("-1"), -1);
    EXPECT_EQ(parse_report_number("1.5e+03"), 1500);
    EXPECT_FALSE(parse_report_number("(!) nan"));
    EXPECT_FALSE(parse_report_number("CachePreferNone"));
    EXPECT_FALSE(parse_report_number("n/a"));
    EXPECT_FALSE(parse_report_number(""));
    EXPECT_FALSE(parse_report_number("12abc"));
}

TEST(Units, Slug) {
    EXPECT_EQ(slug("Executed Ipc Active"), "executed_ipc_active");
    EXPECT_EQ(slug("sm__inst_executed.avg.per_cycle_active"), "sm__inst_executed_avg_per_cycle_active");
    EXPECT_EQ(slug("# SMs"), "sms");
    EXPECT_EQ(slug("L1/TEX Hit Rate"), "l1_tex_hit_rate");
}

}  // namespace perfwatch
