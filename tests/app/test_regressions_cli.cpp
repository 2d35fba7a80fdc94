#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/support.hpp"

namespace perfwatch {
namespace {

using test::run_perfwatch;

// Checks one run of the `gemm` benchmark at `us` per launch under commit c<i>.
test::ProcessResult check_run(const test::TempDir& dir, const std::string& db, int i, double us) {
    const std::string trace = test::write_kineto_trace(dir, fmt::format("c{}/gemm.json", i), us, 40, "NVIDIA H100",
                                                       1000.0 * (i + 1));
    return run_perfwatch({"check", "--db", db, "--label", fmt::format("commit=c{}", i), "--fail-on", "error", trace});
}

nlohmann::json open_regressions(const std::string& db) {
    const auto r = run_perfwatch({"regressions", "list", "--open", "--format", "json", "--db", db});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
}

}  // namespace

// A lasting shift stays open, and named at its first bad commit, until it is accepted; the next
// run at the new level then raises nothing.
TEST(RegressionsCli, AShiftStaysOpenUntilAcceptedThenTheNewLevelIsTheBaseline) {
    test::TempDir dir;
    const std::string db = dir.file("r.db");
    for (int i = 0; i < 8; ++i) ASSERT_EQ(check_run(dir, db, i, 100).exit_code, 0) << i;
    const auto opened = check_run(dir, db, 8, 115);
    EXPECT_EQ(opened.exit_code, 1) << opened.out;
    EXPECT_NE(opened.out.find("regression opened: kernel 'gemm' (kernel-time-regression)"), std::string::npos)
        << opened.out;
    // Six runs later the kernel is still slower: the gate stays red, the message names c8, and
    // the baseline is still the runs before it.
    test::ProcessResult last;
    for (int i = 9; i <= 14; ++i) {
        last = check_run(dir, db, i, 115);
        EXPECT_EQ(last.exit_code, 1) << i << ": " << last.out;
    }
    EXPECT_NE(last.out.find("gemm takes 115 us per launch (median), +15.0% against its baseline of 100 us"),
              std::string::npos)
        << last.out;
    EXPECT_NE(last.out.find("The shift began at commit c8 (run 9)"), std::string::npos) << last.out;
    EXPECT_NE(last.out.find("before run 9 (an open regression)"), std::string::npos) << last.out;
    EXPECT_EQ(last.out.find("regression opened"), std::string::npos) << "opened once: " << last.out;

    const nlohmann::json open = open_regressions(db);
    ASSERT_EQ(open.size(), 2u) << open.dump(2);  // the kernel and the run's GPU time
    for (const auto& r : open) {
        EXPECT_EQ(r["state"], "open");
        EXPECT_EQ(r["first_bad_run"], 9);
        EXPECT_EQ(r["first_bad"], "commit c8 (run 9)");
        EXPECT_EQ(r["last_bad_run"], 15);
        EXPECT_NEAR(r["change_pct"].get<double>(), 15.0, 0.01);
        EXPECT_NE(r["series"].get<std::string>().find("benchmark=gemm;"), std::string::npos) << r["series"];
    }
    const auto text = run_perfwatch({"regressions", "list", "--db", db});
    EXPECT_NE(text.out.find("open     kernel 'gemm' kernel-time-regression duration +15.0% (100 us -> 115 us)"),
              std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("series: gemm on NVIDIA H100, main"), std::string::npos) << text.out;
    // Bisection-ready: the last good and first bad commits with their levels (the traces' launches
    // average exactly 100 and 115 us).
    EXPECT_NE(text.out.find("bisect: last good commit c7 (run 8) at 100 us .. first bad commit c8 (run 9) at 115 us"),
              std::string::npos)
        << text.out;
    for (const auto& r : open) {
        EXPECT_EQ(r["bisect"]["last_good"]["run"], 8) << r.dump(2);
        EXPECT_EQ(r["bisect"]["last_good"]["commit"], "c7");
        EXPECT_EQ(r["bisect"]["first_bad"]["run"], 9);
        EXPECT_EQ(r["bisect"]["first_bad"]["commit"], "c8");
        if (r["entity"]["kind"] == "kernel") {
            EXPECT_NEAR(r["bisect"]["last_good"]["value"].get<double>(), 100e3, 1e-6);
            EXPECT_NEAR(r["bisect"]["first_bad"]["value"].get<double>(), 115e3, 1e-6);
        }
    }
    // `regressions show` prints the series around the change, run by run.
    const int kernel_id = open[0]["entity"]["kind"] == "kernel" ? open[0]["id"].get<int>() : open[1]["id"].get<int>();
    const auto shown = run_perfwatch({"regressions", "show", std::to_string(kernel_id), "--db", db});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    for (const char* line : {"      8  c7                   100 us  last good", "      9  c8                   115 us  first bad",
                             "     15  c14                  115 us  bad", "      1  c0                   100 us"})
        EXPECT_NE(shown.out.find(line), std::string::npos) << line << "\n" << shown.out;
    EXPECT_EQ(run_perfwatch({"regressions", "show", "999", "--db", db}).exit_code, 2);

    for (const auto& r : open) {
        const auto accepted = run_perfwatch({"regressions", "accept", std::to_string(r["id"].get<int>()), "--db", db,
                                             "--comment", "the new tiling is slower by design"});
        EXPECT_EQ(accepted.exit_code, 0) << accepted.err;
        EXPECT_NE(accepted.out.find("accepted"), std::string::npos) << accepted.out;
    }
    EXPECT_TRUE(open_regressions(db).empty());
    const auto again = run_perfwatch({"regressions", "accept", std::to_string(open[0]["id"].get<int>()), "--db", db});
    EXPECT_EQ(again.exit_code, 2);
    const auto next = check_run(dir, db, 15, 115);
    EXPECT_EQ(next.exit_code, 0) << next.out;
    EXPECT_EQ(next.out.find("regression"), std::string::npos) << next.out;
    EXPECT_NE(next.out.find("from run 9 (an accepted level)"), std::string::npos) << next.out;
    const auto listed = run_perfwatch({"regressions", "list", "--db", db});
    EXPECT_NE(listed.out.find("accepted at run 15: the new tiling is slower by design"), std::string::npos)
        << listed.out;
}

// A shift that goes back resolves after resolve_after runs inside the band, and its slow runs
// never enter a later baseline.
TEST(RegressionsCli, ARevertedShiftResolvesAndItsRunsStayOutOfTheBaseline) {
    test::TempDir dir;
    const std::string db = dir.file("r.db");
    for (int i = 0; i < 6; ++i) ASSERT_EQ(check_run(dir, db, i, 100).exit_code, 0) << i;
    for (int i = 6; i < 8; ++i) EXPECT_EQ(check_run(dir, db, i, 120).exit_code, 1) << i;
    // The finding and its JSON carry where a bisection starts: c5 (run 6) good at 100 us, c6 (run 7) bad at 120 us.
    const std::string trace = test::write_kineto_trace(dir, "c8/gemm.json", 120, 40, "NVIDIA H100", 9000.0);
    const auto json_run = run_perfwatch({"check", "--db", db, "--label", "commit=c8", "--format", "json", trace});
    EXPECT_EQ(json_run.exit_code, 1) << json_run.err;
    bool seen = false;
    const nlohmann::json doc = nlohmann::json::parse(json_run.out);
    for (const auto& f : doc["findings"]) {
        if (f["rule"] != "kernel-time-regression") continue;
        seen = true;
        const auto& c = f["comparison"];
        EXPECT_EQ(c["last_good"]["run"], 6) << c.dump(2);
        EXPECT_EQ(c["last_good"]["commit"], "c5");
        EXPECT_NEAR(c["last_good"]["value"].get<double>(), 100e3, 1e-6);
        EXPECT_EQ(c["first_bad"]["run"], 7);
        EXPECT_EQ(c["first_bad"]["commit"], "c6");
        EXPECT_NEAR(c["first_bad"]["value"].get<double>(), 120e3, 1e-6);
    }
    EXPECT_TRUE(seen) << json_run.out;
    test::ProcessResult back;
    for (int i = 9; i < 12; ++i) back = check_run(dir, db, i, 100);
    EXPECT_EQ(back.exit_code, 0) << back.out;
    EXPECT_NE(back.out.find("regression resolved: kernel 'gemm' (kernel-time-regression): back inside the band"),
              std::string::npos)
        << back.out;
    EXPECT_TRUE(open_regressions(db).empty());
    const auto after = check_run(dir, db, 12, 100);
    EXPECT_NE(after.out.find("not runs 7-9 (a regression)"), std::string::npos) << after.out;
}

// The same report bytes under six commits are six runs; the sixth is compared with the five before.
TEST(RegressionsCli, SixCommitsOfOneReportAreSixRuns) {
    test::TempDir dir;
    const std::string db = dir.file("r.db");
    const std::string trace = test::write_kineto_trace(dir, "bert.json", 100);
    test::ProcessResult r;
    for (int i = 1; i <= 6; ++i) {
        r = run_perfwatch({"check", "--db", db, "--label", fmt::format("commit=c{}", i), trace});
        EXPECT_NE(r.out.find(fmt::format("run {}: ", i)), std::string::npos) << r.out;
    }
    EXPECT_EQ(test::query_int(db, "SELECT count(*) FROM runs"), 6);
    EXPECT_EQ(test::query_int(db, "SELECT count(DISTINCT run_id) FROM entities"), 1);
    EXPECT_NE(r.out.find("baseline: last 5 comparable run(s) on main"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("benchmark: bert"), std::string::npos) << r.out;
}

}  // namespace perfwatch
