#pragma once

#include "core/model.hpp"

namespace perfwatch {

// Adds what a kernel's launch configuration implies where a timeline recorded it but no profiler
// measured it (Nsight Systems, Kineto): `threads`, `warp_lanes_used_pct` (lanes of each warp the
// block fills) and, for an NVIDIA GPU of known compute capability, `occupancy_from_launch` with the
// limit that holds it (attribute `launch_limiter`: warps, blocks, registers or shared
// memory; `occupancy_limiter` stays the profiler's own). Kernels that already carry a measured
// occupancy (Nsight Compute) are left as they are.
void add_launch_shape(RunBatch& batch);

}  // namespace perfwatch
