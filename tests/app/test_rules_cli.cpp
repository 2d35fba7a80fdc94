#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "app/rule_tests.hpp"
#include "engine/rules.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

using test::write_file;

std::vector<std::string> shipped_tests() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(std::string(PERFWATCH_SOURCE_DIR) + "/rules/tests"))
        if (e.path().extension() == ".yaml") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

// Every shipped rule has tests that pass; with the corpus present, each one fires in a test.
TEST(RulePacks, ShippedRuleTestsPassAndCoverEveryRule) {
    const auto corpus = corpus_dir();
    if (corpus) setenv("PERFWATCH_CORPUS", corpus->c_str(), 1);
    const RuleTestSummary s = run_rule_tests(shipped_tests());
    std::string messages;
    for (const std::string& m : s.messages) messages += m + "\n";
    EXPECT_FALSE(s.broken) << messages;
    EXPECT_EQ(s.failed, 0) << messages;
    EXPECT_GE(s.tests, 10);

    const RuleSet shipped = compile_rules(load_rule_files({}));
    std::string all_tests;
    for (const std::string& f : shipped_tests()) all_tests += read_file(f);
    for (const CompiledRule& r : shipped.rules) {
        const std::regex named("rule: " + r.spec.id + "\\b");
        EXPECT_TRUE(std::regex_search(all_tests, named)) << r.spec.id << " has no test expecting it";
        if (corpus) {
            EXPECT_TRUE(std::find(s.fired.begin(), s.fired.end(), r.spec.id) != s.fired.end())
                << r.spec.id << " fired in no passing test";
        }
    }
    if (!corpus) GTEST_SKIP() << "corpus not found: rules covered only by corpus reports were not run";
}

// The README's rule test example must stay valid (its rule_files line names a file of the reader's).
TEST(RulesCli, ReadmeTestExamplePasses) {
    const std::string readme = read_file(std::string(PERFWATCH_SOURCE_DIR) + "/README.md");
    const std::size_t start = readme.find("rule_files: [team.yaml]");
    ASSERT_NE(start, std::string::npos);
    const std::size_t body = readme.find('\n', start) + 1;
    const std::size_t end = readme.find("```", body);
    TempDir dir;
    const std::string t = dir.file("readme_test.yaml");
    write_file(t, readme.substr(body, end - body));
    const auto corpus = corpus_dir();
    if (corpus) setenv("PERFWATCH_CORPUS", corpus->c_str(), 1);
    const RuleTestSummary s = run_rule_tests({t});
    EXPECT_EQ(s.tests, 3);
    EXPECT_EQ(s.failed, 0) << (s.messages.empty() ? "" : s.messages[0]);
    EXPECT_FALSE(s.broken);
}

