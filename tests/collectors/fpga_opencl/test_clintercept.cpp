#include <gtest/gtest.h>

#include "collectors/fpga_opencl/clintercept.hpp"
#include "tests/collectors/ncu_helpers.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

TEST(ClinterceptReport, HostAndDeviceTables) {
    const RunBatch b = collect_ok(fixture("opencl/clintercept_report.txt"));
    EXPECT_EQ(b.format, "clintercept-report");
    EXPECT_EQ(of_kind(b, EntityKind::api_call).size(), 4u);
    const auto devices = of_kind(b, EntityKind::device);
    ASSERT_EQ(devices.size(), 2u);
    EXPECT_EQ(devices[0]->name, "Intel(R) Arc(TM) A770 Graphics");
    EXPECT_DOUBLE_EQ(metric(devices[0], "compute_units"), 512);
    EXPECT_DOUBLE_EQ(metric(devices[0], "device_frequency"), 2.4e9);
    const Entity* nbody = kernel_named(b, "nbody_step SIMD32 GWS[ 65536 ] LWS[ 256 ]");
    ASSERT_NE(nbody, nullptr);
    EXPECT_DOUBLE_EQ(metric(nbody, "launches"), 3);
    EXPECT_DOUBLE_EQ(metric(nbody, "duration_total"), 106100000);
    // reduce_energy ran on both devices: 1 call of 792000 ns and 2 calls totalling 2450000 ns.
    const Entity* reduce = kernel_named(b, "reduce_energy");
    EXPECT_DOUBLE_EQ(metric(reduce, "launches"), 3);
    EXPECT_DOUBLE_EQ(metric(reduce, "duration_total"), 792000 + 2450000);
    EXPECT_DOUBLE_EQ(metric(reduce, "duration_min"), 792000);
    EXPECT_DOUBLE_EQ(b.entities[0].value("gpu_time").value_or(-1), 106100000 + 792000 + 2450000);
    EXPECT_EQ(of_kind(b, EntityKind::memcpy).size(), 2u);
}

TEST(ClinterceptTrace, QueueTimelineAndHostCalls) {
    const RunBatch b = collect_ok(fixture("opencl/clintercept_trace.json"));
    EXPECT_EQ(b.format, "clintercept-trace");
    EXPECT_EQ(b.format_detail, "device timeline per queue");
    const Entity* nbody = kernel_named(b, "nbody_step");
    ASSERT_NE(nbody, nullptr);
    EXPECT_DOUBLE_EQ(metric(nbody, "launches"), 2);
    EXPECT_NEAR(metric(nbody, "duration_total"), (35100.0 + 35600.0) * 1000, 1e-3);  // us -> ns
    bool finish = false;
    for (const Entity* a : of_kind(b, EntityKind::api_call))
        if (a->name == "clFinish") finish = true;
    EXPECT_TRUE(finish);
    EXPECT_EQ(of_kind(b, EntityKind::memcpy).size(), 2u);
    EXPECT_TRUE(b.notes.empty());
}

TEST(ClinterceptTrace, CutShortWithoutClosingBracket) {
    const RunBatch b = collect_ok(fixture("opencl/clintercept_trace_cut.json"));
    ASSERT_FALSE(b.notes.empty());
    EXPECT_NE(b.notes[0].find("without its closing bracket"), std::string::npos);
    // The partial reduce_energy event is dropped; the two nbody_step launches before it remain.
    EXPECT_DOUBLE_EQ(metric(kernel_named(b, "nbody_step"), "launches"), 2);
    EXPECT_EQ(kernel_named(b, "reduce_energy"), nullptr);
}

TEST(ChromeTrace, GenericFallbackPrefersGpuCategories) {
    const RunBatch b = collect_ok(fixture("opencl/generic_trace.json"));
    EXPECT_EQ(b.format, "chrome-trace");
    EXPECT_NE(b.notes.at(0).find("generic Chrome trace"), std::string::npos);
    const Entity* decode = kernel_named(b, "decode_frame");
    ASSERT_NE(decode, nullptr);
    EXPECT_DOUBLE_EQ(metric(decode, "launches"), 2);
    EXPECT_DOUBLE_EQ(metric(decode, "duration_total"), 500000);
    EXPECT_EQ(kernel_named(b, "upload"), nullptr) << "cat cpu is not device work";
    EXPECT_EQ(of_kind(b, EntityKind::memcpy).size(), 1u);
    EXPECT_TRUE(of_kind(b, EntityKind::launch).empty());
}

// A legacy autograd-profiler export (CPU functions only, no cat): host work, never kernels.
TEST(ChromeTrace, CpuOnlyEventsAreHostCallsNotKernels) {
    const RunBatch b = collect_ok(fixture("opencl/autograd_cpu_trace.json"));
    EXPECT_EQ(b.format, "chrome-trace");
    EXPECT_TRUE(of_kind(b, EntityKind::kernel).empty());
    bool noted = false;
    for (const std::string& n : b.notes)
        noted = noted || n.find("no GPU work in this trace: its 4 complete events are host (CPU) work") != std::string::npos;
    EXPECT_TRUE(noted);
    const Entity* relu = nullptr;
    for (const Entity* e : of_kind(b, EntityKind::api_call))
        if (e->name == "aten::relu") relu = e;
    ASSERT_NE(relu, nullptr);
    EXPECT_DOUBLE_EQ(metric(relu, "count"), 2);
    EXPECT_DOUBLE_EQ(metric(relu, "duration_total"), 22000);  // 10 us + 12 us
    EXPECT_EQ(relu->attributes.at("domain"), "host");
}

TEST(ChromeTrace, BrokenJsonIsAnErrorNamingTheFile) {
    auto r = collect_content("t.json", "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": }]}");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().file, "t.json");
    EXPECT_NE(r.error().message.find("invalid JSON"), std::string::npos) << r.error().message;
}

}  // namespace perfwatch::test
