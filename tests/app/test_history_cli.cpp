#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support.hpp"

namespace perfwatch {
namespace {

using test::run_perfwatch;

TEST(HistoryCli, LabelsComeFromTemplatesSidecarsAndTheCommandLine) {
    test::TempDir dir;
    const auto job = dir.path() / "builds" / "vision" / "feature-x" / "abc123";
    std::filesystem::create_directories(job);
    test::TempDir scratch;
    const std::string trace = test::write_kineto_trace(scratch, "t.json", 100);
    const std::string report = (job / "trace.json").string();
    std::filesystem::copy_file(trace, report);
    std::ofstream((job / "perfwatch-labels.yaml").string()) << "batch_size: 32\nprecision: fp16\n";
    std::ofstream(report + ".labels.yaml") << "batch_size: 64\n";
    std::ofstream(dir.file("perfwatch.yaml")) << "path_templates:\n  - \"builds/{project}/{branch}/{commit}/*\"\n";
    const std::string db = dir.file("p.db");
    const auto r = run_perfwatch({"--config", dir.file("perfwatch.yaml"), "ingest", "--db", db, "--label",
                                  "precision=bf16", report});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto shown = nlohmann::json::parse(run_perfwatch({"show", "--db", db, "--format", "json", "1"}).out);
    const auto labels = shown["labels"];
    EXPECT_EQ(labels["project"], "vision");
    EXPECT_EQ(labels["branch"], "feature-x");
    EXPECT_EQ(labels["commit"], "abc123");
    EXPECT_EQ(labels["batch_size"], "64");    // the report's sidecar beats the directory's
    EXPECT_EQ(labels["precision"], "bf16");   // --label beats both
    EXPECT_EQ(labels["gpu"], "NVIDIA H100");  // from the report itself

    std::ofstream(report + ".labels.yaml") << "batch_size: [1, 2]\n";
    std::filesystem::copy_file(test::write_kineto_trace(scratch, "u.json", 90), (job / "other.json").string());
    std::ofstream((job / "other.json").string() + ".labels.yaml") << "- not a mapping\n";
    const auto bad = run_perfwatch({"ingest", "--db", db, (job / "other.json").string()});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("other.json.labels.yaml:1: a label sidecar must be a mapping"), std::string::npos) << bad.err;
}

TEST(HistoryCli, CheckNamesTheFirstBadCommitAndHistoryMarksTheChangePoint) {
    test::TempDir dir;
    const std::string db = dir.file("h.db");
    const double series[] = {100, 101, 99, 100, 102, 100, 99, 101, 125, 126, 125};
    std::string last_out;
    for (std::size_t i = 0; i < std::size(series); ++i) {
        const std::string trace =
            test::write_kineto_trace(dir, fmt::format("c{}/trace.json", i), series[i], 40, "NVIDIA H100", 1000.0 * static_cast<double>(i + 1));
        const auto r = run_perfwatch({"check", "--db", db, "--label", fmt::format("commit=c{}", i), "--label",
                                      "project=demo", "--fail-on", "error", trace});
        if (i < 8) {
            EXPECT_EQ(r.exit_code, 0) << i << ": " << r.out;
            EXPECT_EQ(r.out.find("kernel-time-regression"), std::string::npos) << i << ": " << r.out;
        }
        if (i == 8) {
            // The first slow run fails the gate and opens the regression.
            EXPECT_EQ(r.exit_code, 1) << r.out;
            EXPECT_NE(r.out.find("regression opened: kernel 'gemm' (kernel-time-regression)"), std::string::npos)
                << r.out;
            EXPECT_NE(r.out.find("baseline: last 8 comparable run(s) on main"), std::string::npos) << r.out;
        }
        last_out = r.out;
    }
    // Two runs later the change point names commit c8, not the latest, and the last good commit
    // before it with its level (series[7], 101 us): where a bisection starts.
    EXPECT_NE(last_out.find("The shift began at commit c8 (run 9) (last good: commit c7 (run 8) at 101 us)"),
              std::string::npos)
        << last_out;
    EXPECT_EQ(last_out.find("regression opened"), std::string::npos) << "opened once only:\n" << last_out;

    const auto h = run_perfwatch({"history", "--db", db, "--metric", "duration", "--entity", "gemm", "--label",
                                  "project=demo"});
    ASSERT_EQ(h.exit_code, 0) << h.err;
    EXPECT_NE(h.out.find("duration of kernel 'gemm' over 11 run(s)"), std::string::npos) << h.out;
    const auto line = h.out.find("run     9  c8");
    ASSERT_NE(line, std::string::npos) << h.out;
    EXPECT_NE(h.out.substr(line, h.out.find('\n', line) - line).find("<- change point"), std::string::npos) << h.out;
    EXPECT_EQ(h.out.find("change point"), h.out.rfind("change point")) << "one change point only:\n" << h.out;

    // Pinning an earlier run makes it the baseline; show lists it with the open regression.
    ASSERT_EQ(run_perfwatch({"baseline", "--db", db, "pin", "3", "--comment", "release"}).exit_code, 0);
    const auto show = run_perfwatch({"baseline", "--db", db, "show", "11"});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    EXPECT_NE(show.out.find("run 3  pinned"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("pinned run 3 and 2 earlier comparable run(s) on main"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("2 open regression(s)"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("kernel-time-regression kernel 'gemm': duration baseline 100 us, opened at run 9"),
              std::string::npos)
        << show.out;
    EXPECT_EQ(run_perfwatch({"baseline", "--db", db, "unpin", "3"}).exit_code, 0);
    EXPECT_EQ(run_perfwatch({"baseline", "--db", db, "unpin", "3"}).exit_code, 2);
}

TEST(HistoryCli, CheckAgainstAnExplicitBaselineFileOrRun) {
    test::TempDir dir;
    const std::string base = test::write_kineto_trace(dir, "base.json", 100, 200);
    const std::string slow = test::write_kineto_trace(dir, "slow.json", 112, 200);
    // Per-launch samples on both sides: the rank test decides with one baseline run.
    const auto r = run_perfwatch({"check", "--baseline", base, slow});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("gemm takes 112 us per launch (median), +12.0% against its baseline of 100"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("baseline: run 1 (given)"), std::string::npos) << r.out;
    // The same file as baseline: nothing changed.
    EXPECT_EQ(run_perfwatch({"check", "--baseline", base, test::write_kineto_trace(dir, "same.json", 100, 199)}).exit_code, 0);

    const std::string other_gpu = test::write_kineto_trace(dir, "a100.json", 100, 200, "NVIDIA A100");
    const auto refused = run_perfwatch({"check", "--baseline", other_gpu, slow});
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_NE(refused.err.find("runs on different GPU models are not compared"), std::string::npos) << refused.err;
}

TEST(HistoryCli, DiffOfTwoReportsAsText) {
    test::TempDir dir;
    const auto r = run_perfwatch({"diff", test::write_kineto_trace(dir, "a.json", 100), test::write_kineto_trace(dir, "b.json", 80)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("kernels: 0 added, 0 removed, 0 slower, 1 faster, 0 count changed, 0 unchanged"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("launches: 40 -> 40"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("-20.0%"), std::string::npos) << r.out;
    // Both sides hold per-launch samples: the rank test gives a confidence.
    const auto j = run_perfwatch({"diff", "--format", "json", "--kind", "kernel", dir.file("a.json"), dir.file("b.json")});
    const auto doc = nlohmann::json::parse(j.out);
    ASSERT_FALSE(doc["entries"][0]["confidence"].is_null()) << j.out;
    EXPECT_GT(doc["entries"][0]["confidence"].get<double>(), 0.999);
}

}  // namespace
}  // namespace perfwatch
