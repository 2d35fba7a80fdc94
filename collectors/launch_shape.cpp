#include "collectors/launch_shape.hpp"

#include <cmath>
#include <string>

#include "collectors/readers/timeline.hpp"
#include "core/gpu_arch.hpp"

namespace perfwatch {

void add_launch_shape(RunBatch& batch) {
    for (Entity& e : batch.entities) {
        if (e.kind != EntityKind::kernel || e.value("occupancy_theoretical") || e.value("vgpr_count")) continue;
        const auto block = e.value("block_size");
        if (!block || !(*block >= 1) || !(*block <= 1024)) continue;
        if (const auto grid = e.value("grid_size"); grid && *grid >= 1 && !e.value("threads"))
            e.set(plain("threads", *grid * *block, "count"));
        const double warps = std::ceil(*block / 32.0);
        e.set(plain("warp_lanes_used_pct", 100.0 * *block / (32.0 * warps), "percent"));
        const auto cc = e.attributes.find("cc");
        if (cc == e.attributes.end()) continue;
        const auto sm = sm_limits(cc->second);
        if (!sm) continue;
        const double shared = e.value("shared_mem_per_block")
                                  .value_or(e.value("shared_mem_static_per_block").value_or(0) +
                                            e.value("shared_mem_dynamic_per_block").value_or(0));
        const auto occupancy = launch_occupancy(*sm, *block, e.value("registers_per_thread").value_or(0), shared);
        if (!occupancy) continue;
        e.set(plain("occupancy_from_launch", occupancy->occupancy_pct, "percent"));
        e.set(plain("blocks_per_sm_from_launch", occupancy->blocks_per_sm, "count"));
        e.attributes["launch_limiter"] = std::string(to_string(occupancy->limit));
    }
}

void GridTimes::add(double grid, double ns) {
    if (m_overflow || !(grid >= 1) || !(ns >= 0)) return;
    for (auto& [g, t] : m_times)
        if (g == grid) {
            t += ns;
            return;
        }
    if (m_times.size() == k_max_grids) {
        m_overflow = true;
        m_times.clear();
        return;
    }
    m_times.emplace_back(grid, ns);
}

void GridTimes::set_metrics(Entity& kernel, double sm_count) const {
    if (m_overflow || m_times.size() < 2 || !(sm_count >= 1)) return;
    double total = 0, small = 0, idle = 0;
    for (const auto& [grid, ns] : m_times) {
        total += ns;
        if (grid < sm_count) {
            small += ns;
            idle += ns * (sm_count - grid) / sm_count;
        }
    }
    if (!(total > 0)) return;
    kernel.set(plain("small_grid_time_pct", 100.0 * small / total, "percent"));
    kernel.set(plain("small_grid_idle_pct", 100.0 * idle / total, "percent"));
}

}  // namespace perfwatch
