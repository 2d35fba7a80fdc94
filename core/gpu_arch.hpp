#pragma once

#include <optional>
#include <string_view>

namespace perfwatch {

// What one NVIDIA streaming multiprocessor can hold, by compute capability: the limits the CUDA
// occupancy calculation divides a launch by. Source: CUDA C++ Programming Guide, "Technical
// Specifications per Compute Capability" (README, "GPU architecture table").
struct SmLimits {
    int max_warps = 0;              // resident warps per SM
    int max_blocks = 0;             // resident blocks per SM
    int registers = 65536;          // 32-bit registers per SM
    int register_unit = 256;        // registers are given to a warp in units of this many
    int shared_memory = 0;          // bytes of shared memory per SM (the largest carve-out)
    int shared_reserved = 0;        // bytes the driver reserves per block (1 KiB from 8.0 on)
};

// The limits of compute capability `cc` ("8.6"); nullopt for one the table lacks.
std::optional<SmLimits> sm_limits(std::string_view cc);

// Which limit holds a launch's resident blocks per SM.
enum class OccupancyLimit { warps, blocks, registers, shared_memory };

std::string_view to_string(OccupancyLimit limit);

struct LaunchOccupancy {
    int blocks_per_sm = 0;          // resident blocks per SM
    int warps_per_sm = 0;           // resident warps per SM
    double occupancy_pct = 0;       // warps_per_sm as a share of the SM's maximum
    OccupancyLimit limit = OccupancyLimit::warps;
};

// The theoretical occupancy of blocks of `block_size` threads using `registers_per_thread`
// registers and `shared_per_block` bytes of shared memory, as the CUDA occupancy calculator
// computes it; nullopt where the launch cannot be resident at all (too many registers or bytes).
std::optional<LaunchOccupancy> launch_occupancy(const SmLimits& sm, double block_size, double registers_per_thread,
                                                double shared_per_block);

}  // namespace perfwatch
