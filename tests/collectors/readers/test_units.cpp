#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

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

// parse_decimal against std::from_chars on the same text: the same verdict and the same bits, for
// random plain decimals (the short path, with zeros ending the fraction of 17-digit times) and
// texts that leave it (exponents, 20+ digits, points without digits, signs, letters).
TEST(Units, DecimalsParseAsFromCharsDoes) {
    std::mt19937_64 random(20261127);
    const std::string alphabet = "0123456789012345678901234567890123456789.-+eEx ";
    const auto digits = [&](std::size_t n) {
        std::string s;
        for (std::size_t i = 0; i < n; ++i) s.push_back(static_cast<char>('0' + random() % 10));
        return s;
    };
    std::vector<std::string> texts = {"", "-", ".", "-.", "1.", ".5", "-0", "0", "00.000", "9007199254740992",
                                      "9007199254740993", "9007199254740993.0", "1234567890123456789",
                                      "12345678901234567890", "0.1234567890123456789", "1e3", "inf", "nan",
                                      "+1", "1.5 ", "1712345678901.123", "-1712345678901.123456",
                                      "1712195515284428.0", "1712195515284428.500", "99999999999999999.0",
                                      "9007199254740993.00", "123456789012345678.90"};
    // Exact ties between two doubles above 2^50 (a whole part of b bits leaves 53 - b bits of
    // fraction): q + (2j + 1) / 2^(54 - b), written out exactly, must round to even.
    for (int i = 0; i < 20000; ++i) {
        const std::uint64_t whole = (std::uint64_t{1} << 50) + random() % ((std::uint64_t{1} << 53) - (std::uint64_t{1} << 50));
        const int places = 54 - static_cast<int>(std::bit_width(whole));  // 1 to 4
        const std::uint64_t odd = 2 * (random() % (std::uint64_t{1} << (places - 1))) + 1;
        std::uint64_t fifths = odd;  // odd / 2^places = odd * 5^places / 10^places
        for (int k = 0; k < places; ++k) fifths *= 5;
        texts.push_back(fmt::format("{}{}.{:0{}}", random() % 2 ? "-" : "", whole, fifths, places));
    }
    for (int i = 0; i < 200000; ++i) {
        switch (random() % 5) {
        case 4: texts.push_back(std::to_string(1 + random() % 9) + digits(12 + random() % 6) + "." + digits(1 + random() % 4)); break;
        case 0: texts.push_back(digits(1 + random() % 20)); break;
        case 3: texts.push_back(digits(14 + random() % 6) + "." + digits(random() % 2) + std::string(1 + random() % 3, '0')); break;
        case 1: texts.push_back((random() % 2 ? "-" : "") + digits(1 + random() % 14) + "." + digits(1 + random() % 8)); break;
        default: {
            std::string s;
            for (std::size_t n = random() % 12; n > 0; --n) s.push_back(alphabet[random() % alphabet.size()]);
            texts.push_back(s);
        }
        }
    }
    for (const std::string& text : texts) {
        double want = 0, got = 0;
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), want);
        const bool ok = ec == std::errc() && ptr == text.data() + text.size();
        ASSERT_EQ(parse_decimal(text, got), ok) << '"' << text << '"';
        if (ok) ASSERT_EQ(std::bit_cast<std::uint64_t>(got), std::bit_cast<std::uint64_t>(want)) << '"' << text << '"';
    }
}

TEST(Units, Slug) {
    EXPECT_EQ(slug("Executed Ipc Active"), "executed_ipc_active");
    EXPECT_EQ(slug("sm__inst_executed.avg.per_cycle_active"), "sm__inst_executed_avg_per_cycle_active");
    EXPECT_EQ(slug("# SMs"), "sms");
    EXPECT_EQ(slug("L1/TEX Hit Rate"), "l1_tex_hit_rate");
}

}  // namespace perfwatch
