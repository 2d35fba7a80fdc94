#pragma once

#include <utility>
#include <vector>

#include "core/model.hpp"

namespace perfwatch {

// Adds what a kernel's launch configuration implies where a timeline recorded it but no profiler
// measured it (Nsight Systems, Kineto): `threads`, `warp_lanes_used_pct` (lanes of each warp the
// block fills) and, for an NVIDIA GPU of known compute capability, `occupancy_from_launch` with the
// limit that holds it (attribute `launch_limiter`: warps, blocks, registers or shared
// memory; `occupancy_limiter` stays the profiler's own). Kernels that already carry a measured
// occupancy (Nsight Compute) are left as they are.
void add_launch_shape(RunBatch& batch);

// The time a kernel's launches spent at each grid size (blocks), for kernels launched with grids
// of several sizes. Holds at most k_max_grids sizes: past that the kernel is not judged this way
// (memory stays bounded whatever the number of launches).
class GridTimes {
public:
    static constexpr std::size_t k_max_grids = 256;
    void add(double grid, double ns);
    // Where the launches' grids differ and `sm_count` is known: `small_grid_time_pct` (share of
    // the time in grids under `sm_count` blocks) and `small_grid_idle_pct` (that time weighted by
    // the share of SMs it left idle) on `kernel`.
    void set_metrics(Entity& kernel, double sm_count) const;

private:
    std::vector<std::pair<double, double>> m_times;  // grid, ns
    bool m_overflow = false;
};

}  // namespace perfwatch
