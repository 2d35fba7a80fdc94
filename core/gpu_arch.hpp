#pragma once

#include <optional>
#include <string>
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

// A GPU's dense peak rates (no sparsity) from its vendor's datasheet, in TFLOP/s and TB/s; 0 where
// the GPU has no such path (README, "GPU peak table", names the sources).
struct GpuPeaks {
    std::string_view model;
    double fp64 = 0, fp32 = 0, tf32 = 0, bf16 = 0, fp8 = 0;
    double memory_tbps = 0;
};

// The peaks of the GPU a report names ("NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"); nullopt
// for one the table lacks.
std::optional<GpuPeaks> gpu_peaks(std::string_view gpu_name);

// The peak in TFLOP/s for math in `dtype` (PyTorch's names: "float", "c10::BFloat16", "c10::Half",
// "double", "c10::Float8_e4m3fn", ...): FP32 on the SIMT cores for float; 0 when unknown.
double peak_tflops(const GpuPeaks& peaks, std::string_view dtype);

// Bytes per element of a PyTorch dtype name; 0 when unknown.
int dtype_size(std::string_view dtype);

}  // namespace perfwatch
