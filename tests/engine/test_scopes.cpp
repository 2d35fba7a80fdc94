#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <random>

#include "collectors/collector.hpp"
#include "engine/rules.hpp"
#include "engine/scopes.hpp"
#include "tests/support.hpp"

namespace perfwatch {

namespace {

Truth truth_of(const Value& v) {
    if (const bool* b = std::get_if<bool>(&v)) return *b ? Truth::yes : Truth::no;
    return Truth::missing;
}

const char* text_of(Truth t) { return t == Truth::yes ? "true" : t == Truth::no ? "false" : "missing"; }

// Every row of `batch`'s entities of `kind`: the condition decided over the rows equals the
// condition evaluated on the row's entity alone. Returns the rows compared.
std::size_t expect_rows_equal_entities(const RunBatch& batch, EntityKind kind, const Expression& when,
                                       const std::string& what) {
    const Entity* run = nullptr;
    for (const Entity& e : batch.entities)
        if (e.kind == EntityKind::run) run = &e;
    AggregateMemo memo;
    RunRows rows(batch, kind, run, &memo, 1);
    rows.gather(when.metrics_read());
    const std::vector<Truth> decided = when.decide_rows(rows);
    EXPECT_EQ(decided.size(), rows.rows());
    int shown = 0;
    for (std::size_t r = 0; r < rows.rows() && r < decided.size(); ++r) {
        Truth alone = Truth::missing;
        rows.with_row(r, [&](const EvalScope& s) { alone = truth_of(when.evaluate(s)); });
        if (decided[r] != alone && shown++ < 3)
            ADD_FAILURE() << what << ": row " << r << " (" << batch.entities[rows.entity(r)].name << ") decided "
                          << text_of(decided[r]) << " over the rows, " << text_of(alone) << " alone";
    }
    return rows.rows();
}

// Kernels whose metrics come and go (so layouts change from row to row), with names and
// attributes that the expressions below test.
RunBatch varied_kernels(std::size_t n) {
    RunBatch b;
    b.entities[b.run_entity()].set({"gpu_time", 1e6, "ns", "", ""});
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(0, 1);
    const std::vector<std::string> names{"sgemm_128", "cutlass_gemm_bf16", "elementwise_add", "nccl_AllReduce", "Cijk_gemm"};
    for (std::size_t i = 0; i < n; ++i) {
        Entity e;
        e.kind = EntityKind::kernel;
        e.name = fmt::format("{} #{}", names[i % names.size()], i);
        // Metrics in varying order and presence.
        if (u(rng) < 0.9) e.set({"duration_total", std::floor(u(rng) * 1000), "ns", "", ""});
        if (u(rng) < 0.7) e.set({"waves_per_sm", u(rng) * 4, "count", "", ""});
        if (u(rng) < 0.5) e.set({"grid_size", std::floor(u(rng) * 300), "count", "", ""});
        if (u(rng) < 0.8) e.set({"launches", std::floor(u(rng) * 3), "count", "", ""});  // 0 at times: division
        if (u(rng) < 0.6) e.attributes["cc"] = u(rng) < 0.5 ? "9.0" : "6.1";
        if (u(rng) < 0.3) e.attributes["occupancy_limiter"] = "registers";
        b.entities.push_back(std::move(e));
    }
    return b;
}

}  // namespace

// Each construct of the language over rows with metrics and attributes present on some rows
// only: three-valued and/or, comparisons of strings, arithmetic with division by zero, if() with
// strings, present(), lists, matches, rank, aggregates, functions and metric()/attr().
TEST(RunRows, EveryConstructDecidesEachRowAsItsEntityAlone) {
    const RunBatch batch = varied_kernels(500);
    Definitions defs;
    std::vector<ExprError> errors;
    defs.define_list("collectives", {"nccl_AllReduce #3", "sgemm_128 #0"});
    const std::vector<std::string> conditions{
        "waves_per_sm > 1 and grid_size < 100",
        "waves_per_sm > 1 or grid_size < 100",
        "not (waves_per_sm > 2) or name ~ \"gemm\"",
        "duration_total / launches > 300",
        "-duration_total < -500 and present(grid_size)",
        "if(present(grid_size), grid_size, waves_per_sm * 100) >= 150",
        "if(waves_per_sm > 2, \"big\", name) == \"big\"",
        "cc == \"9.0\" and name !~ \"^Cijk_\"",
        "cc ~ \"^([7-9]|1[0-9])[.]\" or occupancy_limiter == \"registers\"",
        "name in collectives or present(occupancy_limiter)",
        "rank(duration_total) <= 50",
        "duration_total >= sum(kernel, duration_total) / count(kernel)",
        "max(waves_per_sm, 2) - floor(waves_per_sm) > 1.5",
        "metric(\"waves_per_sm\") > 3 and attr(\"cc\") != \"6.1\"",
        "duration_total / run.gpu_time * 100 > 0.05",
        "true and (grid_size == 10 or false)",
    };
    for (const std::string& c : conditions) {
        errors.clear();
        const auto e = Expression::compile(c, errors, &defs);
        ASSERT_TRUE(e.has_value()) << c << ": " << (errors.empty() ? "" : errors[0].message);
        EXPECT_EQ(expect_rows_equal_entities(batch, EntityKind::kernel, *e, c), 500u);
    }
}

// Every shipped rule on every corpus report and the H100 fixtures (not the sweep): evaluate_run decides over rows,
// and each row's decision must be the one its entity alone gets.
TEST(RunRows, EveryShippedRuleDecidesEachReportRowAsItsEntityAlone) {
    const auto corpus = test::corpus_dir();
    if (!corpus) GTEST_SKIP() << "corpus not found (../shared/corpus or $PERFWATCH_CORPUS)";
    const RuleSet set = compile_rules(load_rule_files({}));
    ASSERT_FALSE(set.has_errors());
    std::vector<std::filesystem::path> reports;
    for (const auto& e : std::filesystem::recursive_directory_iterator(*corpus))
        if (e.is_regular_file() && !e.path().filename().string().starts_with("README")) reports.push_back(e.path());
    for (const auto& e : std::filesystem::directory_iterator(test::fixture("h100")))
        if (e.is_regular_file()) reports.push_back(e.path());
    std::size_t read = 0, rows = 0;
    for (const auto& path : reports) {
        const auto batch = collect_file(path.string());
        if (!batch) continue;
        ++read;
        for (const CompiledRule& rule : set.rules)
            rows += expect_rows_equal_entities(*batch, rule.spec.scope, rule.when,
                                               path.filename().string() + " / " + rule.spec.id);
    }
    std::cout << fmt::format("{} reports read, {} rule x entity decisions compared\n", read, rows);
    EXPECT_GE(read, 60u);
    EXPECT_GT(rows, 10000u);
}

}  // namespace perfwatch
