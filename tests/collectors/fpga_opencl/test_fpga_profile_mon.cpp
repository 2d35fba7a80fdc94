#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

#include <map>
#include <sstream>

#include "collectors/fpga_opencl/fpga_profile_mon.hpp"
#include "tests/collectors/ncu_helpers.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

struct Expected {
    double executions = 0;
    double total_ns = 0;
};

// The test's own reading of a profile.mon: executions and summed end - start per kernel name.
std::map<std::string, Expected> sum_lines(const std::string& path) {
    std::map<std::string, Expected> out;
    std::istringstream in(read_file(path));
    std::string line;
    while (std::getline(in, line)) {
        std::vector<std::string> f;
        std::stringstream ls(line);
        std::string field;
        while (std::getline(ls, field, ',')) f.push_back(field);
        if (f.size() < 5 || f[2].starts_with(".")) continue;
        out[f[2]].executions += 1;
        out[f[2]].total_ns += static_cast<double>(std::stoll(f[4]) - std::stoll(f[3]));
    }
    return out;
}

void expect_matches_lines(const std::string& path) {
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format, "fpga-profile-mon");
    const auto expected = sum_lines(path);
    ASSERT_FALSE(expected.empty());
    double all = 0, executions = 0;
    for (const auto& [name, e] : expected) {
        const Entity* k = kernel_named(b, name);
        ASSERT_NE(k, nullptr) << name;
        EXPECT_DOUBLE_EQ(metric(k, "launches"), e.executions) << name;
        EXPECT_DOUBLE_EQ(metric(k, "duration_total"), e.total_ns) << name;
        all += e.total_ns;
        executions += e.executions;
    }
    const Entity& run = b.entities[0];
    EXPECT_DOUBLE_EQ(run.value("gpu_time").value_or(-1), all);
    EXPECT_DOUBLE_EQ(run.value("launches").value_or(-1), executions);
    EXPECT_EQ(of_kind(b, EntityKind::launch).size(), static_cast<std::size_t>(executions));
}

}  // namespace

TEST(FpgaProfileMon, CorpusStacA2TwoDevicesFourQueues) {
    PERFWATCH_CORPUS_FILE(path, "fpga_opencl/stac_a2_pathgen_profile.mon");
    expect_matches_lines(path);
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format_detail, "legacy layout (no shared-counter field)");
    EXPECT_EQ(of_kind(b, EntityKind::device).size(), 2u);
    // Both kernels run at once on each device (queues 2 and 3 on device 0): overlap is counted.
    const Entity* dev0 = of_kind(b, EntityKind::device)[0];
    EXPECT_GT(metric(dev0, "kernel_overlap_time"), 0);
    const Entity* first = of_kind(b, EntityKind::launch)[0];
    EXPECT_EQ(first->attributes.at("counters"), "15750000,31722048,47472197,0,0,0,0");
    EXPECT_EQ(first->attributes.at("queue"), "2");
}

TEST(FpgaProfileMon, CorpusGbtlAlternatingKernels) {
    PERFWATCH_CORPUS_FILE(path, "fpga_opencl/gbtl_dev_spmv_merge_profile.mon");
    expect_matches_lines(path);
    const RunBatch b = collect_ok(path);
    const Entity* dev = of_kind(b, EntityKind::device)[0];
    // One queue, no overlap: busy time is the kernels' own sum.
    EXPECT_DOUBLE_EQ(metric(dev, "kernel_overlap_time"), 0);
    EXPECT_DOUBLE_EQ(metric(dev, "busy_time"), b.entities[0].value("gpu_time").value_or(-1));
    EXPECT_GT(metric(dev, "idle_pct"), 90);
}

