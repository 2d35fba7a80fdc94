#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "notify/format.hpp"

namespace perfwatch {

TEST(Format, JsonHasTheDocumentedShape) {
    CheckReport report;
    report.runs.push_back({3, "r.csv", "ncu-csv", {{"branch", "main"}}, {}, {}, {}});
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
    report.runs.push_back({1, "a.txt", "ncu-text", {}, {"no GPU data"}, {}, {}});
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

}  // namespace perfwatch
