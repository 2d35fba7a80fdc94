#include <gtest/gtest.h>

#include <tuple>

#include "engine/evaluate.hpp"

namespace perfwatch {

namespace {

StoredRun two_kernel_run() {
    StoredRun run;
    run.id = 7;
    RunBatch& b = run.batch;
    const std::size_t r = b.run_entity();
    b.entities[r].set({"gpu_time", 1000, "ns", "", ""});
    Entity big;
    big.kind = EntityKind::kernel;
    big.name = "big";
    big.set({"duration_total", 900, "ns", "", ""});
    big.set({"waves_per_sm", 1.5, "count", "", ""});
    b.entities.push_back(big);  // index 1
    // Two launches of `big`: one has ncu's tail-effect result with 50%, the other none.
    for (double d : {600.0, 300.0}) {
        Entity l;
        l.kind = EntityKind::launch;
        l.name = "big launch";
        l.parent = 1;
        l.set({"duration", d, "ns", "", ""});
        if (d == 600.0) l.tool_findings.push_back({"LaunchConfiguration", "OPT", "", "a partial wave", "global", 50.0});
        b.entities.push_back(l);
    }
    Entity small;
    small.kind = EntityKind::kernel;
    small.name = "small";
    small.set({"duration_total", 100, "ns", "", ""});
    small.set({"waves_per_sm", 2.5, "count", "", ""});
    b.entities.push_back(small);
    Entity unknown;
    unknown.kind = EntityKind::kernel;
    unknown.name = "no waves";
    unknown.set({"duration_total", 0, "ns", "", ""});
    b.entities.push_back(unknown);
    return run;
}

RuleSet rules(const std::string& yaml) {
    RuleSet set = compile_rules({parse_rule_text("t.yaml", yaml)});
    EXPECT_FALSE(set.has_errors()) << (set.diagnostics.empty() ? "" : set.diagnostics[0].to_string());
    return set;
}

}  // namespace

TEST(Evaluate, ToolSpeedupIsDurationWeightedAndImpactRanks) {
    const RuleSet set = rules(
        "rules:\n"
        "  - id: tail\n"
        "    when: waves_per_sm - floor(waves_per_sm) > 0\n"
        "    message: \"{name}: {waves_per_sm} waves, {duration_total / run.gpu_time * 100:.0f}% of time\"\n"
        "    estimated_speedup: 100 / (1 + floor(waves_per_sm))\n"
        "    tool_finding: partial wave\n");
    const Evaluation ev = evaluate_run(set, two_kernel_run());
    EXPECT_EQ(ev.evaluated, 2u);
    EXPECT_EQ(ev.not_applicable, 1u);  // "no waves" lacks waves_per_sm
    ASSERT_EQ(ev.findings.size(), 2u);
    const Finding& first = ev.findings[0];
    EXPECT_EQ(first.entity_name, "big");
    EXPECT_EQ(first.run_id, 7);
    // (600 * 50 + 300 * 0) / 900 from the launches' own results, not the expression's 50.
    EXPECT_NEAR(first.estimated_speedup_pct.value_or(0), 100.0 / 3.0, 1e-9);
    EXPECT_DOUBLE_EQ(first.share_pct.value_or(0), 90);
    EXPECT_NEAR(first.impact.value_or(0), 30, 1e-9);
    EXPECT_EQ(first.message, "big: 1.5 waves, 90% of time");
    EXPECT_EQ(first.metrics.at("run.gpu_time"), 1000);
    const Finding& second = ev.findings[1];
    EXPECT_EQ(second.entity_name, "small");
    EXPECT_NEAR(second.estimated_speedup_pct.value_or(0), 100.0 / 3.0, 1e-9);  // from the expression
    EXPECT_NEAR(second.impact.value_or(0), 10.0 / 3.0, 1e-9);
}

// A kernel fix and a copy fix are ranked on one scale, the GPU's work: result_2_7B's shape (an
// SGEMM at 88% of 3.39 s of kernels, 4.46 s of pageable copies, each fix estimated at 50%).
TEST(Evaluate, KernelAndCopyImpactsAreSharesOfTheSameWork) {
    StoredRun run;
    RunBatch& b = run.batch;
    const std::size_t r = b.run_entity();
    b.entities[r].set({"gpu_time", 3.39e9, "ns", "", ""});
    b.entities[r].set({"memory_time", 4.46e9, "ns", "", ""});
    for (const auto& [kind, name, ns] : {std::tuple{EntityKind::kernel, "ampere_sgemm_128x64_tn", 0.883 * 3.39e9},
                                         std::tuple{EntityKind::memcpy, "[CUDA memcpy HtoD] (pageable)", 4.46e9}}) {
        Entity e;
        e.kind = kind;
        e.name = name;
        e.set({"duration_total", ns, "ns", "", ""});
        b.entities.push_back(e);
    }
    const RuleSet set = rules(
        "rules:\n"
        "  - id: kernel-fix\n    when: duration_total > 0\n    message: k\n    estimated_speedup: 50\n"
        "  - id: copy-fix\n    scope: memcpy\n    when: duration_total > 0\n    message: c\n    estimated_speedup: 50\n");
    const Evaluation ev = evaluate_run(set, run);
    ASSERT_EQ(ev.findings.size(), 2u);
    const double work = 3.39e9 + 4.46e9;
    EXPECT_EQ(ev.findings[0].rule, "copy-fix");
    EXPECT_NEAR(ev.findings[0].impact.value_or(0), 50.0 * 4.46e9 / work, 1e-9);
    EXPECT_EQ(ev.findings[1].rule, "kernel-fix");
    EXPECT_NEAR(ev.findings[1].impact.value_or(0), 50.0 * 0.883 * 3.39e9 / work, 1e-9);
    EXPECT_NEAR(ev.findings[1].share_pct.value_or(0), 88.3, 1e-9);  // its share is of kernel time
}

// Two FP32 GEMMs that one setting (TF32) moves, and a third kernel: the `fix: run` rule's two
// findings are one, on the larger, naming the other; share and impact are the two together. The
// same rule without `fix: run` tells each.
TEST(Evaluate, ARunWideFixIsOneFindingNamingEveryEntityItFixes) {
    StoredRun run;
    RunBatch& b = run.batch;
    b.entities[b.run_entity()].set({"gpu_time", 100e6, "ns", "", ""});
    for (const auto& [name, ns] : {std::pair{"sgemm_128x32", 37.5e6}, std::pair{"sgemm_128x64", 49.1e6},
                                   std::pair{"softmax", 13.4e6}}) {
        Entity e;
        e.kind = EntityKind::kernel;
        e.name = name;
        e.set({"duration_total", ns, "ns", "", ""});
        b.entities.push_back(e);
    }
    const std::string rule = "  - id: tf32\n    when: name ~ \"sgemm\"\n    message: allow TF32.\n    estimated_speedup: 50\n";
    const Evaluation merged = evaluate_run(rules("rules:\n" + rule + "    fix: run\n"), run);
    ASSERT_EQ(merged.findings.size(), 1u);
    const Finding& f = merged.findings[0];
    EXPECT_EQ(f.entity_name, "sgemm_128x64");
    EXPECT_EQ(f.message, "allow TF32. The same change fixes 1 more kernel: sgemm_128x32 (37.5%); together 86.6% of GPU time.");
    EXPECT_NEAR(f.share_pct.value_or(0), 49.1 + 37.5, 1e-9);
    EXPECT_NEAR(f.impact.value_or(0), (49.1 + 37.5) / 2, 1e-9);
    EXPECT_EQ(evaluate_run(rules("rules:\n" + rule), run).findings.size(), 2u);
}

TEST(Evaluate, FixMustBeEntityOrRun) {
    const RuleFile file = parse_rule_text("r.yaml", "rules:\n  - id: x\n    when: 1 > 0\n    message: m\n    fix: everything\n");
    ASSERT_EQ(file.diagnostics.size(), 1u);
    EXPECT_NE(file.diagnostics[0].message.find("'fix' must be entity or run, not 'everything'"), std::string::npos);
    EXPECT_EQ(file.diagnostics[0].loc.line, 5);
}

TEST(Evaluate, MinShareLeavesOutSmallEntities) {
    const RuleSet set = rules(
        "rules:\n"
        "  - id: any\n    when: duration_total >= 0\n    message: m\n    min_share: 50%\n");
    const Evaluation ev = evaluate_run(set, two_kernel_run());
    ASSERT_EQ(ev.findings.size(), 1u);
    EXPECT_EQ(ev.findings[0].entity_name, "big");  // 90%; small (10%) and "no waves" (0%) are left out
}

TEST(Evaluate, RunScopeAndRankingWithoutImpact) {
    const RuleSet set = rules(
        "rules:\n"
        "  - id: info-all\n    severity: info\n    when: duration_total >= 0\n    message: m\n"
        "  - id: run-level\n    severity: error\n    scope: run\n    when: run.gpu_time > 500ns\n    message: r\n");
    const Evaluation ev = evaluate_run(set, two_kernel_run());
    ASSERT_EQ(ev.findings.size(), 4u);
    EXPECT_EQ(ev.findings[0].rule, "run-level");  // errors before infos when no impact is known
    EXPECT_EQ(ev.findings[0].entity_kind, EntityKind::run);
    EXPECT_EQ(ev.findings[1].entity_name, "big");  // then by share of GPU time
    EXPECT_EQ(ev.findings[2].entity_name, "small");
}

}  // namespace perfwatch

