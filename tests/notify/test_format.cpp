#include <gtest/gtest.h>

#include <fmt/format.h>

#include <regex>

#include <nlohmann/json.hpp>

#include "notify/alerts.hpp"
#include "notify/format.hpp"
#include "notify/html_report.hpp"
#include "notify/sinks.hpp"

namespace perfwatch {

// A run-level finding names its report, not the run entity ("run 'run'"), in every medium.
TEST(Format, RunLevelFindingsNameTheirReport) {
    CheckReport report;
    report.runs.push_back({4, "/ci/llm/main/abc/bert.json.gz", "kineto", {}, {}, {}, {}, {}});
    Finding f;
    f.rule = "gone-kernels";
    f.title = "Kernels gone since the baseline";
    f.severity = Severity::warning;
    f.run_id = 4;
    f.entity_kind = EntityKind::run;
    f.entity_name = "run";
    f.message = "2 kernels of the baseline do not appear";
    report.findings.push_back(f);
    const std::string text = format_check_text(report);
    EXPECT_NE(text.find("Kernels gone since the baseline — report 'bert.json.gz'"), std::string::npos) << text;
    EXPECT_EQ(text.find("'run'"), std::string::npos) << text;
    const std::string md = format_check_markdown(report);
    EXPECT_NE(md.find("report `bert.json.gz`"), std::string::npos) << md;

    HtmlReport html;
    html.run = report.runs[0];
    html.findings = report.findings;
    EXPECT_NE(render_html_report(html).find("report <code>bert.json.gz</code>"), std::string::npos);

    AlertGroup g;
    g.source = report.runs[0].source;
    g.alerts.push_back({f.rule, f.title, f.severity, "run", "run", f.message, {}, {}, {}, {}, {}});
    EXPECT_NE(email_text(g).find("report 'bert.json.gz'"), std::string::npos) << email_text(g);
    EXPECT_NE(slack_message(g).find("report `bert.json.gz`"), std::string::npos) << slack_message(g);
}

TEST(Format, JsonHasTheDocumentedShape) {
    CheckReport report;
    report.runs.push_back({3, "r.csv", "ncu-csv", {{"branch", "main"}}, {}, {}, {}, {}});
    Finding f;
    f.rule = "ncu-tail-effect";
    f.severity = Severity::warning;
    f.run_id = 3;
    f.entity_kind = EntityKind::kernel;
    f.entity_name = "k<\"x\">";
    f.message = "tail";
    f.metrics = {{"waves_per_sm", 1.89}};
    f.estimated_speedup_pct = 50;
    report.findings.push_back(f);
    const auto doc = nlohmann::json::parse(format_check_json(report));
    EXPECT_EQ(doc["runs"][0]["id"], 3);
    EXPECT_EQ(doc["runs"][0]["labels"]["branch"], "main");
    const auto& jf = doc["findings"][0];
    EXPECT_EQ(jf["rule"], "ncu-tail-effect");
    EXPECT_EQ(jf["severity"], "warning");
    EXPECT_EQ(jf["run"], 3);
    EXPECT_EQ(jf["entity"]["kind"], "kernel");
    EXPECT_EQ(jf["entity"]["name"], "k<\"x\">");
    EXPECT_EQ(jf["metrics"]["waves_per_sm"], 1.89);
    EXPECT_EQ(jf["estimated_speedup_pct"], 50);
    EXPECT_TRUE(jf["impact"].is_null());
}

TEST(Format, TextNamesRunsAndCountsFindings) {
    CheckReport report;
    report.runs.push_back({1, "a.txt", "ncu-text", {}, {"no GPU data"}, {}, {}, {}});
    Finding f;
    f.rule = "r";
    f.title = "Title";
    f.severity = Severity::error;
    f.entity_name = "k";
    f.message = "msg";
    f.share_pct = 12.5;
    report.findings.push_back(f);
    const std::string text = format_check_text(report);
    EXPECT_NE(text.find("run 1: a.txt (ncu-text)"), std::string::npos);
    EXPECT_NE(text.find("note: no GPU data"), std::string::npos);
    EXPECT_NE(text.find("1 finding(s): 1 error, 0 warning, 0 info"), std::string::npos);
    EXPECT_NE(text.find("[error] Title"), std::string::npos);
    EXPECT_NE(text.find("12.5% of GPU time"), std::string::npos);
}

TEST(Format, MarkdownOfFiveHundredFindingsStaysUnderTheLimitWorstFirst) {
    CheckReport report;
    report.runs.push_back({12, "builds/llm/main/abc/trace.json", "kineto", {{"branch", "main"}, {"commit", "abc"}}, {},
                           {"last 10 comparable run(s) on main"}, {}, {}});
    for (int i = 0; i < 500; ++i) {
        Finding f;
        f.rule = i % 10 == 0 ? "kernel-time-regression" : "low-occupancy";
        f.title = i % 10 == 0 ? "Kernel slower than its baseline" : "Low achieved occupancy";
        f.severity = i % 10 == 0 ? Severity::error : Severity::warning;
        f.run_id = 12;
        f.entity_name = fmt::format("void kernel_{}<float, 128>(float const*, float*, int)", i);
        f.message = std::string(400, 'x');
        f.impact = 500.0 - i;  // already ranked, worst first
        f.share_pct = 1;
        f.metrics["duration"] = 1000.0 + i;
        if (f.severity == Severity::error)
            f.comparison = FindingComparison{"duration", 900, 1000.0 + i, 100.0 * (1000.0 + i - 900) / 900, 99.95, 10, "window", {}, {}, {}, {}, {}};
        report.findings.push_back(f);
    }
    const std::string md = format_check_markdown(report);
    EXPECT_LT(md.size(), 65000u);
    EXPECT_TRUE(md.starts_with("### perfwatch: 500 findings (50 errors, 450 warnings, 0 info)")) << md.substr(0, 200);
    // The regression table: before, after, change, confidence, with times in units.
    EXPECT_NE(md.find("| **error** | kernel `void kernel_0<float, 128>(float const*, float*, int)` | duration | 900 ns | "
                      "1.00 us | +11.1% | 100.0% |"),
              std::string::npos)
        << md.substr(0, 2000);
    // Worst first, and what did not fit is counted.
    const auto first = md.find("1. **[error] Kernel slower than its baseline**");
    ASSERT_NE(first, std::string::npos);
    EXPECT_NE(md.find("kernel_0<", first), std::string::npos);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(md, m, std::regex("_([0-9]+) more findings not shown")));
    const int omitted = std::stoi(m[1]);
    EXPECT_GT(omitted, 0);
    EXPECT_EQ(md.find(fmt::format("{}. **[", 500 - omitted + 1)), std::string::npos);
    EXPECT_NE(md.find(fmt::format("{}. **[", 500 - omitted)), std::string::npos);
    // A tiny limit still holds.
    EXPECT_LE(format_check_markdown(report, 5000).size(), 5000u);
}

