#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <regex>

#include "tests/support.hpp"

namespace perfwatch {

namespace {

long count(const std::string& text, const std::string& pattern) {
    const std::regex re(pattern);
    return static_cast<long>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

test::Rendered render(const std::string& html, const std::string& screenshot = "") {
    return test::chromium("file://" + html, screenshot);
}

}  // namespace

// A real corpus trace's report in headless Chromium: it loads with no console message, and its
// charts have their elements (a bar per kernel type and per top kernel).
TEST(HtmlReport, ChromiumRendersACorpusTraceReportWithItsCharts) {
    PERFWATCH_CORPUS_FILE(trace, "kineto/kineto__tb_plugin_samples_resnet50_profiler_api_num_workers_0__worker0.pt.trace.json.gz");
    if (!std::filesystem::exists("/usr/bin/chromium"))
        GTEST_SKIP() << "chromium is not installed (Debian package chromium; scripts/deps.sh installs it)";
    test::TempDir dir;
    const std::string db = dir.file("p.db"), html = dir.file("report.html");
    ASSERT_NE(test::run_perfwatch({"check", "--db", db, trace}).exit_code, 2);
    const auto written = test::run_perfwatch({"report", "1", "--db", db, "--html", html});
    ASSERT_EQ(written.exit_code, 0) << written.err;
    const std::string source = test::read_file(html);
    EXPECT_EQ(source.find("<script"), std::string::npos);
    EXPECT_EQ(count(source, "(src|href)=\"https?:"), 0) << "the report must not reach the network";

    const test::Rendered page = render(html);
    ASSERT_EQ(page.exit_code, 0) << page.log;
    EXPECT_EQ(page.log.find("CONSOLE"), std::string::npos) << page.log;
    EXPECT_NE(page.dom.find("<h1>perfwatch: run 1</h1>"), std::string::npos);
    // The kernel-type chart: one bar per type the 62 kernels fall in; the top-kernels chart: 15 bars.
    const auto types = page.dom.find("id=\"kernel-types\""), top = page.dom.find("id=\"top-kernels-chart\"");
    ASSERT_NE(types, std::string::npos);
    ASSERT_NE(top, std::string::npos);
    const std::string type_chart = page.dom.substr(types, top - types);
    EXPECT_GE(count(type_chart, "<rect class=\"bar\""), 3);
    EXPECT_EQ(count(page.dom.substr(top, page.dom.find("</svg>", top) - top), "<rect class=\"bar\""), 15);
    EXPECT_NE(type_chart.find("Convolution"), std::string::npos);
    EXPECT_GE(count(page.dom, "<li><span class=\"sev "), 1);

    // One screenshot kept as an artifact (build tree, never in git).
    std::filesystem::create_directories(PERFWATCH_ARTIFACT_DIR);
    const std::string shot = std::string(PERFWATCH_ARTIFACT_DIR) + "/html_report_resnet50.png";
    std::filesystem::remove(shot);
    const test::Rendered shot_run = render(html, shot);
    EXPECT_EQ(shot_run.exit_code, 0) << shot_run.log;
    ASSERT_TRUE(std::filesystem::exists(shot));
    EXPECT_GT(std::filesystem::file_size(shot), 20000u);
}

// A regression's trend chart: the series over the comparable runs, the baseline band, the change
// point at the first bad run, the current run marked.
TEST(HtmlReport, RegressionTrendChartHasBandSeriesAndChangePoint) {
    if (!std::filesystem::exists("/usr/bin/chromium"))
        GTEST_SKIP() << "chromium is not installed (Debian package chromium; scripts/deps.sh installs it)";
    test::TempDir dir;
    const std::string db = dir.file("h.db");
    const double series[] = {100, 101, 99, 100, 102, 100, 99, 101, 125};
    for (std::size_t i = 0; i < std::size(series); ++i) {
        const std::string trace = test::write_kineto_trace(dir, fmt::format("c{}/trace.json", i), series[i], 40,
                                                           "NVIDIA H100", 1000.0 * static_cast<double>(i + 1));
        test::run_perfwatch({"check", "--db", db, "--label", fmt::format("commit=c{}", i), trace});
    }
    const std::string html = dir.file("report.html");
    ASSERT_EQ(test::run_perfwatch({"report", "9", "--db", db, "--html", html}).exit_code, 0);
    const test::Rendered page = render(html);
    ASSERT_EQ(page.exit_code, 0) << page.log;
    EXPECT_EQ(page.log.find("CONSOLE"), std::string::npos) << page.log;
    const auto start = page.dom.find("id=\"trend-0\"");
    ASSERT_NE(start, std::string::npos) << page.dom;
    const std::string chart = page.dom.substr(start, page.dom.find("</svg>", start) - start);
    EXPECT_EQ(count(chart, "<rect class=\"band\""), 1);
    EXPECT_EQ(count(chart, "<polyline class=\"series\""), 1);
    EXPECT_EQ(count(chart, "<circle class=\"point"), 9);
    EXPECT_EQ(count(chart, "<circle class=\"point current\""), 1);
    EXPECT_EQ(count(chart, "<line class=\"change-point\""), 1);
    EXPECT_NE(chart.find("the shift began at c8"), std::string::npos) << chart;
    EXPECT_NE(page.dom.find("kernel 'gemm': duration (kernel-time-regression): 9 runs; baseline 100 us"),
              std::string::npos);
}

}  // namespace perfwatch
