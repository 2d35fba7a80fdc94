#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>

#include "web/chart.hpp"

namespace perfwatch::web {
namespace {

std::size_t count(const std::string& text, const std::string& pattern) {
    const std::regex re(pattern);
    return static_cast<std::size_t>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

}  // namespace

// 10,000 runs are drawn as at most k_max_drawn_points circles, and the extremes and the bad runs
// of the series are among them.
TEST(WebChart, LongSeriesAreDrawnByBucketExtremesKeepingBadRuns) {
    ChartInput in;
    in.metric = "duration";
    for (int i = 0; i < 10'000; ++i)
        in.points.push_back({i + 1, 1000.0 + (i * 37) % 101, std::nullopt, "", std::nullopt, false, std::nullopt});
    in.points[4321].value = 5000;  // the highest
    in.points[777].value = 10;     // the lowest
    in.points[9000].bad = in.points[9001].bad = true;
    const std::string svg = series_chart(in);
    const std::size_t circles = count(svg, "<circle ");
    EXPECT_LE(circles, k_max_drawn_points + 2);
    EXPECT_GE(circles, k_max_drawn_points / 2);
    EXPECT_NE(svg.find("data-run=\"4322\" data-value=\"5000\""), std::string::npos);
    EXPECT_NE(svg.find("data-run=\"778\" data-value=\"10\""), std::string::npos);
    EXPECT_EQ(count(svg, "class=\"point bad\""), 2u);
    EXPECT_NE(svg.find("data-points=\"10000\""), std::string::npos);
}

// A short series is drawn whole, a point per run, with its tooltip text escaped.
TEST(WebChart, ShortSeriesDrawEveryPointWithEscapedTooltips) {
    ChartInput in;
    in.metric = "duration";
    for (int i = 0; i < 50; ++i) in.points.push_back({i + 1, 100.0 + i, 40.0, "<b>c</b>", std::nullopt, false, std::nullopt});
    const std::string svg = series_chart(in);
    EXPECT_EQ(count(svg, "<circle "), 50u);
    EXPECT_EQ(svg.find("<b>"), std::string::npos);
    EXPECT_NE(svg.find("commit &lt;b&gt;c&lt;/b&gt;"), std::string::npos);
    EXPECT_NE(svg.find("40 launches"), std::string::npos);
}

// A sparkline says its scale, and noise stays flat: a 0.1% wobble moves the line by a few
// percent of its height, a 20% step across most of it.
TEST(WebChart, SparklinesCarryTheirScaleAndKeepNoiseFlat) {
    const auto y_range = [](const std::string& svg) {
        std::smatch m;
        EXPECT_TRUE(std::regex_search(svg, m, std::regex("points=\"([^\"]*)\""))) << svg;
        std::istringstream pts(m[1].str());
        double lo = 1e9, hi = -1e9;
        for (std::string p; pts >> p;) {
            const double y = std::stod(p.substr(p.find(',') + 1));
            lo = std::min(lo, y);
            hi = std::max(hi, y);
        }
        return hi - lo;
    };
    const std::string noise = sparkline({1'000'000, 1'001'000, 999'500, 1'000'500}, "gpu_time");
    EXPECT_LT(y_range(noise), 0.05 * 24);
    EXPECT_NE(noise.find("<span class=\"note spark-scale\">"), std::string::npos) << noise;
    EXPECT_EQ(count(sparkline({1, 2, 3, 4}, "gpu_time", {false, false, true, true}), "class=\"spark-bad\""), 2u);
    EXPECT_EQ(count(sparkline({1, 2, 3, 4}, "gpu_time"), "spark-bad"), 0u);
    const std::string step = sparkline({1'000'000, 1'000'000, 1'200'000, 1'200'000}, "gpu_time");
    EXPECT_GT(y_range(step), 0.75 * 20);
    EXPECT_NE(step.find("1.00 ms &ndash; 1.20 ms"), std::string::npos) << step;
}

// A second statistic is drawn only when named: a dashed line through the points that have it,
// the value axis widened to hold it, each point carrying it as data-second and in its tooltip.
TEST(WebChart, SecondStatisticIsADashedLineWithinTheAxis) {
    ChartInput in;
    in.metric = "duration";
    for (int i = 0; i < 6; ++i) {
        ChartPoint p;
        p.run = i + 1;
        p.value = 100'000;
        if (i != 2) p.second = 50'000;  // far below every mean
        in.points.push_back(p);
    }
    EXPECT_EQ(series_chart(in).find("class=\"second\""), std::string::npos) << "unnamed: not drawn";
    in.second_label = "median per launch";
    const std::string svg = series_chart(in);
    EXPECT_NE(svg.find("<polyline class=\"second\""), std::string::npos);
    EXPECT_EQ(count(svg, "data-second=\"50000\""), 5u);
    EXPECT_NE(svg.find("(median per launch 50.0 us)"), std::string::npos) << svg;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(svg, m, std::regex("<polyline class=\"second\" points=\"([^\"]*)\"")));
    std::istringstream pts(m[1].str());
    std::size_t n = 0;
    for (std::string p; pts >> p; ++n) {
        const double y = std::stod(p.substr(p.find(',') + 1));
        EXPECT_GE(y, 16.0);
        EXPECT_LE(y, 340.0 - 34.0);
    }
    EXPECT_EQ(n, 5u);
}

}  // namespace perfwatch::web