TEST(RulesCli, TestCommandReportsFailuresAndExitsOne) {
    TempDir dir;
    const std::string t = dir.file("t.yaml");
    write_file(t, R"(tests:
  - name: wrong message
    entities:
      - {kind: run, metrics: {gpu_time: 1ms}}
      - {kind: kernel, name: reduce_final, metrics: {duration_total: 1ms, grid_size: 8, sm_count: 108}}
    expect:
      - {rule: ncu-small-grid, message_contains: "9 blocks"}
  - name: right
    entities:
      - {kind: kernel, name: k, metrics: {grid_size: 8, sm_count: 108}}
    expect: [ncu-small-grid]
)");
    const auto r = run_perfwatch({"rules", "test", t});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("2 test(s): 1 passed, 1 failed, 0 skipped"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find(t + ":2:5: test 'wrong message': FAILED"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("got 'ncu-small-grid' on kernel 'reduce_final': small grid: 8 blocks for 108 SMs"),
              std::string::npos)
        << r.err;
    const auto shipped = run_perfwatch({"rules", "test", std::string(PERFWATCH_SOURCE_DIR) + "/rules/tests/hotspots_test.yaml"});
    EXPECT_EQ(shipped.exit_code, 0) << shipped.err;
}

TEST(RulesCli, LintReportsEveryErrorWithLineAndColumn) {
    TempDir dir;
    const std::string a = dir.file("a.yaml"), b = dir.file("b.yaml"), good = dir.file("good.yaml");
    write_file(a, "rules:\n  - id: x\n    when: occupancy_achieved < 50 and nme ~ \"gemm\"\n    message: m\n    sevrity: error\n");
    write_file(b, "rules:\n  - id: ncu-tail-effect\n    override: true\n    let: {min_tail_pct: '30%%'}\n");
    write_file(good, "rules:\n  - id: ncu-tail-effect\n    override: true\n    let: {min_tail_pct: 30}\n");
    const auto r = run_perfwatch({"rules", "lint", a, b});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(a + ":5:5: error: rule 'x': unknown key 'sevrity'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(a + ":3:39: error: rule 'x': when: unknown metric 'nme'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(b + ":4:29: error: rule 'ncu-tail-effect': let min_tail_pct:"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("3 error(s)"), std::string::npos) << r.out;
    const auto ok = run_perfwatch({"rules", "lint", good});
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST(RulesCli, ListShowsTheEffectiveRules) {
    TempDir dir;
    const std::string team = dir.file("team.yaml");
    write_file(team, R"(rules:
  - id: ncu-small-grid
    enabled: false
  - id: ncu-tail-effect
    override: true
    severity: error
    append: 'name !~ "warmup"'
)");
    const auto r = run_perfwatch({"rules", "list", "-v", team});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(ncu-tail-effect +error +kernel +rules/ncu.yaml:\d+:5 \(overridden\))")))
        << r.out;
    EXPECT_NE(r.out.find("    overridden at " + team + ":4:5"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("      and: name !~ \"warmup\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("    let min_tail_pct = 20"), std::string::npos) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(ncu-small-grid +disabled)"))) << r.out;
    // The configuration's rule files are part of the effective set too.
    const std::string cfg = dir.file("perfwatch.yaml");
    write_file(cfg, "rules: [team.yaml]\n");
    const auto c = run_perfwatch({"--config", cfg, "rules", "list"});
    EXPECT_TRUE(std::regex_search(c.out, std::regex(R"(ncu-small-grid +disabled)"))) << c.out << c.err;
}

// Directories stand for the *.yaml files directly in them, sorted: the shipped packs lint clean,
// and the shipped tests run, each counted as run_rule_tests counts the files one by one.
TEST(RulesCli, LintAndTestTakeDirectories) {
    const std::string root = PERFWATCH_SOURCE_DIR;
    std::size_t packs = 0;
    for (const auto& e : std::filesystem::directory_iterator(root + "/rules"))
        if (e.path().extension() == ".yaml") ++packs;
    ASSERT_GT(packs, 0u);
    const auto lint = run_perfwatch({"rules", "lint", root + "/rules"});
    EXPECT_EQ(lint.exit_code, 0) << lint.err;
    EXPECT_NE(lint.out.find(fmt::format("{} rule file(s)", packs)), std::string::npos) << lint.out;
    EXPECT_NE(lint.out.find(": 0 error(s)"), std::string::npos) << lint.out;

    const auto tests = run_perfwatch({"rules", "test", root + "/rules/tests"});
    EXPECT_EQ(tests.exit_code, 0) << tests.err;
    const RuleTestSummary expected = run_rule_tests(shipped_tests());
    EXPECT_NE(tests.out.find(fmt::format("{} test(s): {} passed", expected.tests, expected.tests - expected.skipped)),
              std::string::npos)
        << tests.out;
}

// A changed threshold backtested on a database of corpus runs: what it would add and remove.
// Figures from tests/fixtures/verdicts/kineto_timeline.tsv (walk_kineto.py): short kernels are
// 42.93% of nccl's 2,700 launches (GPU idle 76%, most of it between launches), 63.91% of resnet50's
// 9,564 (idle 29.6%, two thirds of it in host gaps: not launch-bound) and 38.99% of ns-resolution's
// 4,350 (idle 1.6%, its launches queued behind busy work: host-ahead).
TEST(RulesCli, BacktestListsWhatAChangedThresholdAddsAndRemoves) {
    PERFWATCH_CORPUS_FILE(nccl, "kineto/hta__nccl_parser_config__nccl_data.json.gz");
    const std::string resnet = (*nccl_dir / "kineto/kineto__tb_plugin_samples_resnet50_profiler_api_num_workers_0__worker0.pt.trace.json.gz").string();
    const std::string ns = (*nccl_dir / "kineto/hta__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz").string();
    TempDir dir;
    const std::string db = dir.file("runs.db");
    ASSERT_EQ(run_perfwatch({"ingest", "--db", db, nccl, resnet, ns}).exit_code, 0);

    write_file(dir.path() / "lower.yaml", "rules:\n  - {id: launch-short-kernels, override: true, let: {min_short_pct: 40}}\n");
    const auto lower = run_perfwatch({"rules", "backtest", "--db", db, "--rules", dir.file("lower.yaml")});
    ASSERT_EQ(lower.exit_code, 0) << lower.err;
    EXPECT_NE(lower.out.find("backtest of 1 rule over 3 stored runs"), std::string::npos) << lower.out;
    EXPECT_NE(lower.out.find("launch-short-kernels (changed): 1 finding in 1 run; in effect: 0 in 0 runs; 1 added, 0 removed"),
              std::string::npos)
        << lower.out;
    EXPECT_NE(lower.out.find("+ run 1 report 'hta__nccl_parser_config__nccl_data.json.gz': 43% of 2700 kernel launches"),
              std::string::npos)
        << lower.out;

    write_file(dir.path() / "higher.yaml",
               "rules:\n  - {id: launch-queued-behind-busy-gpu, override: true, let: {min_idle_pct: 1}}\n");
    const auto higher = run_perfwatch({"rules", "backtest", "--db", db, "--rules", dir.file("higher.yaml"), "--label", "nothing=here"});
    ASSERT_EQ(higher.exit_code, 0) << higher.err;
    EXPECT_NE(higher.out.find("over 0 stored runs with nothing=here"), std::string::npos) << higher.out;
    const auto all = run_perfwatch({"rules", "backtest", "--db", db, "--rules", dir.file("higher.yaml"), "--since", "1d"});
    EXPECT_NE(all.out.find("launch-queued-behind-busy-gpu (changed): 0 findings in 0 runs; in effect: 1 in 1 run; 0 added, 1 removed"),
              std::string::npos)
        << all.out;
    EXPECT_NE(all.out.find("- run 3 report 'hta__ns_resolution_trace"), std::string::npos) << all.out;
}

}  // namespace perfwatch::test
