#include "core/vocabulary.hpp"

#include <fmt/format.h>

#include <cmath>

#include <algorithm>
#include <array>

namespace perfwatch {

namespace {

constexpr std::string_view k_k = "kernel,launch";

constexpr std::array k_vocabulary = std::to_array<MetricDef>({
    // Timing
    {"duration", "ns", "kernel,launch,collective", "GPU duration of one launch (for a kernel: mean over its launches)"},
    {"duration_total", "ns", "kernel,memcpy,api_call,op", "sum of the durations of all launches of the kernel (an operator: of the kernels its calls launched)"},
    {"duration_mean", "ns", "kernel,memcpy,api_call", "mean launch duration"},
    {"duration_min", "ns", "kernel,memcpy,api_call", "shortest launch"},
    {"duration_max", "ns", "kernel,memcpy,api_call", "longest launch"},
    {"duration_std", "ns", "kernel,memcpy,api_call", "standard deviation of launch durations"},
    {"duration_median", "ns", "kernel,memcpy,api_call", "median launch duration"},
    {"first_launch_duration", "ns", "kernel", "duration of the kernel's earliest-starting launch (timelines, two launches or more)"},
    {"first_launch_excess", "ns", "kernel", "first launch's duration minus the mean of the kernel's other launches"},
    {"start", "ns", "launch,collective", "start on the report's own clock"},
    {"end", "ns", "launch,collective", "end on the report's own clock"},
    {"count", "count", "memcpy,api_call,op", "number of operations or calls"},
    {"launches", "count", "kernel,run,device", "number of kernel launches (executions)"},
    {"kernels", "count", "run", "number of distinct kernels"},
    {"gpu_time", "ns", "run,rank", "sum of kernel durations in the run"},
    {"devices", "count", "run", "devices with activity in the report"},
    {"memory_time", "ns", "run", "sum of memory operation durations"},
    {"busy_time", "ns", "run,device", "time a device runs kernels or memory operations (merged intervals; summed over devices)"},
    {"span", "ns", "run,device", "first start to last end on the timeline"},
    {"idle_time", "ns", "run,device", "span minus busy time (summed over devices)"},
    {"idle_pct", "percent", "run,device", "idle share of the span (over all devices)"},
    {"kernel_overlap_time", "ns", "run,device", "kernel time run concurrently with other kernels (sum minus union)"},
    {"longest_idle_gap", "ns", "run,device", "longest gap between busy intervals on one device"},
    {"short_launches", "count", "run", "kernel launches shorter than 10 us"},
    {"launch_latency_mean", "ns", "run,kernel", "mean time from the launch API call to the kernel start"},
    {"launch_latency_max", "ns", "run,kernel", "longest time from the launch API call to the kernel start"},
    {"api_calls", "count", "run", "CUDA runtime and driver API calls"},
    {"sync_api_calls", "count", "run", "synchronizing API calls (cudaDeviceSynchronize, cudaMemcpy, ...)"},
    {"sync_api_time", "ns", "run", "host time spent in synchronizing API calls"},
    {"gpu_idle_during", "ns", "api_call", "time a synchronizing call waited while no kernel or memory operation ran on any GPU (Kineto, Nsight Systems SQLite)"},
    {"gpu_idle_during_pct", "percent", "api_call", "gpu_idle_during as a share of the call's total time"},
    {"memcpy_bytes", "byte", "run", "bytes moved by memory copies and sets the program issued (unified-memory migrations are um_bytes)"},
    {"pageable_memcpy_count", "count", "run", "copies from or to pageable host memory (run synchronously)"},
    {"pageable_memcpy_time", "ns", "run", "time those copies took"},
    {"flops", "flop", "op", "floating-point operations one call of the operator does (2 per multiply-add; PyTorch profiler shapes)"},
    {"op_bytes", "byte", "op", "bytes one call must move at least: its inputs read once and its output written once"},
    {"arithmetic_intensity", "flop/byte", "op", "flops over op_bytes: below the GPU's ridge point (peak FLOP/s over peak bandwidth) the operator is memory-bound"},
    {"achieved_flops", "flop/s", "op", "the operator's FLOPs over the time of the kernels its calls launched (printed in TFLOP/s)"},
    {"achieved_bandwidth", "byte/s", "op", "op_bytes over the time of the kernels its calls launched"},
    {"peak_tflops_pct", "percent", "op", "achieved_flops as a share of the GPU's dense peak for the operator's dtype (core/gpu_arch.cpp)"},
    {"peak_bandwidth_pct", "percent", "op", "achieved_bandwidth as a share of the GPU's peak memory bandwidth"},
    {"um_migrations", "count", "run", "unified-memory migrations (Nsight Systems: memcpy rows of kind Unified HtoD, DtoH, DtoD)"},
    {"um_migration_time", "ns", "run", "time unified-memory migrations took"},
    {"um_bytes", "byte", "run,kernel", "bytes unified-memory migrations moved"},
    {"um_fault_migrations", "count", "run", "unified-memory migrations a page fault caused (or the driver's speculative prefetch after one)"},
    {"um_prefetch_migrations", "count", "run", "unified-memory migrations cudaMemPrefetchAsync asked for"},
    {"um_host_fault_migrations", "count", "run", "device-to-host migrations on a CPU page fault: the host touched managed pages"},
    {"um_migrations_during", "count", "run,kernel", "unified-memory migrations while a kernel ran (for a kernel: one of that name)"},
    {"um_migration_time_during", "ns", "run,kernel", "time of the migrations while a kernel ran"},
    {"um_bytes_during", "byte", "kernel", "bytes migrated while a kernel of that name ran"},
    {"um_fault_migrations_during", "count", "kernel", "migrations a page fault caused (or the driver's speculative prefetch after one) while a kernel of that name ran"},
    {"bytes", "byte", "memcpy,collective", "bytes moved (a collective: its input message, In msg nelems x dtype)"},
    {"bandwidth", "byte/s", "memcpy", "bytes moved per second of copy time"},
    {"max_warps_per_sm", "count", "device", "resident warps an SM can hold"},
    {"occupancy_estimated", "percent", "kernel", "occupancy the profiler estimated from the launch configuration (Kineto)"},
    {"shared_mem_per_block", "byte", "kernel", "shared memory per block (static and dynamic together)"},
    {"blocks_per_sm", "count", "kernel", "blocks per SM the launch configuration gives"},
    {"active_blocks_per_sm", "count", "kernel", "resident blocks per SM the occupancy calculation allows (Kineto)"},
    {"vgpr_count", "count", "kernel", "vector registers per work-item (AMD)"},
    {"sgpr_count", "count", "kernel", "scalar registers per wavefront (AMD)"},
    {"warps_per_sm", "count", "kernel", "warps per SM the launch configuration gives"},
    {"gpu_time_comm", "ns", "run,rank", "kernel time of communication kernels (NCCL, RCCL, HCCL, NVSHMEM, DeepEP, NVLS multimem, custom all-reduce)"},
    {"gpu_time_compute", "ns", "run,rank", "kernel time of computation kernels"},
    {"gpu_time_memory", "ns", "run,rank", "time of memory copies and sets"},
    {"comm_compute_overlap_pct", "percent", "run,rank", "share of communication time overlapped by computation on the same device"},
    {"comm_exposed_time", "ns", "run,rank", "communication kernel time not overlapped by computation on the same device (merged intervals; a job: mean over ranks per step)"},
    {"collectives", "count", "run,rank", "communication kernel executions"},
    {"collective_bytes", "byte", "run,rank", "input message bytes of the communication kernels where the trace records them (Kineto args In msg nelems x dtype)"},
    {"world_size", "count", "run", "processes of the distributed job (distributedInfo.world_size)"},
    {"idle_host_wait", "ns", "run,rank", "HTA idle category: stream gaps whose kernel's launch call ended after the previous kernel ended"},
    {"idle_kernel_wait", "ns", "run,rank", "HTA idle category: stream gaps shorter than 30 ns between queued kernels"},
    {"idle_other_wait", "ns", "run,rank", "HTA idle category: every other stream gap (waits on events, other streams)"},
    {"concurrent_pct", "percent", "kernel", "share of the kernel's time during which another kernel ran on the same device (Kineto)"},
    {"idle_startup", "ns", "run", "device idle time in gaps half or more inside one-time host work: a CPU operator's first call (1 ms or more, ten times its later calls' mean), lazy module loading, a code-loading call of 1 ms or more"},
    {"idle_startup_pct", "percent", "run", "idle_startup as a share of the device timelines"},
    {"idle_steady_pct", "percent", "run", "idle share of the device timelines without the start-up gaps"},
    {"idle_launch_pct", "percent", "run", "share of the device timelines idle in gaps under 1 ms ended by work issued during the gap (launch-bound)"},
    {"idle_host_gaps_pct", "percent", "run", "share of the device timelines idle in gaps of 1 ms or more ended by work issued during the gap (the host away between bursts)"},
    {"host_gaps", "count", "run", "idle gaps of 1 ms or more ended by work issued during the gap"},
    {"host_gap_median", "ns", "run", "median length of those gaps"},
    {"idle_dependency_pct", "percent", "run", "share of the device timelines idle in gaps ended by work issued before the gap began (it waited on other work)"},
    {"launch_delay_median", "ns", "run", "median delay from the end of the issuing call to the start of kernels, copies and sets"},
    {"launches_waited", "count", "run", "kernels, copies and sets that started more than 100 us after their issuing call returned"},
    {"launches_queued", "count", "run", "of those, the ones that started when earlier work on their own stream ended (the host ahead)"},
    {"module_loading_time", "ns", "run", "CUPTI's lazy module and function loading time (Kineto overhead events)"},
    {"startup_call_time", "ns", "run", "the longest first call of a CPU operator that counts as start-up (its name: attribute startup_call)"},
    {"ranks", "count", "run", "ranks of a job that were read"},
    {"missing_ranks", "count", "run", "ranks of a job's world size that were not read"},
    {"job_step_time", "ns", "run", "a job's step time: the slowest rank's mean profiler step (its span without steps)"},
    {"collectives_matched", "count", "run", "collectives matched across two or more ranks (by kernel name and occurrence)"},
    {"comm_exposed_pct", "percent", "run", "mean exposed communication per step as a share of the job's step time"},
    {"comm_wait_pct", "percent", "run", "mean time ranks wait in collectives for the last to arrive, as a share of the job's step time"},
    {"compute_imbalance_pct", "percent", "run", "the busiest rank's computation kernel time over the median rank's, minus 100%"},
    {"step_time", "ns", "rank", "a rank's mean profiler step (its span without steps)"},
    {"collective_wait_time", "ns", "run,rank", "per step, time from a rank's arrival at each collective to the last rank's (a job: mean over ranks)"},
    {"last_arrivals", "count", "rank", "matched collectives at which this rank arrived last"},
    {"last_arrival_pct", "percent", "rank", "share of the matched collectives this rank reached last"},
    {"wait_caused", "ns", "rank", "per step, the other ranks' mean wait at the collectives this rank reached last"},
    {"wait_caused_pct", "percent", "rank", "wait_caused as a share of the job's step time"},
    {"compute_excess_time", "ns", "rank", "per step, this rank's computation kernel time minus the median rank's"},
    {"compute_excess_pct", "percent", "rank", "this rank's computation kernel time over the median rank's, minus 100%"},
    {"launch_delay_mean", "ns", "run", "mean delay from the end of the launch call to the kernel start"},
    {"launch_delay_max", "ns", "run", "longest launch delay"},
    {"launch_delay_outliers", "count", "run", "launches delayed more than 100 us"},
    {"short_kernels", "count", "run", "kernels shorter than their launch call (launch call <= 50 us)"},
    {"runtime_outliers", "count", "run", "CUDA runtime calls longer than 50 us"},
    {"iterations", "count", "run,rank", "profiler steps (ProfilerStep#N)"},
    {"iteration_time_mean", "ns", "run", "mean profiler step duration"},
    {"launches_per_iteration", "count", "run", "kernel launches per profiler step"},
    {"sync_time", "ns", "run", "time in CUDA synchronization events"},
    {"cpu_ops", "count", "run", "CPU operator events"},
    {"profiler_errors", "count", "run", "==ERROR== lines of an ncu text log (a launch that failed under the profiler, counters it could not read)"},
    {"short_launch_pct", "percent", "run", "share of kernel launches shorter than 10 us"},
    {"elapsed_cycles", "count", k_k, "GPU cycles elapsed during the launch"},
    {"sm_active_cycles", "count", k_k, "cycles with at least one warp active, average per SM"},
    {"sm_frequency", "hz", "kernel,launch,run", "SM clock during the launch (for a run: its kernels' clocks weighted by GPU time, or the clock sampled while the GPU worked)"},
    {"dram_frequency", "hz", k_k, "DRAM clock during the launch"},
    // Speed of light
    {"sm_throughput", "percent", k_k, "compute (SM) throughput, percent of peak"},
    {"memory_throughput", "percent", k_k, "memory throughput, percent of peak (max over memory units)"},
    {"dram_throughput", "percent", k_k, "DRAM throughput, percent of peak"},
    {"l1tex_throughput", "percent", k_k, "L1/TEX cache throughput, percent of peak"},
    {"l2_throughput", "percent", k_k, "L2 cache throughput, percent of peak"},
    {"dram_bandwidth", "byte/s", k_k, "achieved memory bandwidth"},
    {"mem_busy", "percent", k_k, "busiest memory unit, percent of peak"},
    {"max_bandwidth", "percent", k_k, "highest bandwidth utilization among memory units"},
    {"mem_pipes_busy", "percent", k_k, "memory pipelines busy"},
    // Launch configuration
    {"block_size", "count", k_k, "threads per block"},
    {"grid_size", "count", k_k, "blocks in the grid"},
    {"threads", "count", k_k, "threads launched"},
    {"registers_per_thread", "count", k_k, "registers allocated per thread"},
    {"shared_mem_static_per_block", "byte", k_k, "static shared memory per block"},
    {"shared_mem_dynamic_per_block", "byte", k_k, "dynamic shared memory per block"},
    {"shared_mem_driver_per_block", "byte", k_k, "shared memory reserved by the driver per block"},
    {"shared_mem_config_size", "byte", k_k, "shared memory configured per SM"},
    {"sm_count", "count", "kernel,launch,device", "streaming multiprocessors on the device"},
    {"small_grid_time_pct", "percent", "kernel", "where a kernel's launches differ in grid: share of its time in launches of fewer blocks than the device's SMs"},
    {"small_grid_idle_pct", "percent", "kernel", "where a kernel's launches differ in grid: share of its SM time left idle by grids smaller than the device"},
    {"compute_units", "count", "device", "compute units of an OpenCL device"},
    {"device_frequency", "hz", "device", "device clock as the report states it"},
    {"waves_per_sm", "count", k_k, "waves of blocks per SM (grid / blocks that fit at once)"},
    {"local_memory_per_thread", "byte", k_k, "local memory per thread"},
    // Occupancy
    {"block_limit_sm", "count", k_k, "blocks per SM allowed by the SM's block slots"},
    {"block_limit_registers", "count", k_k, "blocks per SM allowed by register use"},
    {"block_limit_shared_mem", "count", k_k, "blocks per SM allowed by shared memory use"},
    {"block_limit_warps", "count", k_k, "blocks per SM allowed by the warp slots"},
    {"block_limit_barriers", "count", k_k, "blocks per SM allowed by barriers"},
    {"occupancy_theoretical", "percent", k_k, "theoretical occupancy, percent of the device maximum"},
    {"occupancy_achieved", "percent", k_k, "achieved occupancy, percent of the device maximum"},
    {"occupancy_from_launch", "percent", "kernel", "theoretical occupancy perfwatch computes from a timeline's launch configuration and the GPU architecture table (no profiler measured it)"},
    {"blocks_per_sm_from_launch", "count", "kernel", "resident blocks per SM that occupancy_from_launch allows"},
    {"warp_lanes_used_pct", "percent", "kernel", "lanes of each warp a block fills (block size over its warps x 32)"},
    {"warps_theoretical_per_sm", "count", k_k, "theoretical active warps per SM"},
    {"warps_achieved_per_sm", "count", k_k, "achieved active warps per SM"},
    // Scheduling and instructions
    {"issue_slots_busy", "percent", k_k, "issue slots busy"},
    {"sm_busy", "percent", k_k, "SM busy"},
    {"ipc_executed_active", "count", k_k, "instructions executed per active cycle"},
    {"ipc_executed_elapsed", "count", k_k, "instructions executed per elapsed cycle"},
    {"ipc_issued_active", "count", k_k, "instructions issued per active cycle"},
    {"eligible_warps_per_scheduler", "count", k_k, "warps eligible to issue per scheduler and cycle"},
    {"active_warps_per_scheduler", "count", k_k, "active warps per scheduler"},
    {"issued_warps_per_scheduler", "count", k_k, "warps issued per scheduler and cycle"},
    {"no_eligible", "percent", k_k, "cycles with no eligible warp"},
    {"one_or_more_eligible", "percent", k_k, "cycles with at least one eligible warp"},
    {"warp_cycles_per_issued_instruction", "count", k_k, "average cycles between two issued instructions of a warp"},
    {"warp_cycles_per_executed_instruction", "count", k_k, "average cycles between two executed instructions"},
    {"threads_per_warp_active", "count", k_k, "average active threads per warp (32 without divergence)"},
    {"threads_per_warp_not_predicated", "count", k_k, "average threads per warp not predicated off"},
    {"instructions_executed", "count", k_k, "warp instructions executed"},
    {"instructions_issued", "count", k_k, "warp instructions issued"},
    {"branch_instructions", "count", k_k, "branch instructions"},
    {"branch_efficiency", "percent", k_k, "branch efficiency"},
    {"divergent_branches", "count", k_k, "average divergent branches"},
    // Memory behaviour
    {"l1_hit_rate", "percent", k_k, "L1/TEX hit rate"},
    {"l2_hit_rate", "percent", k_k, "L2 hit rate"},
    {"local_spill_requests", "count", k_k, "local memory spilling requests"},
    {"local_spill_overhead", "percent", k_k, "local memory spilling request overhead"},
    {"global_sectors_excessive", "count", k_k, "L2 sectors of global accesses beyond the ideal (uncoalesced)"},
    {"global_sectors_ideal", "count", k_k, "L2 sectors global accesses would need if coalesced"},
    {"global_sectors_requested", "count", k_k, "L1 tag requests of global accesses, in sectors"},
    {"global_load_sectors", "count", k_k, "32-byte sectors global loads touched (l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum)"},
    {"global_load_requests", "count", k_k, "global load requests, one per warp-wide instruction (l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum)"},
    {"global_store_sectors", "count", k_k, "32-byte sectors global stores touched (l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum)"},
    {"global_store_requests", "count", k_k, "global store requests (l1tex__t_requests_pipe_lsu_mem_global_op_st.sum)"},
    {"shared_bank_conflicts", "count", k_k, "shared-memory bank conflicts (extra wavefronts), loads and stores"},
    {"shared_wavefronts", "count", k_k, "shared-memory wavefronts, loads and stores (conflicts included)"},
});

}  // namespace

std::span<const MetricDef> metric_vocabulary() { return k_vocabulary; }

const MetricDef* find_metric_def(std::string_view name) {
    auto it = std::find_if(k_vocabulary.begin(), k_vocabulary.end(), [&](const MetricDef& d) { return d.name == name; });
    return it == k_vocabulary.end() ? nullptr : &*it;
}

std::optional<std::string> format_in_unit(double d, std::string_view kind) {
    struct Step {
        double factor;
        std::string_view unit;
    };
    static constexpr Step k_time[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}};
    static constexpr Step k_bytes[] = {{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}, {1, "B"}};
    std::span<const Step> steps;
    if (kind == "time")
        steps = k_time;
    else if (kind == "bytes")
        steps = k_bytes;
    else
        return std::nullopt;
    for (const Step& s : steps)
        if (std::fabs(d) >= s.factor || s.factor == 1) {
            const double x = d / s.factor;
            const int decimals = std::fabs(x) >= 100 ? 0 : std::fabs(x) >= 10 ? 1 : 2;
            return fmt::format("{:.{}f} {}", x, decimals, s.unit);
        }
    return std::nullopt;
}

std::string format_metric(std::string_view metric, double value) {
    const MetricDef* def = find_metric_def(metric);
    const std::string_view unit = def != nullptr ? def->unit : std::string_view();
    if (unit == "ns") return *format_in_unit(value, "time");
    if (unit == "byte") return *format_in_unit(value, "bytes");
    if (unit == "percent") return fmt::format("{:.1f}%", value);
    if (unit == "flop/s") return fmt::format("{:.1f} TFLOP/s", value / 1e12);
    if (value == std::floor(value) && std::fabs(value) < 1e15) return fmt::format("{:.0f}", value);
    return fmt::format("{:.4g}", value);
}

}  // namespace perfwatch
