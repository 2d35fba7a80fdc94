#pragma once

#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.hpp"

namespace perfwatch {

// rocprof per-dispatch CSVs, one row per kernel dispatch: rocprof v1 `--stats` results.csv and
// counter collections (`rocprof -i input.txt`: grd, wgr, lds, VGPRs, SGPRs and the requested
// counters), and the files of a rocprof-compute (Omniperf) workload: pmc_perf.csv, the per-pass
// SQ_*.csv, timestamps.csv and pmc_dispatch_info.csv. A sysinfo.csv in the same folder gives the
// GPU model and architecture (labels) and the limits occupancy is computed from.
const Collector& rocprof_pmc_collector();

// rocprofv3 --pmc *_counter_collection.csv: one row per dispatch and counter; the
// *_agent_info.csv beside it gives the GPU.
const Collector& rocprof_counter_collection_collector();

// True when a CSV header's columns are the long counter layout: Counter_Name and Counter_Value,
// one row per dispatch and counter (rocprofv3, rocprof-compute 3.x), read one launch per dispatch.
bool is_long_counter_layout(const std::vector<std::string>& names);

// rocprof-compute pmc_kernel_top.csv: per-kernel dispatch count and times.
const Collector& rocprof_kernel_top_collector();

// What a rocprof-compute sysinfo.csv says about the GPU (either schema: Omniperf 1 numCU,
// maxWavesPerCU, gpu_soc; Omniperf 2 cu_per_gpu, max_waves_per_cu, gpu_arch, num_xcd).
struct AmdSystemInfo {
    std::string workload;  // workload_name: the folder's workload, a configuration label
    std::string model;     // "MI300X_A1", "mi200"
    std::string arch;   // "gfx942"
    double compute_units = 0;
    double max_waves_per_cu = 0;
    double xcds = 1;
    double wave_size = 64;
    double hbm_bandwidth_gbs = 0;  // hbm_bw (hbmBW): peak HBM bandwidth, GB/s
    double max_sclk_mhz = 0;       // max_sclk (sclk): the GPU's SM clock limit, MHz
    double max_mclk_mhz = 0;       // max_mclk (mclk): its memory clock limit, MHz
};

// Reads the sysinfo.csv at `path`; nullopt when it is absent or holds no GPU.
std::optional<AmdSystemInfo> read_amd_sysinfo(const std::string& path);

// The GPU agent `agent_id` (Node_Id) of a rocprofv3 agent_info.csv, else its first GPU; nullopt
// when the file is absent or lists none.
std::optional<AmdSystemInfo> read_amd_agent_info(const std::string& path, const std::string& agent_id);

// The occupancy a launch configuration allows on a CDNA GPU, from the architecture's limits as
// the LLVM AMDGPU backend states them (AMDGPUBaseInfo: 4 SIMDs per CU; gfx90a and gfx942 8 waves
// per SIMD and 512 unified VGPRs per lane in granules of 8; gfx908 10 waves and 256 VGPRs in
// granules of 4, AGPRs in a file of their own; 800 SGPRs per SIMD in granules of 16; 64 KiB LDS
// per CU).
struct AmdOccupancy {
    double waves_per_simd = 0;     // the smallest limit
    double max_waves_per_simd = 0;
    double by_vgprs = 0, by_sgprs = 0, by_lds = 0;  // waves per SIMD each resource allows
    double waves_per_workgroup = 0;
    std::string limiter;  // "VGPRs", "SGPRs", "LDS", or empty when none binds below the maximum
    double percent() const { return max_waves_per_simd > 0 ? 100 * waves_per_simd / max_waves_per_simd : 0; }
};

// nullopt for an architecture whose limits are not known here.
std::optional<AmdOccupancy> amd_theoretical_occupancy(std::string_view arch, double arch_vgprs, double accum_vgprs,
                                                      double sgprs, double lds_bytes, double workgroup_size,
                                                      double wave_size);

}  // namespace perfwatch
