#include <gtest/gtest.h>

#include <map>
#include <set>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/diff.hpp"
#include "tests/support.hpp"

namespace perfwatch {
namespace {

struct KernelTotals {
    double count = 0, total_ns = 0;
};

// The test's own reading of a trace: complete events of category "kernel" by name, counted and
// summed (microseconds -> ns), with nlohmann::json rather than perfwatch's collector.
std::map<std::string, KernelTotals> kernels_in(const std::string& path) {
    const auto doc = nlohmann::json::parse(test::read_maybe_gzip(path));
    std::map<std::string, KernelTotals> out;
    for (const auto& e : doc.at("traceEvents")) {
        if (e.value("ph", "") != "X" || e.value("cat", "") != "kernel") continue;
        KernelTotals& k = out[e.at("name").get<std::string>()];
        k.count += 1;
        k.total_ns += e.at("dur").get<double>() * 1000;
    }
    return out;
}

nlohmann::json diff_json(const std::string& a, const std::string& b) {
    const auto r = test::run_perfwatch({"diff", "--format", "json", "--kind", "kernel", a, b});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
}

TEST(Diff, HtaTraceComparePairListsEveryKernelWithCountsAndTimesFromTheFiles) {
    PERFWATCH_CORPUS_FILE(base, "kineto/hta__trace_compare__base__base.json.gz");
    PERFWATCH_CORPUS_FILE(test_trace, "kineto/hta__trace_compare__test__test.json.gz");
    const auto before = kernels_in(base), after = kernels_in(test_trace);
    const auto doc = diff_json(base, test_trace);
    std::size_t both = 0;
    for (const auto& [name, k] : after) both += before.contains(name);
    EXPECT_EQ(doc["summary"]["added"].get<std::size_t>(), after.size() - both);
    EXPECT_EQ(doc["summary"]["removed"].get<std::size_t>(), before.size() - both);
    double total_a = 0, total_b = 0;
    for (const auto& [n, k] : before) total_a += k.total_ns;
    for (const auto& [n, k] : after) total_b += k.total_ns;
    EXPECT_NEAR(doc["summary"]["total_before_ns"].get<double>(), total_a, 1e-6 * total_a);
    EXPECT_NEAR(doc["summary"]["total_after_ns"].get<double>(), total_b, 1e-6 * total_b);
    ASSERT_EQ(doc["entries"].size(), before.size() + after.size() - both);
    bool count_changed = false;
    for (const auto& e : doc["entries"]) {
        const std::string name = e["name"];
        const KernelTotals a = before.contains(name) ? before.at(name) : KernelTotals{};
        const KernelTotals b = after.contains(name) ? after.at(name) : KernelTotals{};
        EXPECT_EQ(e["count_before"].get<double>(), a.count) << name;
        EXPECT_EQ(e["count_after"].get<double>(), b.count) << name;
        EXPECT_NEAR(e["total_before_ns"].get<double>(), a.total_ns, 1e-3) << name;
        EXPECT_NEAR(e["total_after_ns"].get<double>(), b.total_ns, 1e-3) << name;
        count_changed = count_changed || (a.count > 0 && b.count > 0 && a.count != b.count);
        // Per-launch times equal on both sides: unchanged, or "count changed" when the number of
        // launches moved (3 -> 2 is no "unchanged" kernel).
        if (a.count > 0 && b.count > 0 && a.total_ns / a.count == b.total_ns / b.count) {
            EXPECT_EQ(e["status"], a.count == b.count ? "unchanged" : "count changed") << name;
        }
    }
    EXPECT_TRUE(count_changed) << "the pair differs in a launch count (3 -> 2 adds), the diff must show it";
    double launches_a = 0, launches_b = 0;
    for (const auto& [n, k] : before) launches_a += k.count;
    for (const auto& [n, k] : after) launches_b += k.count;
    EXPECT_EQ(doc["summary"]["count_before"].get<double>(), launches_a);
    EXPECT_EQ(doc["summary"]["count_after"].get<double>(), launches_b);
}

// Without --kind every kind the runs hold is compared, and the summary gives the launches.
TEST(Diff, WithoutAKindEveryKindIsComparedWithLaunchTotals) {
    PERFWATCH_CORPUS_FILE(base, "kineto/hta__trace_compare__base__base.json.gz");
    PERFWATCH_CORPUS_FILE(test_trace, "kineto/hta__trace_compare__test__test.json.gz");
    const auto before = kernels_in(base), after = kernels_in(test_trace);
    double launches_a = 0, launches_b = 0;
    for (const auto& [n, k] : before) launches_a += k.count;
    for (const auto& [n, k] : after) launches_b += k.count;
    const auto r = test::run_perfwatch({"diff", "--format", "json", base, test_trace});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    std::set<std::string> kinds;
    for (const auto& k : doc["kinds"]) kinds.insert(k["kind"].get<std::string>());
    EXPECT_TRUE(kinds.contains("kernel"));
    EXPECT_TRUE(kinds.contains("api_call")) << r.out.substr(0, 400);
    const auto text = test::run_perfwatch({"diff", base, test_trace});
    EXPECT_NE(text.out.find(fmt::format("launches: {} -> {}", launches_a, launches_b)), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("api_calls: "), std::string::npos) << text.out;
}

TEST(Diff, KinetoDocsFixPairShowsTheOccupancyPropertiesThatWentAway) {
    PERFWATCH_CORPUS_FILE(before_fix, "kineto/kineto__docs_traces_before_fix_trace.json");
    PERFWATCH_CORPUS_FILE(after_fix, "kineto/kineto__docs_traces_after_fix_trace.json");
    // The before trace's kernel carries args.occupancy; the after trace's does not.
    const auto raw = nlohmann::json::parse(test::read_file(before_fix));
    nlohmann::json occupancy;
    for (const auto& e : raw.at("traceEvents"))
        if (e.value("cat", "") == "kernel" && e.contains("args") && e["args"].contains("occupancy"))
            occupancy = e["args"]["occupancy"];
    ASSERT_FALSE(occupancy.is_null());
    const auto doc = diff_json(before_fix, after_fix);
    ASSERT_EQ(doc["entries"].size(), 1u);
    const auto& k = doc["entries"][0];
    EXPECT_EQ(k["status"], "unchanged");
    const auto changes = k["property_changes"].get<std::vector<std::string>>();
    const auto has = [&](const std::string& s) { return std::find(changes.begin(), changes.end(), s) != changes.end(); };
    EXPECT_TRUE(has(fmt::format("active_blocks_per_sm {} -> absent",
                                occupancy["activeBlocksPerMultiprocessor"].get<int>())));
    EXPECT_TRUE(has(fmt::format("block_limit_warps {} -> absent", occupancy["blockLimitWarps"].get<int>())));
    EXPECT_TRUE(has("occupancy_limiter block count -> absent")) << occupancy["limitingFactors"];
    // Registers are INT_MAX ("no limit") in the file: not a property.
    for (const std::string& c : changes) EXPECT_EQ(c.find("block_limit_registers"), std::string::npos) << c;
}

TEST(Diff, ClassifiesBySizeOfThePerLaunchChange) {
    auto batch = [](double gemm, double relu, bool with_new) {
        RunBatch b;
        auto add = [&](const std::string& name, double mean) {
            Entity e;
            e.kind = EntityKind::kernel;
            e.name = name;
            e.set(Metric{"launches", 10, "count", "", ""});
            e.set(Metric{"duration_total", mean * 10, "ns", "", ""});
            e.set(Metric{"duration_mean", mean, "ns", "", ""});
            b.entities.push_back(std::move(e));
        };
        add("gemm", gemm);
        add("relu", relu);
        if (with_new) {
            add("fused", 5);
        } else {
            add("old", 7);
        }
        return b;
    };
    const RunDiff d = diff_runs(batch(100, 50, false), batch(120, 49, true));
    EXPECT_EQ(d.slower, 1u);
    EXPECT_EQ(d.unchanged, 1u);  // -2% is below the 5% threshold
    EXPECT_EQ(d.added, 1u);
    EXPECT_EQ(d.removed, 1u);
    EXPECT_EQ(d.entries.front().name, "gemm");  // the largest change of total time first
    EXPECT_DOUBLE_EQ(d.entries.front().change_pct, 20);
    EXPECT_DOUBLE_EQ(d.total_a, 1000 + 500 + 70);
}

}  // namespace
}  // namespace perfwatch