TEST(FpgaProfileMon, SharedCounterLayoutAndZeroCounters) {
    const std::string path = fixture("fpga/profile_shared_counter.mon");
    expect_matches_lines(path);
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format_detail, "layout with shared-counter field");
    const Entity* gemm = kernel_named(b, "gemm_nn");
    EXPECT_DOUBLE_EQ(metric(gemm, "launches"), 3);
    EXPECT_FALSE(gemm->attributes.contains("device")) << "gemm_nn runs on two devices";
    // gemm_nn (queue 2) overlaps conv2d_im2col (queue 1) on device 0 from 10000 to 120000 ns.
    const Entity* dev0 = of_kind(b, EntityKind::device)[0];
    EXPECT_DOUBLE_EQ(metric(dev0, "kernel_overlap_time"), 110000);
    const Entity* adam = kernel_named(b, "adam_update");
    EXPECT_DOUBLE_EQ(metric(adam, "duration_total"), 3000);
    for (const Entity* l : of_kind(b, EntityKind::launch))
        if (l->name.starts_with("adam_update")) {
            EXPECT_EQ(l->attributes.at("counters"), "");
        }
    EXPECT_DOUBLE_EQ(b.entities[0].value("short_launches").value_or(-1), 3);  // relu x2, adam
}

TEST(FpgaProfileMon, MemoryTransferLines) {
    const RunBatch b = collect_ok(fixture("fpga/profile_transfers.mon"));
    const auto memcpys = of_kind(b, EntityKind::memcpy);
    ASSERT_EQ(memcpys.size(), 2u);
    double writes = 0;
    for (const Entity* m : memcpys)
        if (m->name == ".mem_transfer_write") writes = metric(m, "count");
    EXPECT_DOUBLE_EQ(writes, 2);
    // The three .mem_transfer lines; .reprogram (500000 ns) moves no data.
    EXPECT_DOUBLE_EQ(b.entities[0].value("memory_time").value_or(-1), 800000 + 400000 + 400000);
    EXPECT_DOUBLE_EQ(b.entities[0].value("gpu_time").value_or(-1), 400000);
    ASSERT_EQ(of_kind(b, EntityKind::api_call).size(), 1u);  // .reprogram
}

TEST(FpgaProfileMon, MalformedLinesNameTheLine) {
    auto r = collect_content("p.mon", "0,1,k,100,200,2,5,6\n0,1,k,300,400,2,5\n");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().line, 2u);
    EXPECT_NE(r.error().message.find("6+N"), std::string::npos) << r.error().message;
    auto bad_time = collect_content("p.mon", "0,1,k,100,200,2,5,6\n0,1,k,abc,400,2,5,6\n");
    ASSERT_FALSE(bad_time);
    EXPECT_EQ(bad_time.error().line, 2u);
}

// Executions past k_max_launch_entities are read as a stream into their kernel's figures only.
TEST(FpgaProfileMon, ExecutionsPastTheLimitCountInTheirKernelsOnly) {
    TempDir dir;
    const std::size_t n = k_max_launch_entities + 700;
    std::string text;
    for (std::size_t i = 0; i < n; ++i) {
        const long long start = 1000 + static_cast<long long>(i) * 100;
        text += fmt::format("0,0,{},{},{},2,{},{}\n", i % 2 == 0 ? "even" : "odd", start, start + 40 + static_cast<long long>(i % 5), i, 7);
    }
    write_file(dir.path() / "profile.mon", text);
    const std::string path = dir.file("profile.mon");
    const RunBatch b = collect_ok(path);
    const auto expected = sum_lines(path);
    for (const auto& [name, e] : expected) {
        const Entity* k = kernel_named(b, name);
        ASSERT_NE(k, nullptr) << name;
        EXPECT_DOUBLE_EQ(metric(k, "launches"), e.executions) << name;
        EXPECT_DOUBLE_EQ(metric(k, "duration_total"), e.total_ns) << name;
    }
    EXPECT_EQ(of_kind(b, EntityKind::launch).size(), k_max_launch_entities);
    EXPECT_TRUE(std::any_of(b.notes.begin(), b.notes.end(), [&](const std::string& t) {
        return t.starts_with(fmt::format("launch entities are kept for the first {} of {} kernel executions",
                                         k_max_launch_entities, n));
    })) << ::testing::PrintToString(b.notes);
}

}  // namespace perfwatch::test
