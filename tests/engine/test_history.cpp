#include <gtest/gtest.h>

#include <fmt/format.h>

#include "engine/history.hpp"
#include "engine/pipeline.hpp"
#include "engine/rules.hpp"

namespace perfwatch {
namespace {

RunBatch run_with(double gemm_ns, Labels labels, int serial) {
    RunBatch b;
    b.format = "test";
    b.source = fmt::format("run{}.json", serial);
    b.sha256 = fmt::format("sha-{}", serial);
    b.labels = std::move(labels);
    b.entities[b.run_entity()].set(Metric{"gpu_time", gemm_ns * 10, "ns", "", ""});
    Entity k;
    k.kind = EntityKind::kernel;
    k.name = "gemm";
    k.set(Metric{"duration", gemm_ns, "ns", "", ""});
    k.set(Metric{"duration_total", gemm_ns * 10, "ns", "", ""});
    b.entities.push_back(std::move(k));
    return b;
}

class HistoryTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto db = Db::open(":memory:");
        ASSERT_TRUE(db) << db.error().to_string();
        m_db.emplace(std::move(*db));
    }

    std::int64_t add(double gemm_ns, Labels labels = {{"project", "p"}, {"gpu", "NVIDIA H100"}}) {
        auto stored = m_db->store(run_with(gemm_ns, std::move(labels), ++m_serial));
        EXPECT_TRUE(stored && stored->inserted);
        return stored->run_id;
    }

    StoredRun load(std::int64_t id) { return **m_db->load(id); }

    std::optional<Db> m_db;
    int m_serial = 0;
};

TEST(Comparable, SameGpuAndConfigurationButAnyCommitOrBranch) {
    const Labels a{{"project", "p"}, {"gpu", "H100"}, {"batch", "32"}, {"commit", "abc"}, {"branch", "main"}};
    Labels b = a;
    b["commit"] = "def";
    b["branch"] = "feature";
    EXPECT_TRUE(comparable(a, b, {}));
    b["gpu"] = "A100";
    EXPECT_FALSE(comparable(a, b, {}));  // another GPU model, whatever the rule's match list says
    EXPECT_FALSE(comparable(a, b, {"project"}));
    b = a;
    b["batch"] = "64";
    EXPECT_FALSE(comparable(a, b, {}));
    EXPECT_TRUE(comparable(a, b, {"project"}));  // the rule names the labels that must match
    Labels unknown = a;
    unknown.erase("gpu");
    EXPECT_FALSE(comparable(a, unknown, {}));
    EXPECT_EQ(series_key(a, {}), "batch=32;project=p;gpu=H100;branch=main");
}

TEST_F(HistoryTest, BaselineIsTheLastComparableRunsOnTheBaselineBranch) {
    const Labels h100{{"project", "p"}, {"gpu", "NVIDIA H100"}};
    Labels a100 = h100, feature = h100, other = h100;
    a100["gpu"] = "NVIDIA A100";
    feature["branch"] = "feature";
    other["project"] = "q";
    const auto r1 = add(100, h100);
    add(100, a100);
    add(100, feature);
    add(100, other);
    const auto r5 = add(100, h100);
    const auto current = add(100, feature);
    BaselineSpec spec;
    auto b = select_baseline(*m_db, load(current), spec);
    ASSERT_TRUE(b) << b.error().to_string();
    ASSERT_EQ(b->runs.size(), 2u);
    EXPECT_EQ(b->runs[0]->id, r1);  // oldest first; A100, feature-branch and other-project runs left out
    EXPECT_EQ(b->runs[1]->id, r5);
    spec.runs = 1;
    EXPECT_EQ(select_baseline(*m_db, load(current), spec)->runs.at(0)->id, r5);

    // Through a cache: the same runs, each read from the database once.
    RunCache cache;
    auto cached = select_baseline(*m_db, load(current), spec, &cache);
    ASSERT_TRUE(cached);
    ASSERT_EQ(cached->runs.size(), 1u);
    EXPECT_EQ(cached->runs[0]->id, r5);
    EXPECT_EQ(cache.get(*m_db, r5)->get(), cached->runs[0].get());
    EXPECT_GT(cache.bytes(), 0u);
    EXPECT_EQ(cache.get(*m_db, 999)->get(), nullptr);
    // Bounded: with room for one run, an older one is read again.
    RunCache small(1);
    const auto first = *small.get(*m_db, r1);
    ASSERT_TRUE(small.get(*m_db, r5));
    EXPECT_NE(small.get(*m_db, r1)->get(), first.get());

    // A pin replaces the window: the pinned run and the comparable runs of its branch before it.
    ASSERT_TRUE(*m_db->pins().pin(r1, "release 1.0"));
    spec.runs = 10;
    b = select_baseline(*m_db, load(current), spec);
    ASSERT_TRUE(b);
    ASSERT_EQ(b->runs.size(), 1u);
    EXPECT_EQ(b->runs[0]->id, r1);
    EXPECT_EQ(b->description, fmt::format("pinned run {} and 0 earlier comparable run(s) on main", r1));

    // An explicit baseline on another GPU model is refused.
    const auto on_a100 = explicit_baseline(*m_db, load(current), 2);
    ASSERT_FALSE(on_a100);
    EXPECT_NE(on_a100.error().message.find("ran on NVIDIA A100, run 6 on NVIDIA H100"), std::string::npos)
        << on_a100.error().message;
}

