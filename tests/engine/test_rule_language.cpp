#include <gtest/gtest.h>

#include "engine/evaluate.hpp"
#include "engine/rules.hpp"
#include "tests/engine/diagnostics_text.hpp"

namespace perfwatch {

namespace {

// A run of kernels with the given total durations (ns) and a gpu_time that is their sum.
StoredRun kernels(const std::vector<std::pair<std::string, double>>& ks) {
    StoredRun run;
    run.id = 1;
    RunBatch& b = run.batch;
    const std::size_t r = b.run_entity();
    double total = 0;
    for (const auto& [name, t] : ks) {
        Entity e;
        e.kind = EntityKind::kernel;
        e.name = name;
        e.parent = static_cast<std::int64_t>(r);
        e.set({"duration_total", t, "ns", "", ""});
        e.set({"launches", 1, "count", "", ""});
        b.entities.push_back(e);
        total += t;
    }
    b.entities[r].set({"gpu_time", total, "ns", "", ""});
    b.entities[r].set({"kernels", static_cast<double>(ks.size()), "count", "", ""});
    return run;
}

std::vector<std::string> fired(const RuleSet& set, const StoredRun& run) {
    std::vector<std::string> out;
    for (const Finding& f : evaluate_run(set, run).findings) out.push_back(f.rule + ":" + f.entity_name + ":" + f.message);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST(RuleLanguage, LetMacrosListsAndAggregates) {
    const RuleSet set = compile_rules({parse_rule_text("a.yaml", R"(
lists:
  comm_kernels: [ncclAllReduce, ncclBroadcast]
macros:
  is_gemm: 'name ~ "gemm"'
rules:
  - id: big-gemm
    scope: kernel
    let: {share: 100 * duration_total / run.gpu_time}
    when: is_gemm and share >= 20
    message: "{name} {share:.0f}% rank {rank(duration_total):.0f} of {count(kernel):.0f}"
  - id: comm
    scope: kernel
    when: name in comm_kernels
    message: "{name}: comm kernels total {sum(kernel, duration_total, name in comm_kernels):.0f} ns"
  - id: top2
    scope: run
    when: top(kernel, duration_total, 2) >= 0.8 * gpu_time and count(kernel, duration_total < 100) >= 1
    message: "top 2 kernels {100 * top(kernel, duration_total, 2) / gpu_time:.0f}%"
)")});
    ASSERT_FALSE(set.has_errors()) << all(set.diagnostics);
    EXPECT_TRUE(set.diagnostics.empty()) << all(set.diagnostics);
    const StoredRun run = kernels({{"sgemm", 600}, {"ncclAllReduce", 250}, {"hgemm", 90}, {"ncclBroadcast", 60}});
    const std::vector<std::string> expected{
        "big-gemm:sgemm:sgemm 60% rank 1 of 4",
        "comm:ncclAllReduce:ncclAllReduce: comm kernels total 310 ns",
        "comm:ncclBroadcast:ncclBroadcast: comm kernels total 310 ns",
        "top2::top 2 kernels 85%",
    };
    auto got = fired(set, run);
    for (auto& g : got)
        if (g.starts_with("top2:")) g = "top2::" + g.substr(g.find(':', 5) + 1);
    EXPECT_EQ(got, expected);
}

TEST(RuleLanguage, UserFileOverridesThresholdsAppendsAndDisables) {
    const std::string shipped = R"(
rules:
  - id: slow
    scope: kernel
    let: {limit: 500}
    when: duration_total > limit
    message: "{name} over {limit:.0f}"
  - id: noisy
    scope: kernel
    when: duration_total > 0
    message: "{name}"
)";
    const std::string user = R"(
rules:
  - id: slow
    override: true
    severity: error
    let: {limit: 100}
    append: 'name !~ "warmup"'
  - id: noisy
    enabled: false
)";
    const RuleSet set = compile_rules({parse_rule_text("shipped.yaml", shipped), parse_rule_text("team.yaml", user)});
    ASSERT_FALSE(set.has_errors()) << all(set.diagnostics);
    ASSERT_EQ(set.rules.size(), 1u);
    ASSERT_EQ(set.disabled.size(), 1u);
    EXPECT_EQ(set.disabled[0].id, "noisy");
    const CompiledRule& slow = set.rules[0];
    EXPECT_EQ(slow.spec.severity, Severity::error);
    ASSERT_EQ(slow.spec.overridden_at.size(), 1u);
    EXPECT_EQ(slow.spec.overridden_at[0].file, "team.yaml");
    EXPECT_EQ(slow.spec.overridden_at[0].line, 3);
    const auto got = fired(set, kernels({{"gemm", 300}, {"warmup_gemm", 300}, {"tiny", 50}}));
    EXPECT_EQ(got, std::vector<std::string>{"slow:gemm:gemm over 100"});
}

TEST(RuleLanguage, MistakesAreDiagnosedWithTheirPlace) {
    const std::string yaml =
        "lists:\n"                                            // 1
        "  gpus: [a100, h100]\n"                              // 2
        "macros:\n"                                           // 3
        "  duration: 'duration_total'\n"                      // 4: hides a metric
        "  never_used: 'launches > 1'\n"                      // 5
        "rules:\n"                                            // 6
        "  - id: a\n"                                         // 7
        "    let: {unused: 1, x: 'count(widget)'}\n"          // 8
        "    when: gpus > 1\n"                                // 9
        "    message: m\n"                                    // 10
        "  - id: ghost\n"                                     // 11
        "    override: true\n"                                // 12
        "    severity: error\n"                               // 13
        "  - id: b\n"                                         // 14
        "    when: name in nothing or rank(name) > 1\n"       // 15
        "    message: m\n";                                   // 16
    const RuleSet set = compile_rules({parse_rule_text("bad.yaml", yaml)});
    std::vector<std::string> got;
    for (const Diagnostic& d : set.diagnostics) got.push_back(d.to_string().substr(0, d.to_string().find('\n')));
    const std::vector<std::string> expected{
        "bad.yaml:4:13: error: macro 'duration' would hide the metric or keyword of that name",
        "bad.yaml:11:5: error: rule 'ghost': no rule of this id in an earlier file to override (override, append and "
        "enabled change a rule loaded before this file)",
        "bad.yaml:8:32: error: rule 'a': let x: count() takes an entity kind first (kernel, launch, memcpy, api_call, "
        "nvtx_range, device)",
        "bad.yaml:9:11: error: rule 'a': when: 'gpus' is a list: use it as `name in gpus`",
        "bad.yaml:15:19: error: rule 'b': when: right of 'in' must name a list defined under 'lists:'",
        "bad.yaml:15:35: error: rule 'b': when: rank() needs a number, found a string",
        "bad.yaml:5:15: warning: 'never_used' is defined but no rule uses it",
    };
    EXPECT_EQ(got, expected) << all(set.diagnostics);
}

// rank() ranks among entities of the current entity's kind, even in a macro shared by rules of
// different scopes.
TEST(RuleLanguage, RankInASharedMacroRanksWithinEachScope) {
    const RuleSet set = compile_rules({parse_rule_text("r.yaml", R"(macros:
  first: rank(duration_total) == 1
rules:
  - {id: top-kernel, scope: kernel, when: first, message: "{name}"}
  - {id: top-copy, scope: memcpy, when: first, message: "{name}"}
)")});
    ASSERT_FALSE(set.has_errors()) << all(set.diagnostics);
    StoredRun run = kernels({{"gemm", 100}, {"relu", 50}});
    for (const auto& [name, t] : {std::pair<std::string, double>{"[CUDA memcpy HtoD]", 10}, {"[CUDA memcpy DtoH]", 5}}) {
        Entity e;
        e.kind = EntityKind::memcpy;
        e.name = name;
        e.set({"duration_total", t, "ns", "", ""});
        run.batch.entities.push_back(e);
    }
    EXPECT_EQ(fired(set, run), (std::vector<std::string>{"top-copy:[CUDA memcpy HtoD]:[CUDA memcpy HtoD]",
                                                          "top-kernel:gemm:gemm"}));
}

TEST(RuleLanguage, LetsCannotHideAttributes) {
    const RuleSet set = compile_rules({parse_rule_text("h.yaml", R"(rules:
  - id: h
    let: {device: '"GPU 0"'}
    when: device == "GPU 1"
    message: m
)")});
    ASSERT_TRUE(set.has_errors());
    EXPECT_EQ(set.diagnostics[0].to_string().substr(0, 73),
              "h.yaml:3:19: error: rule 'h': let 'device' would hide the attribute of th");
}

TEST(RuleLanguage, UnusedLetAndUnguardedMessageMetricsWarn) {
    const RuleSet set = compile_rules({parse_rule_text("w.yaml", R"(rules:
  - id: w
    let: {spare: 1}
    when: duration_total > 1ms
    message: "{launches:.0f} launches[[ at {occupancy_achieved:.0f}%]]"
)")});
    EXPECT_FALSE(set.has_errors());
    ASSERT_EQ(set.diagnostics.size(), 2u) << all(set.diagnostics);
    EXPECT_EQ(set.diagnostics[0].to_string().substr(0, 55), "w.yaml:3:18: warning: rule 'w': let 'spare' is never us");
    EXPECT_NE(set.diagnostics[1].message.find("message prints 'launches'"), std::string::npos);
}

}  // namespace perfwatch