TEST(Format, JunitCasesFailOnlyAtOrAboveFailOn) {
    CheckReport report;
    report.runs.push_back({1, "a&b.csv", "ncu-csv", {{"branch", "main"}}, {}, {}, {}, {}});
    report.cases = {{1, "low-occupancy", EntityKind::kernel, "k<1>"}, {1, "tail-effect", EntityKind::kernel, "k<1>"},
                    {1, "low-occupancy", EntityKind::kernel, "other"}};
    Finding warn;
    warn.rule = "low-occupancy";
    warn.title = "Low occupancy";
    warn.severity = Severity::warning;
    warn.run_id = 1;
    warn.entity_name = "k<1>";
    warn.message = "occupancy 12% < 50%";
    Finding info = warn;
    info.rule = "tail-effect";
    info.severity = Severity::info;
    info.title = "Tail";
    report.findings = {warn, info};
    const std::string x = format_check_junit(report, Severity::warning);
    EXPECT_NE(x.find("<testsuites name=\"perfwatch\" tests=\"3\" failures=\"1\""), std::string::npos) << x;
    EXPECT_NE(x.find("<testsuite name=\"run 1: a&amp;b.csv\" tests=\"3\" failures=\"1\""), std::string::npos) << x;
    EXPECT_NE(x.find("<testcase name=\"kernel 'k&lt;1&gt;'\" classname=\"perfwatch.low-occupancy\" time=\"0\">\n"
                     "      <failure message=\"Low occupancy\" type=\"warning\">occupancy 12% &lt; 50%</failure>"),
              std::string::npos)
        << x;
    EXPECT_NE(x.find("<system-out>[info] Tail: occupancy 12% &lt; 50%\n</system-out>"), std::string::npos) << x;
    EXPECT_NE(x.find("<testcase name=\"kernel 'other'\" classname=\"perfwatch.low-occupancy\" time=\"0\"/>"),
              std::string::npos);
    EXPECT_NE(format_check_junit(report, Severity::error).find("failures=\"0\""), std::string::npos);
}

}  // namespace perfwatch

namespace perfwatch {

// The first line of a check names the first warning (ranked by impact, information skipped) and
// what fixing it could save in time: its impact (percent of the run's GPU time) of that time.
TEST(Format, TheFirstLineIsTheHeadlineWithItsSavingInTime) {
    CheckReport report;
    report.runs.push_back({7, "r.sqlite", "nsys-sqlite", {}, {}, {}, {}, 2.0e9});
    Finding info;
    info.rule = "hotspot-top-kernel";
    info.title = "Top kernel by GPU time";
    info.severity = Severity::info;
    info.run_id = 7;
    info.entity_name = "gemm";
    Finding warn = info;
    warn.rule = "launch-small-blocks";
    warn.title = "Blocks too small to fill warps or the SM";
    warn.severity = Severity::warning;
    warn.entity_name = "fan2";
    warn.impact = 25.0;
    report.findings = {info, warn};
    const std::string expected =
        "headline: Blocks too small to fill warps or the SM (kernel 'fan2'): fixing it could save about 500 ms of "
        "the run's 2.00 s of GPU time (25.0%)";
    const std::string text = format_check_text(report);
    EXPECT_EQ(text.substr(0, text.find('\n')), expected) << text;
    EXPECT_EQ(nlohmann::json::parse(format_check_json(report)).at("headline"), expected);
    const std::string md = format_check_markdown(report);
    EXPECT_NE(md.find("**headline: Blocks too small to fill warps or the SM \\(kernel 'fan2'\\)"), std::string::npos) << md;

    report.findings = {info};
    EXPECT_TRUE(format_check_text(report).starts_with("headline: nothing to act on: no warning above the impact floors\n"));
    report.findings.clear();
    EXPECT_TRUE(format_check_text(report).starts_with("headline: nothing to act on: no finding\n"));
}

}  // namespace perfwatch