TEST_F(HistoryTest, FirstBadRunIsWhereTheShiftBegan) {
    const double values[] = {100, 101, 99, 100, 102, 98, 100, 101, 130, 131};
    std::vector<std::int64_t> ids;
    for (double v : values) ids.push_back(add(v));
    const auto current = add(129);
    const StoredRun run = load(current);
    auto b = select_baseline(*m_db, run, {});
    ASSERT_TRUE(b);
    const RunHistory history(std::move(*b), run.batch);
    const Entity& gemm = run.batch.entities.at(1);
    EXPECT_EQ(history.first_bad_run(gemm, "duration", current), ids[8]);
    // A single slow run: the shift began with it.
    auto only = add(100);
    const auto spike = add(140);
    (void)only;
    const StoredRun spike_run = load(spike);
    auto b2 = select_baseline(*m_db, spike_run, {});
    const RunHistory h2(std::move(*b2), spike_run.batch);
    EXPECT_EQ(h2.first_bad_run(spike_run.batch.entities.at(1), "duration", spike), spike);
}

constexpr const char* k_rule = R"YAML(
rules:
  - id: slow
    scope: kernel
    when: "regressed(duration, min_change: 5%, confidence: 0.99)"
    message: "{name} {change(duration):+.0f}% since {first_bad(duration)}"
    resolve_after: 2
)YAML";

TEST_F(HistoryTest, ARegressionOpensOnceAndResolvesAfterRunsBackInsideTheBand) {
    const RuleSet rules = compile_rules({parse_rule_text("t.yaml", k_rule)});
    ASSERT_FALSE(rules.has_errors());
    auto process = [&](double v) {
        const auto id = add(v);
        auto out = process_run(*m_db, rules, load(id));
        EXPECT_TRUE(out) << out.error().to_string();
        return std::make_pair(id, std::move(*out));
    };
    for (double v : {100.0, 101.0, 99.0, 100.0, 102.0, 98.0}) {
        auto [id, out] = process(v);
        EXPECT_TRUE(out.evaluation.findings.empty());
        EXPECT_TRUE(out.events.empty());
    }
    auto [bad, opened] = process(130);
    ASSERT_EQ(opened.evaluation.findings.size(), 1u);
    EXPECT_EQ(opened.evaluation.findings[0].message, fmt::format("gemm +30% since run {}", bad));
    ASSERT_EQ(opened.events.size(), 1u);
    EXPECT_EQ(opened.events[0].kind, RegressionEvent::Kind::opened);
    EXPECT_EQ(opened.events[0].state.baseline, 100);
    // Back inside means nearer the baseline (100) than the level it opened at (130): 115.
    EXPECT_DOUBLE_EQ(opened.events[0].state.band_limit, 115);

    auto [still, again] = process(131);  // still slow: the open regression continues, no new event
    EXPECT_EQ(again.evaluation.findings.size(), 1u);
    EXPECT_TRUE(again.events.empty());
    // Processing the same run again changes nothing.
    EXPECT_TRUE(process_run(*m_db, rules, load(still))->events.empty());

    auto [first_back, one] = process(100);
    EXPECT_TRUE(one.events.empty());  // one run back inside is not enough (resolve_after: 2)
    auto [second_back, two] = process(101);
    ASSERT_EQ(two.events.size(), 1u);
    EXPECT_EQ(two.events[0].kind, RegressionEvent::Kind::resolved);
    EXPECT_EQ(two.events[0].state.resolved_run, second_back);
    EXPECT_TRUE(m_db->regressions().list(true)->empty());
    EXPECT_EQ(m_db->regressions().list(false)->size(), 1u);
    (void)first_back;
}

TEST_F(HistoryTest, ABaselineOnAnotherGpuIsNeverUsed) {
    const RuleSet rules = compile_rules({parse_rule_text("t.yaml", k_rule)});
    for (double v : {100.0, 101.0, 99.0, 100.0}) add(v, {{"project", "p"}, {"gpu", "NVIDIA A100"}});
    const auto id = add(200, {{"project", "p"}, {"gpu", "NVIDIA H100"}});
    auto out = process_run(*m_db, rules, load(id));
    ASSERT_TRUE(out);
    EXPECT_TRUE(out->evaluation.findings.empty());
    EXPECT_EQ(out->evaluation.not_applicable, 1u);
    EXPECT_EQ(out->baselines, std::vector<std::string>{"no comparable run on main yet"});
}

}  // namespace
}  // namespace perfwatch
