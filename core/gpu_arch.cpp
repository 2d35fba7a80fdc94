#include "core/gpu_arch.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace perfwatch {

namespace {

struct ArchRow {
    std::string_view cc;
    SmLimits limits;
};

// CUDA C++ Programming Guide, "Technical Specifications per Compute Capability": maximum resident
// warps and blocks per SM, 64 K registers per SM in units of 256 per warp, shared memory per SM
// (the largest configurable carve-out) and the 1 KiB reserved per block from 8.0 on.
constexpr auto k_arch = std::to_array<ArchRow>({
    {"5.0", {64, 32, 65536, 256, 65536, 0}},
    {"5.2", {64, 32, 65536, 256, 98304, 0}},
    {"5.3", {64, 32, 65536, 256, 65536, 0}},
    {"6.0", {64, 32, 65536, 256, 65536, 0}},
    {"6.1", {64, 32, 65536, 256, 98304, 0}},
    {"6.2", {64, 32, 65536, 256, 65536, 0}},
    {"7.0", {64, 32, 65536, 256, 98304, 0}},
    {"7.2", {64, 32, 65536, 256, 98304, 0}},
    {"7.5", {32, 16, 65536, 256, 65536, 0}},
    {"8.0", {64, 32, 65536, 256, 167936, 1024}},
    {"8.6", {48, 16, 65536, 256, 102400, 1024}},
    {"8.7", {48, 16, 65536, 256, 167936, 1024}},
    {"8.9", {48, 24, 65536, 256, 102400, 1024}},
    {"9.0", {64, 32, 65536, 256, 233472, 1024}},
    {"10.0", {64, 32, 65536, 256, 233472, 1024}},
    {"10.3", {64, 32, 65536, 256, 233472, 1024}},
    {"12.0", {48, 32, 65536, 256, 102400, 1024}},
});

}  // namespace

std::optional<SmLimits> sm_limits(std::string_view cc) {
    for (const ArchRow& row : k_arch)
        if (row.cc == cc) return row.limits;
    return std::nullopt;
}

std::string_view to_string(OccupancyLimit limit) {
    switch (limit) {
        case OccupancyLimit::warps: return "warps";
        case OccupancyLimit::blocks: return "blocks";
        case OccupancyLimit::registers: return "registers";
        case OccupancyLimit::shared_memory: return "shared memory";
    }
    return "?";
}

std::optional<LaunchOccupancy> launch_occupancy(const SmLimits& sm, double block_size, double registers_per_thread,
                                                double shared_per_block) {
    if (!(block_size >= 1) || !(block_size <= 1024) || sm.max_warps <= 0) return std::nullopt;
    const int warps_per_block = static_cast<int>(std::ceil(block_size / 32.0));
    LaunchOccupancy out;
    int blocks = sm.max_warps / warps_per_block;
    out.limit = OccupancyLimit::warps;
    // Ties go to the later limit in this order: a user changes registers or shared memory, not the SM.
    if (sm.max_blocks <= blocks) {
        blocks = sm.max_blocks;
        out.limit = OccupancyLimit::blocks;
    }
    if (registers_per_thread > 0) {
        const double per_warp = std::ceil(registers_per_thread * 32.0 / sm.register_unit) * sm.register_unit;
        const int warps = static_cast<int>(std::floor(sm.registers / per_warp));
        const int by_registers = warps / warps_per_block;
        if (by_registers <= blocks && by_registers < sm.max_blocks) {
            blocks = by_registers;
            out.limit = OccupancyLimit::registers;
        }
    }
    if (shared_per_block > 0 && sm.shared_memory > 0) {
        const double per_block = std::ceil((shared_per_block + sm.shared_reserved) / 128.0) * 128.0;
        const int by_shared = static_cast<int>(std::floor(sm.shared_memory / per_block));
        if (by_shared <= blocks && by_shared < sm.max_blocks) {
            blocks = by_shared;
            out.limit = OccupancyLimit::shared_memory;
        }
    }
    if (blocks <= 0) return std::nullopt;
    out.blocks_per_sm = blocks;
    out.warps_per_sm = blocks * warps_per_block;
    out.occupancy_pct = 100.0 * out.warps_per_sm / sm.max_warps;
    return out;
}

namespace {

struct PeakRow {
    std::string_view match;   // a part of the reported name
    std::string_view also;    // a second part it must hold too ("" for none)
    GpuPeaks peaks;
};

// Dense peaks from the datasheets: NVIDIA H100 Tensor Core GPU (SXM5 and PCIe), NVIDIA A100 (40 and
// 80 GB), NVIDIA L4, AMD Instinct MI300X and MI250X. FP64 is the tensor/matrix rate where the GPU
// has one. First match wins, so the longer names come first.
constexpr auto k_peaks = std::to_array<PeakRow>({
    {"H100", "PCIe", {"H100 PCIe", 51.2, 51.2, 378.0, 756.0, 1513.0, 2.0}},
    {"H100", "", {"H100 SXM5", 66.9, 66.9, 494.7, 989.4, 1978.9, 3.35}},
    {"A100", "80GB", {"A100 80GB", 19.5, 19.5, 156.0, 312.0, 0, 2.039}},
    {"A100", "", {"A100 40GB", 19.5, 19.5, 156.0, 312.0, 0, 1.555}},
    {"L4", "", {"L4", 0.49, 30.3, 60.0, 121.0, 242.5, 0.3}},
    {"MI300X", "", {"MI300X", 163.4, 163.4, 653.7, 1307.4, 2614.9, 5.3}},
    {"MI250X", "", {"MI250X", 95.7, 47.9, 0, 383.0, 0, 3.2768}},
});

}  // namespace

std::optional<GpuPeaks> gpu_peaks(std::string_view gpu_name) {
    for (const PeakRow& row : k_peaks) {
        if (gpu_name.find(row.match) == std::string_view::npos) continue;
        if (!row.also.empty() && gpu_name.find(row.also) == std::string_view::npos) continue;
        // "L4" must be the model, not a part of another name (an "L40S").
        if (row.match == "L4") {
            const auto at = gpu_name.find("L4");
            if (at + 2 < gpu_name.size() && gpu_name[at + 2] != ' ') continue;
        }
        return row.peaks;
    }
    return std::nullopt;
}

double peak_tflops(const GpuPeaks& peaks, std::string_view dtype) {
    if (dtype == "float") return peaks.fp32;
    if (dtype == "double") return peaks.fp64;
    if (dtype == "c10::BFloat16" || dtype == "c10::Half") return peaks.bf16;
    if (dtype.starts_with("c10::Float8")) return peaks.fp8;
    return 0;
}

int dtype_size(std::string_view dtype) {
    if (dtype == "float" || dtype == "int") return 4;
    if (dtype == "double" || dtype == "long int") return 8;
    if (dtype == "c10::BFloat16" || dtype == "c10::Half" || dtype == "short int") return 2;
    if (dtype.starts_with("c10::Float8") || dtype == "signed char" || dtype == "unsigned char" || dtype == "bool") return 1;
    return 0;
}

}  // namespace perfwatch
