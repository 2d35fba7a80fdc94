#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "collectors/readers/span_set.hpp"
#include "core/model.hpp"

namespace perfwatch {

// A gap of this length or more, ended by work the host issued during it, is the host away (a
// burst boundary: host computation, sleeps, data loading) rather than launch overhead.
inline constexpr double k_host_gap_ns = 1'000'000;
// A first call this long, ten times its later calls' mean, is one-time start-up work (lazy module
// loading, library handles, autotuning, context creation); so is, in Kineto, a launch, function
// or module call this long, and in Nsight Systems a lone call this long before any GPU work.
inline constexpr double k_startup_call_ns = 1'000'000;
// A launch that starts more than this after its call returned waited (HTA's launch delay outlier).
inline constexpr double k_waited_launch_ns = 100'000;

// One operation on a device (kernel, copy, set): when it ran, on which device and stream, and when
// the host call that issued it returned (-infinity: no call matched it).
struct DeviceOp {
    double start = 0, end = 0;
    double issued = -std::numeric_limits<double>::infinity();
    std::uint32_t device = 0, stream = 0;
    std::uint32_t tag = 0;  // the reader's own label (Kineto: the kernel name's index)
    bool memory = false;    // a copy or set rather than a kernel (idle_causes treats both alike)
};

// Why the devices sat idle and why launches waited, read from when each operation was issued and
// when it ran. Idle time is split by the operation that ends each gap:
//   startup    - half or more of the gap lies in one-time host work (a first call, module loading);
//   launch     - issued during a gap shorter than k_host_gap_ns: the host's launches are the limit;
//   host_gaps  - issued during a gap of k_host_gap_ns or more: the host was away between bursts;
//   dependency - issued before the gap began, so it waited for something other than the host;
//   unmatched  - no issuing call known.
// A waited launch (start - issued > k_waited_launch_ns) is queued when earlier work on its own
// stream ran until it started (the host is ahead), otherwise it waited with its stream empty.
struct IdleCauses {
    double span = 0, idle = 0;  // summed over devices, first start to last end
    double startup = 0, launch = 0, host_gaps = 0, dependency = 0, unmatched = 0;
    double host_gap_count = 0, host_gap_median = 0;
    double issued_launches = 0, waited = 0, queued = 0, delay_median = 0;
};

// Reads `ops` (reordered in place); `startup` holds the one-time host intervals, in any order.
IdleCauses idle_causes(std::vector<DeviceOp>& ops, std::vector<Span> startup);

// Sets the run's idle-cause metrics (idle_startup, idle_startup_pct, idle_steady_pct,
// idle_launch_pct, idle_host_gaps_pct, host_gaps, host_gap_median, idle_dependency_pct and the
// launch delays) from `c`; false, setting nothing, where most idle time ends at work with no known
// issuing call (causes are then not told).
bool set_idle_cause_metrics(Entity& run, const IdleCauses& c);

// Per tag (below `tags`), the time its kernels ran while another kernel ran on the same device:
// work that shares the SMs by design (a communication kernel beside a GEMM on another stream).
// Copies and sets do not count. Reorders `ops`.
std::vector<double> concurrent_time(std::vector<DeviceOp>& ops, std::size_t tags);

}  // namespace perfwatch