namespace perfwatch {

// Kernel findings that could move the run by less than min_impact (1% by default) are one summary
// line on the run: how many, their share together, the largest by name; a rule can lower the bar.
TEST(Evaluate, KernelFindingsBelowMinImpactAreOneSummaryLine) {
    StoredRun run;
    run.id = 3;
    RunBatch& b = run.batch;
    b.entities[b.run_entity()].set({"gpu_time", 10000, "ns", "", ""});
    // One kernel at 90% of GPU time, twenty at 0.5% each (0.5% x 50% speedup = 0.25% impact).
    for (int i = 0; i <= 20; ++i) {
        Entity k;
        k.kind = EntityKind::kernel;
        k.name = i == 0 ? "gemm" : "tiny_" + std::to_string(i);
        k.set({"duration_total", i == 0 ? 9000.0 : 50.0, "ns", "", ""});
        k.set({"grid_size", 1, "count", "", ""});
        b.entities.push_back(k);
    }
    const std::string rule =
        "rules:\n"
        "  - id: small\n"
        "    title: Small grid\n"
        "    when: grid_size < 80\n"
        "    message: \"{name} has a small grid\"\n"
        "    estimated_speedup: 50\n";
    const Evaluation e = evaluate_run(rules(rule), run, {});
    ASSERT_EQ(e.findings.size(), 2u);
    EXPECT_EQ(e.findings[0].entity_name, "gemm");
    EXPECT_EQ(e.findings[0].severity, Severity::warning);
    const Finding& summary = e.findings[1];
    EXPECT_EQ(summary.entity_kind, EntityKind::run);
    EXPECT_EQ(summary.severity, Severity::info);
    EXPECT_EQ(summary.rule, "small");
    // 20 x 0.5% of GPU time; each gains 0.25%, together 5%.
    EXPECT_NEAR(*summary.share_pct, 10.0, 1e-9);
    EXPECT_NEAR(*summary.impact, 5.0, 1e-9);
    EXPECT_NE(summary.message.find("20 kernels where this holds, together 10.0% of GPU time (estimated gain together "
                                   "5.00% of it); each could move the run by less than 1% (min_impact)"),
              std::string::npos)
        << summary.message;
    EXPECT_NE(summary.message.find("and 17 more."), std::string::npos) << summary.message;
    // min_impact: 0 tells each on its own.
    const Evaluation every = evaluate_run(rules(rule + "    min_impact: 0\n"), run, {});
    EXPECT_EQ(every.findings.size(), 21u);
}

}  // namespace perfwatch
