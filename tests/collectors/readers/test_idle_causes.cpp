#include <gtest/gtest.h>

#include "collectors/readers/idle_causes.hpp"

namespace perfwatch {

namespace {

DeviceOp op(double start, double end, double issued, std::uint32_t stream = 0, std::uint32_t device = 0) {
    DeviceOp o;
    o.start = start;
    o.end = end;
    o.issued = issued;
    o.stream = stream;
    o.device = device;
    return o;
}

}  // namespace

// Each gap is judged by the operation that ends it; the figures below are the gaps' lengths.
TEST(IdleCauses, EachGapGoesToTheCauseOfTheOperationThatEndsIt) {
    std::vector<DeviceOp> ops{
        op(0, 10'000, -5'000),                // first: no gap before it
        op(30'000, 40'000, 25'000),           // 20 us gap, issued during it: launch
        op(3'040'000, 3'050'000, 3'030'000),  // 3 ms gap, issued during it: host away
        op(3'150'000, 3'160'000, 3'000'000),  // 100 us gap, issued before it began: dependency
        op(5'160'000, 5'170'000, 5'100'000),  // 2 ms gap, inside start-up work: start-up
        op(5'270'000, 5'280'000, -std::numeric_limits<double>::infinity()),  // 100 us, no call: unmatched
    };
    const IdleCauses c = idle_causes(ops, {{3'200'000, 5'150'000}});
    EXPECT_DOUBLE_EQ(c.span, 5'280'000);
    EXPECT_DOUBLE_EQ(c.idle, 20'000 + 3'000'000 + 100'000 + 2'000'000 + 100'000);
    EXPECT_DOUBLE_EQ(c.launch, 20'000);
    EXPECT_DOUBLE_EQ(c.host_gaps, 3'000'000);
    EXPECT_DOUBLE_EQ(c.host_gap_count, 1);
    EXPECT_DOUBLE_EQ(c.host_gap_median, 3'000'000);
    EXPECT_DOUBLE_EQ(c.dependency, 100'000);
    EXPECT_DOUBLE_EQ(c.startup, 2'000'000);
    EXPECT_DOUBLE_EQ(c.unmatched, 100'000);
}

// A launch that waits behind its own stream's earlier work is queued (the host is ahead); one that
// waits with its stream empty waited on something else. Devices are judged apart.
TEST(IdleCauses, WaitsBehindTheOwnStreamAreQueuedOthersAreNot) {
    std::vector<DeviceOp> ops{
        op(0, 1'000'000, -1'000),                    // stream 0: a long kernel
        op(1'002'000, 1'500'000, 0),                 // stream 0: issued at 0, starts when the first ends
        op(800'000, 900'000, 100'000, 1),            // stream 1: waited 700 us with stream 1 empty
        op(0, 10, 0, 0, 1),                          // device 1: no wait
        op(2'000'000'000, 2'000'000'010, 0, 0, 1),   // device 1: issued long before its 2 s gap: dependency
    };
    const IdleCauses c = idle_causes(ops, {});
    EXPECT_DOUBLE_EQ(c.issued_launches, 5);
    EXPECT_DOUBLE_EQ(c.waited, 3);
    EXPECT_DOUBLE_EQ(c.queued, 1);
    EXPECT_DOUBLE_EQ(c.span, 1'500'000 + 2'000'000'010);
    // Device 0 idles 2 us before its third kernel, issued long before: a dependency too.
    EXPECT_DOUBLE_EQ(c.idle, 2'000 + 2'000'000'000 - 10);
    EXPECT_DOUBLE_EQ(c.dependency, 2'000 + 2'000'000'000 - 10);
    EXPECT_DOUBLE_EQ(c.launch, 0);
    // Delays 1002000, 700000, 0, 2e9 and -(-1000) = 1000: the median is 700 us.
    EXPECT_DOUBLE_EQ(c.delay_median, 700'000);
}

}  // namespace perfwatch
