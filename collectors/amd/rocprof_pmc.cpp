#include "collectors/amd/rocprof_pmc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "collectors/readers/csv.hpp"
#include "core/file.hpp"
#include "collectors/readers/timeline.hpp"
#include "collectors/readers/units.hpp"

namespace perfwatch {

namespace {

// Longest first line read as a header: rocprof-compute's widest (hundreds of counters) is a few
// KB; a longer one (a minified JSON trace is one line) is not these reports' and is not parsed.
constexpr std::size_t k_max_header_line = 64 * 1024;

// The column names of the header line at the start of `head` (a BOM and surrounding space removed).
std::vector<std::string> header_names(std::string_view head) {
    if (head.starts_with("\xEF\xBB\xBF")) head.remove_prefix(3);
    std::vector<std::string> out;
    const std::string_view line = head.substr(0, head.find('\n'));
    if (line.size() > k_max_header_line) return out;
    CsvReader reader(line);
    if (reader.next(out) != CsvReader::Status::record) out.clear();
    for (std::string& field : out) field = std::string(trim(field));
    return out;
}

bool has(const std::vector<std::string>& names, std::initializer_list<std::string_view> any) {
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string& n) { return std::find(any.begin(), any.end(), n) != any.end(); });
}

}  // namespace

bool is_long_counter_layout(const std::vector<std::string>& names) {
    return has(names, {"Counter_Name"}) && has(names, {"Counter_Value"});
}

namespace {

// Columns that describe the dispatch rather than count something.
const std::set<std::string, std::less<>> k_dispatch_columns{
    "Index", "Dispatch_ID", "KernelName", "Kernel_Name", "gpu-id", "GPU_ID", "queue-id", "Queue_ID", "queue-index",
    "pid", "PID", "tid", "TID", "grd", "Grid_Size", "wgr", "Workgroup_Size", "lds", "LDS_Per_Workgroup", "scr",
    "Scratch_Per_Workitem", "arch_vgpr", "Arch_VGPR", "vgpr", "accum_vgpr", "Accum_VGPR", "sgpr", "SGPR", "wave_size",
    "Wave_Size", "sig", "obj", "DispatchNs", "BeginNs", "EndNs", "CompleteNs", "DurationNs", "Start_Timestamp",
    "End_Timestamp", "Correlation_ID", "Node", "Agent_Id"};

// Counters a canonical metric is computed from (kept even in rocprof-compute's merged files of
// thousands of columns, whose other counters are not stored).
const std::set<std::string, std::less<>> k_formula_counters{
    "TCC_HIT_sum", "TCC_MISS_sum", "TCP_TOTAL_CACHE_ACCESSES_sum", "TCP_TCC_READ_REQ_sum", "TCP_TCC_WRITE_REQ_sum",
    "TCP_TCC_ATOMIC_WITH_RET_REQ_sum", "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum", "SQ_LDS_BANK_CONFLICT", "SQ_LDS_IDX_ACTIVE",
    "GRBM_GUI_ACTIVE", "SQ_WAVES", "SQ_BUSY_CYCLES", "SQ_ACTIVE_INST_VALU", "SQ_ACTIVE_INST_SCA", "SQ_VALU_MFMA_BUSY_CYCLES",
    "TCC_EA_RDREQ_sum", "TCC_EA_RDREQ_32B_sum", "TCC_EA_WRREQ_sum", "TCC_EA_WRREQ_64B_sum", "TCC_EA0_RDREQ_sum",
    "TCC_EA0_RDREQ_32B_sum", "TCC_EA0_WRREQ_sum", "TCC_EA0_WRREQ_64B_sum", "TCC_BUBBLE_sum"};

// rocprof v1 derived counters (the `pmc:` names of rocprof's metrics.xml) that are already
// canonical metrics per dispatch.
const std::map<std::string, std::string, std::less<>> k_derived_counters{
    {"L2CacheHit", "l2_hit_rate"},
};

// Files with at most this many counters keep every counter (slug of its name) as a metric.
constexpr std::size_t k_keep_all_counters = 64;

std::string gpu_name(const AmdSystemInfo& s) {
    std::string model = s.model;
    if (!model.empty() && std::islower(static_cast<unsigned char>(model[0]))) {
        std::transform(model.begin(), model.end(), model.begin(), [](unsigned char c) { return std::toupper(c); });
    }
    return model.empty() ? fmt::format("AMD {}", s.arch) : fmt::format("AMD {} ({})", model, s.arch);
}

struct KernelSums {
    std::map<std::string, double> counters;        // summed over dispatches
    std::map<std::string, double> derived_sum;     // derived percentages, summed (for the mean)
    std::map<std::string, double> config;          // launch configuration of the longest dispatch
    double config_ns = -1;                          // that dispatch's length (0 when untimed)
    double occupancy_waves = 0, occupancy_cycles = 0;  // SQ_ACCUM_PREV_HIRES and GRBM_GUI_ACTIVE / XCDs
    double dispatches = 0;
    double timed_ns = 0;  // End - Start summed over the dispatches that have both
};

// A dispatch's launch configuration as the CSVs give it; each field may be missing.
struct LaunchConfig {
    std::optional<double> arch_vgpr, accum_vgpr, sgpr, lds, workgroup, grid, scratch, wave;
};

// Records `c`, the configuration of a dispatch of `length_ns` (0 when untimed), as the kernel's
// when no longer dispatch set it: the launch that takes the kernel's time is the one its shape
// rules judge (gunrock's merge_path_kernel runs 256 to 39,041 workgroups; its 3.8 ms dispatch
// has 18,937, its last 1). With what follows from it: VGPRs per work-item (arch + accum) and the
// grid in workgroups.
void set_config(KernelSums& k, const LaunchConfig& c, double length_ns) {
    if (length_ns < k.config_ns) return;
    k.config_ns = length_ns;
    k.config.clear();
    if (c.arch_vgpr) {
        k.config["arch_vgpr"] = *c.arch_vgpr;
        k.config["vgpr_count"] = *c.arch_vgpr + c.accum_vgpr.value_or(0);
    }
    if (c.accum_vgpr) k.config["accum_vgpr"] = *c.accum_vgpr;
    if (c.sgpr) k.config["sgpr_count"] = *c.sgpr;
    if (c.lds && *c.lds > 0) k.config["shared_mem_per_block"] = *c.lds;
    if (c.workgroup) k.config["block_size"] = *c.workgroup;
    if (c.grid) k.config["threads"] = *c.grid;
    if (c.grid && c.workgroup && *c.workgroup > 0) k.config["grid_size"] = std::ceil(*c.grid / *c.workgroup);
    if (c.scratch) k.config["local_memory_per_thread"] = *c.scratch;
    if (c.wave) k.config["wave_size"] = *c.wave;
}

// Throughput as rocprof-compute's System Speed-of-Light states it (analysis_configs/gfx90a and
// gfx942/0200_system-speed-of-light.yaml), over the kernel's dispatches:
//   sm_throughput: the busiest of VALU (100 * SQ_ACTIVE_INST_VALU / (GRBM_GUI_ACTIVE per XCD *
//     cu_per_gpu)), SALU (SQ_ACTIVE_INST_SCA, likewise) and MFMA (SQ_VALU_MFMA_BUSY_CYCLES over 4x that);
//   dram_throughput and memory_throughput: L2-Fabric read + write bytes per second against hbm_bw
//     (gfx90a: 32 * TCC_EA_RDREQ_32B_sum + 64 * (TCC_EA_RDREQ_sum - TCC_EA_RDREQ_32B_sum), writes
//     64 * TCC_EA_WRREQ_64B_sum + 32 * the rest; gfx942: 128 * TCC_BUBBLE_sum + 64 * (TCC_EA0_RDREQ_sum -
//     TCC_BUBBLE_sum - TCC_EA0_RDREQ_32B_sum) + 32 * TCC_EA0_RDREQ_32B_sum, writes as on gfx90a with EA0).
void set_throughput_metrics(Entity& ent, const KernelSums& k, const AmdSystemInfo& sys) {
    auto c = [&](const char* n) -> std::optional<double> {
        auto it = k.counters.find(n);
        return it == k.counters.end() ? std::nullopt : std::optional<double>(it->second);
    };
    const auto gui = c("GRBM_GUI_ACTIVE");
    if (gui && *gui > 0 && sys.compute_units > 0) {
        const double cu_cycles = *gui / std::max(1.0, sys.xcds) * sys.compute_units;
        std::optional<double> busiest;
        auto consider = [&](std::optional<double> v) {
            if (v) busiest = std::max(busiest.value_or(0), *v);
        };
        if (auto v = c("SQ_ACTIVE_INST_VALU")) consider(100 * *v / cu_cycles);
        if (auto v = c("SQ_ACTIVE_INST_SCA")) consider(100 * *v / cu_cycles);
        if (auto v = c("SQ_VALU_MFMA_BUSY_CYCLES")) consider(100 * *v / (cu_cycles * 4));
        if (busiest) ent.set(plain("sm_throughput", *busiest, "percent", "busiest of VALU, SALU, MFMA utilization", "%"));
    }
    if (k.timed_ns <= 0 || sys.hbm_bandwidth_gbs <= 0) return;
    std::optional<double> bytes;
    if (sys.arch == "gfx90a") {
        const auto rd = c("TCC_EA_RDREQ_sum"), rd32 = c("TCC_EA_RDREQ_32B_sum"), wr = c("TCC_EA_WRREQ_sum"),
                   wr64 = c("TCC_EA_WRREQ_64B_sum");
        if (rd && rd32 && wr && wr64) bytes = 32 * *rd32 + 64 * (*rd - *rd32) + 64 * *wr64 + 32 * (*wr - *wr64);
    } else if (sys.arch == "gfx942") {
        const auto rd = c("TCC_EA0_RDREQ_sum"), rd32 = c("TCC_EA0_RDREQ_32B_sum"), bubble = c("TCC_BUBBLE_sum"),
                   wr = c("TCC_EA0_WRREQ_sum"), wr64 = c("TCC_EA0_WRREQ_64B_sum");
        if (rd && rd32 && bubble && wr && wr64)
            bytes = 128 * *bubble + 64 * (*rd - *bubble - *rd32) + 32 * *rd32 + 64 * *wr64 + 32 * (*wr - *wr64);
    }
    if (!bytes) return;
    const double gbs = *bytes / k.timed_ns;  // bytes per ns = GB/s
    ent.set(plain("dram_bandwidth", gbs * 1e9, "byte/s", "L2-Fabric read + write BW", "GB/s"));
    ent.set(plain("dram_throughput", 100 * gbs / sys.hbm_bandwidth_gbs, "percent", "L2-Fabric BW / hbm_bw", "%"));
    ent.set(plain("memory_throughput", 100 * gbs / sys.hbm_bandwidth_gbs, "percent", "L2-Fabric BW / hbm_bw", "%"));
}

void set_kernel_metrics(Entity& ent, const KernelSums& k, const std::optional<AmdSystemInfo>& sysinfo) {
    ent.attributes["vendor"] = "AMD";
    for (const auto& [name, v] : k.config) {
        if (name == "arch_vgpr" || name == "accum_vgpr" || name == "wave_size") continue;
        const std::string unit = name == "shared_mem_per_block" || name == "local_memory_per_thread" ? "byte" : "count";
        ent.set(plain(name, v, unit, name));
    }
    for (const auto& [name, v] : k.counters) ent.set(plain(slug(name), v, "count", name));
    for (const auto& [name, sum] : k.derived_sum) ent.set(plain(name, sum / k.dispatches, "percent", name, "%"));
    auto c = [&](const char* n) -> std::optional<double> {
        auto it = k.counters.find(n);
        return it == k.counters.end() ? std::nullopt : std::optional<double>(it->second);
    };
    // rocprof-compute "L2 Cache Hit Rate": 100 * TCC_HIT_sum / (TCC_HIT_sum + TCC_MISS_sum)
    // (analysis_configs/gfx942/0200_system-speed-of-light.yaml), over the kernel's dispatches.
    if (auto hit = c("TCC_HIT_sum"), miss = c("TCC_MISS_sum"); hit && miss && *hit + *miss > 0)
        ent.set(plain("l2_hit_rate", 100 * *hit / (*hit + *miss), "percent", "100*TCC_HIT_sum/(TCC_HIT_sum+TCC_MISS_sum)", "%"));
    // "vL1D Cache Hit Rate": 100 - 100 * (TCP_TCC_READ_REQ_sum + TCP_TCC_WRITE_REQ_sum +
    // TCP_TCC_ATOMIC_WITH_RET_REQ_sum + TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum) / TCP_TOTAL_CACHE_ACCESSES_sum.
    if (auto total = c("TCP_TOTAL_CACHE_ACCESSES_sum"), rd = c("TCP_TCC_READ_REQ_sum"), wr = c("TCP_TCC_WRITE_REQ_sum"),
        a1 = c("TCP_TCC_ATOMIC_WITH_RET_REQ_sum"), a2 = c("TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum");
        total && rd && wr && a1 && a2 && *total > 0)
        ent.set(plain("l1_hit_rate", 100 - 100 * (*rd + *wr + *a1 + *a2) / *total, "percent", "vL1D hit rate", "%"));
    // LDS: "Bank Conflict Rate", the share of active LDS cycles spent on bank conflicts
    // (SQ_LDS_BANK_CONFLICT over SQ_LDS_IDX_ACTIVE); the shared-memory metrics hold those cycles.
    if (auto conflict = c("SQ_LDS_BANK_CONFLICT"), active = c("SQ_LDS_IDX_ACTIVE"); conflict && active && *active > 0) {
        ent.set(plain("shared_bank_conflicts", *conflict, "count", "SQ_LDS_BANK_CONFLICT", "cycles"));
        ent.set(plain("shared_wavefronts", *active, "count", "SQ_LDS_IDX_ACTIVE", "cycles"));
    }
    if (!sysinfo) return;
    ent.set(plain("sm_count", sysinfo->compute_units, "count", "cu_per_gpu"));
    set_throughput_metrics(ent, k, *sysinfo);
    // "Wavefront Occupancy": SQ_ACCUM_PREV_HIRES / (GRBM_GUI_ACTIVE per XCD) waves, against
    // max_waves_per_cu * cu_per_gpu.
    if (k.occupancy_cycles > 0 && sysinfo->max_waves_per_cu > 0 && sysinfo->compute_units > 0)
        ent.set(plain("occupancy_achieved",
                      100 * (k.occupancy_waves / k.occupancy_cycles) / (sysinfo->max_waves_per_cu * sysinfo->compute_units),
                      "percent", "Wavefront Occupancy", "%"));
    const auto cfg = [&](const char* n) {
        auto it = k.config.find(n);
        return it == k.config.end() ? 0.0 : it->second;
    };
    if (!k.config.contains("arch_vgpr") || !k.config.contains("block_size")) return;
    const double wave = k.config.contains("wave_size") ? cfg("wave_size") : sysinfo->wave_size;
    const auto occ = amd_theoretical_occupancy(sysinfo->arch, cfg("arch_vgpr"), cfg("accum_vgpr"), cfg("sgpr_count"),
                                               cfg("shared_mem_per_block"), cfg("block_size"), wave);
    if (!occ) return;
    ent.set(plain("occupancy_theoretical", occ->percent(), "percent", "waves per SIMD / max", "%"));
    ent.set(plain("warps_theoretical_per_sm", occ->waves_per_simd * 4, "count", "waves per CU"));
    const double per_wg = std::max(1.0, occ->waves_per_workgroup);
    ent.set(plain("block_limit_registers", std::floor(occ->by_vgprs * 4 / per_wg), "count", "workgroups per CU by VGPRs"));
    ent.set(plain("block_limit_warps", std::floor(occ->max_waves_per_simd * 4 / per_wg), "count", "workgroups per CU by wave slots"));
    ent.set(plain("block_limit_shared_mem", std::floor(occ->by_lds * 4 / per_wg), "count", "workgroups per CU by LDS"));
    if (!occ->limiter.empty()) ent.attributes["occupancy_limiter"] = occ->limiter;
}

// Turns the timeline and the per-kernel sums into entities: the GPU from sysinfo on the device,
// the canonical metrics on each kernel.
void finish_amd_batch(RunBatch& batch, TimelineBuilder& builder, const std::map<std::string, KernelSums>& kernels,
                      const std::optional<AmdSystemInfo>& sysinfo) {
    builder.finish(batch);
    if (sysinfo) {
        batch.labels.emplace("gpu_arch", sysinfo->arch);
        if (!sysinfo->workload.empty()) batch.labels.emplace("workload", sysinfo->workload);
        // The clock limits the profile ran under: environment labels, named when they change.
        if (sysinfo->max_sclk_mhz > 0) batch.labels.emplace("sm_clock", fmt::format("{:g} MHz", sysinfo->max_sclk_mhz));
        if (sysinfo->max_mclk_mhz > 0)
            batch.labels.emplace("memory_clock", fmt::format("{:g} MHz", sysinfo->max_mclk_mhz));
        auto describe = [&](Entity& dev) {
            dev.attributes["gpu"] = gpu_name(*sysinfo);
            dev.set(plain("compute_units", sysinfo->compute_units, "count", "cu_per_gpu"));
            if (sysinfo->max_sclk_mhz > 0)
                dev.set(plain("device_frequency", sysinfo->max_sclk_mhz * 1e6, "hz", "max_sclk", "MHz"));
            if (sysinfo->max_waves_per_cu > 0)
                dev.set(plain("max_warps_per_sm", sysinfo->max_waves_per_cu, "count", "max_waves_per_cu"));
        };
        bool has_device = false;
        for (Entity& ent : batch.entities) {
            if (ent.kind != EntityKind::device) continue;
            has_device = true;
            describe(ent);
        }
        if (!has_device) {
            Entity dev;
            dev.kind = EntityKind::device;
            dev.name = "gpu-id 0";
            dev.parent = static_cast<std::int64_t>(batch.run_entity());
            describe(dev);
            batch.entities.push_back(std::move(dev));
        }
    }
    for (Entity& ent : batch.entities) {
        if (ent.kind != EntityKind::kernel) continue;
        auto it = kernels.find(ent.name);
        if (it == kernels.end()) continue;
        set_kernel_metrics(ent, it->second, sysinfo);
    }
}

// Counter collection serializes the dispatches and replays them per pass, with the profiler's own
// work between them: their times are no timeline, so no idle time is told from them.
void drop_idle_figures(RunBatch& batch) {
    for (Entity& e : batch.entities)
        if (e.kind == EntityKind::device || e.kind == EntityKind::run)
            std::erase_if(e.metrics, [](const Metric& m) {
                return m.name() == "idle_pct" || m.name() == "idle_time" || m.name() == "longest_idle_gap";
            });
    batch.notes.push_back("counter collection serializes and replays the dispatches: their times are no timeline, so "
                          "no idle time is told");
}

class PmcCollector final : public Collector {
public:
    std::string_view id() const override { return "rocprof-pmc"; }
    std::string_view description() const override {
        return "rocprof per-dispatch CSV: v1 results.csv and counter collections (rocprof -i), rocprof-compute "
               "(Omniperf) pmc_perf.csv, SQ_*.csv, timestamps.csv, pmc_dispatch_info.csv (sysinfo.csv beside it "
               "read as context)";
    }

    bool recognizes(std::string_view head) const override {
        const auto names = header_names(head);
        return has(names, {"Index", "Dispatch_ID"}) && has(names, {"KernelName", "Kernel_Name"}) &&
               !has(names, {"Count"}) && !is_long_counter_layout(names);
    }

    Result<RunBatch> collect(const std::string& path, std::string_view content) const override {
        if (content.starts_with("\xEF\xBB\xBF")) content.remove_prefix(3);
        CsvReader reader(content);
        std::vector<std::string> header, row;
        if (reader.next(header) != CsvReader::Status::record) return fail(path, 1, "no header row");
        for (std::string& h : header) {
            h = std::string(trim(h));
            std::erase(h, '\r');
        }
        auto col = [&](std::initializer_list<std::string_view> names) { return column_index(header, names); };
        const int c_name = col({"KernelName", "Kernel_Name"}), c_gpu = col({"gpu-id", "GPU_ID"}),
                  c_grid = col({"grd", "Grid_Size"}), c_wg = col({"wgr", "Workgroup_Size"}),
                  c_lds = col({"lds", "LDS_Per_Workgroup"}), c_scr = col({"scr", "Scratch_Per_Workitem"}),
                  c_vgpr = col({"arch_vgpr", "Arch_VGPR", "vgpr"}), c_agpr = col({"accum_vgpr", "Accum_VGPR"}),
                  c_sgpr = col({"sgpr", "SGPR"}), c_wave = col({"wave_size", "Wave_Size"}),
                  c_begin = col({"BeginNs", "Start_Timestamp"}), c_end = col({"EndNs", "End_Timestamp"}),
                  c_level = col({"SQ_LEVEL_WAVES"}), c_gui = col({"GRBM_GUI_ACTIVE"}), c_dispatch = col({"DispatchNs"});
        // The wave-level accumulator is the SQ_ACCUM_PREV_HIRES of the pass that sampled
        // SQ_LEVEL_WAVES: the column right after it (suffixed in merged files).
        const int c_accum = c_level >= 0 && static_cast<std::size_t>(c_level + 1) < header.size() &&
                                    header[static_cast<std::size_t>(c_level + 1)].starts_with("SQ_ACCUM_PREV_HIRES")
                                ? c_level + 1
                                : -1;
        // Counter columns: not dispatch fields, not a repeat (NAME_N where NAME is a column too).
        const std::set<std::string, std::less<>> names(header.begin(), header.end());
        std::vector<int> counters;
        for (std::size_t i = 0; i < header.size(); ++i) {
            const std::string& h = header[i];
            if (h.empty() || k_dispatch_columns.contains(h)) continue;
            const auto us = h.rfind('_');
            if (us != std::string::npos && us + 1 < h.size() &&
                std::all_of(h.begin() + static_cast<std::ptrdiff_t>(us) + 1, h.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }) &&
                names.contains(std::string_view(h).substr(0, us)))
                continue;
            counters.push_back(static_cast<int>(i));
        }
        const bool keep_all = counters.size() <= k_keep_all_counters;

        const auto sysinfo = read_amd_sysinfo((std::filesystem::path(path).parent_path() / "sysinfo.csv").string());
        TimelineBuilder builder(TimelineOptions{true, true});
        std::map<std::string, KernelSums> kernels;
        // In a plain dispatch trace (no counters, so no replay), the wait from the dispatch packet
        // to the kernel's start (DispatchNs -> BeginNs), per kernel and for the run.
        struct Wait {
            double sum = 0, max = 0;
            std::size_t count = 0;
            void add(double ns) {
                sum += ns;
                max = std::max(max, ns);
                ++count;
            }
        };
        std::map<std::string, Wait> waits;
        Wait run_wait;
        std::size_t rows = 0, timed = 0, zero_length = 0;
        while (true) {
            const auto status = reader.next(row);
            if (status == CsvReader::Status::end) break;
            if (status == CsvReader::Status::error) return fail(path, reader.record_line(), reader.error());
            if (row.size() == 1 && trim(row[0]).empty()) continue;
            // Old rocprof writes kernel names unquoted, commas and all: the surplus fields
            // belong to the name.
            if (row.size() > header.size() && c_name >= 0) {
                const std::size_t extra = row.size() - header.size();
                const auto first = row.begin() + c_name;
                std::string joined = *first;
                for (std::size_t i = 1; i <= extra; ++i) joined += "," + *(first + static_cast<std::ptrdiff_t>(i));
                *first = std::move(joined);
                row.erase(first + 1, first + 1 + static_cast<std::ptrdiff_t>(extra));
            }
            if (row.size() != header.size())
                return fail(path, reader.record_line(),
                            fmt::format("expected {} fields as in the header, found {}", header.size(), row.size()));
            auto field = [&](int c) -> std::string_view {
                return c < 0 ? std::string_view() : trim(row[static_cast<std::size_t>(c)]);
            };
            auto number = [&](int c) -> std::optional<double> {
                if (c < 0) return std::nullopt;
                return parse_report_number(field(c));
            };
            ++rows;
            std::string name(field(c_name));
            if (name.empty()) return fail(path, reader.record_line(), "dispatch without a kernel name");
            TimelineEvent ev;
            ev.name = name;
            ev.device = fmt::format("gpu-id {}", c_gpu >= 0 ? std::string(field(c_gpu)) : "0");
            const auto b = number(c_begin), e = number(c_end);
            if (c_begin >= 0 && (!b || !e))
                return fail(path, reader.record_line(),
                            fmt::format("expected numeric {} and {} (ns)", header[static_cast<std::size_t>(c_begin)],
                                        header[static_cast<std::size_t>(c_end < 0 ? c_begin : c_end)]));
            if (b && e) {
                ev.start_ns = *b;
                ev.end_ns = *e;
                ++timed;
                if (*e <= *b) ++zero_length;
            } else {
                ev.start_ns = 0;
                ev.end_ns = -1;  // counted, not timed
            }
            if (const auto d = number(c_dispatch); d && b && *b >= *d && counters.empty()) {
                waits[name].add(*b - *d);
                run_wait.add(*b - *d);
            }
            KernelSums& k = kernels[name];
            ++k.dispatches;
            if (b && e && *e > *b) k.timed_ns += *e - *b;
            set_config(k, LaunchConfig{number(c_vgpr), number(c_agpr), number(c_sgpr), number(c_lds), number(c_wg),
                                       number(c_grid), number(c_scr), number(c_wave)},
                       b && e && *e > *b ? *e - *b : 0);
            for (int c : counters) {
                const auto v = number(c);
                if (!v) continue;
                const std::string& h = header[static_cast<std::size_t>(c)];
                if (auto d = k_derived_counters.find(h); d != k_derived_counters.end()) k.derived_sum[d->second] += *v;
                if (keep_all || k_formula_counters.contains(h)) k.counters[h] += *v;
            }
            if (c_accum >= 0 && c_gui >= 0 && sysinfo) {
                const auto acc = number(c_accum), gui = number(c_gui);
                if (acc && gui) {
                    k.occupancy_waves += *acc;
                    k.occupancy_cycles += *gui / std::max(1.0, sysinfo->xcds);
                }
            }
            builder.add(std::move(ev));
        }

        RunBatch batch;
        batch.format = std::string(id());
        const bool compute = has(header, {"Dispatch_ID", "Kernel_Name"});
        batch.format_detail = fmt::format("{}, {} dispatches, {} counters{}", compute ? "rocprof-compute (Omniperf 2) layout" : "rocprof v1 layout",
                                          rows, counters.size(), keep_all ? "" : " (only those perfwatch derives metrics from are kept)");
        if (rows == 0) batch.notes.push_back("no dispatches in this file");
        if (timed == 0 && rows > 0) batch.notes.push_back("no timestamps: dispatches are counted, not timed");
        if (timed > 0 && zero_length == timed)
            batch.notes.push_back("every dispatch has End <= Start (timestamps rounded, e.g. re-saved by a spreadsheet): "
                                  "durations are lost");
        finish_amd_batch(batch, builder, kernels, sysinfo);
        if (!counters.empty() && timed > 0) drop_idle_figures(batch);
        const auto set_wait = [](Entity& e, const Wait& w) {
            e.set(plain("launch_latency_mean", w.sum / static_cast<double>(w.count), "ns", "DispatchNs -> BeginNs"));
            e.set(plain("launch_latency_max", w.max, "ns", "DispatchNs -> BeginNs"));
        };
        if (run_wait.count > 0) {
            for (Entity& e : batch.entities) {
                if (e.kind == EntityKind::run) set_wait(e, run_wait);
                if (e.kind != EntityKind::kernel) continue;
                if (auto it = waits.find(e.name); it != waits.end()) set_wait(e, it->second);
            }
        }
        return batch;
    }

};

// rocprofv3 --pmc counter_collection.csv: one row per dispatch and counter (Counter_Name,
// Counter_Value) with the dispatch's launch configuration; the <prefix>agent_info.csv beside it
// names the GPU agents.
class CounterCollectionCollector final : public Collector {
public:
    std::string_view id() const override { return "rocprof-counter-collection"; }
    std::string_view description() const override {
        return "rocprofv3 *_counter_collection.csv (one row per dispatch and counter; *_agent_info.csv beside it read "
               "as context)";
    }
    bool recognizes(std::string_view head) const override {
        const auto names = header_names(head);
        return has(names, {"Dispatch_Id", "Dispatch_ID", "Index"}) && has(names, {"Kernel_Name", "KernelName"}) &&
               is_long_counter_layout(names);
    }
    Result<RunBatch> collect(const std::string& path, std::string_view content) const override {
        if (content.starts_with("\xEF\xBB\xBF")) content.remove_prefix(3);
        CsvReader reader(content);
        std::vector<std::string> header, row;
        if (reader.next(header) != CsvReader::Status::record) return fail(path, 1, "no header row");
        for (std::string& h : header) std::erase(h, '\r');
        auto col = [&](std::string_view n) { return column_index(header, {n}); };
        auto any = [&](std::initializer_list<std::string_view> names) { return column_index(header, names); };
        const int c_dispatch = any({"Dispatch_Id", "Dispatch_ID", "Index"}), c_name = any({"Kernel_Name", "KernelName"}),
                  c_agent = any({"Agent_Id", "GPU_ID", "gpu-id"}), c_counter = col("Counter_Name"),
                  c_value = col("Counter_Value"), c_grid = any({"Grid_Size", "grd"}),
                  c_wg = any({"Workgroup_Size", "wgr"}), c_lds = any({"LDS_Block_Size", "LDS_Per_Workgroup", "lds"}),
                  c_scr = any({"Scratch_Size", "Scratch_Per_Workitem", "scr"}),
                  c_vgpr = any({"VGPR_Count", "Arch_VGPR", "arch_vgpr"}), c_agpr = any({"Accum_VGPR_Count", "Accum_VGPR"}),
                  c_sgpr = any({"SGPR_Count", "SGPR", "sgpr"}), c_begin = any({"Start_Timestamp", "BeginNs"}),
                  c_end = any({"End_Timestamp", "EndNs"});
        if (c_dispatch < 0 || c_name < 0 || c_counter < 0 || c_value < 0)
            return fail(path, 1, "header lacks Dispatch_Id, Kernel_Name, Counter_Name or Counter_Value");
        struct Dispatch {
            std::string name, agent;
            std::optional<double> begin, end;
            LaunchConfig config;
            std::map<std::string, double> counters;
        };
        std::map<double, Dispatch> dispatches;  // by id: the rows of one dispatch need not be adjacent
        std::size_t rows = 0;
        while (true) {
            const auto status = reader.next(row);
            if (status == CsvReader::Status::end) break;
            if (status == CsvReader::Status::error) return fail(path, reader.record_line(), reader.error());
            if (row.size() == 1 && trim(row[0]).empty()) continue;
            if (row.size() != header.size())
                return fail(path, reader.record_line(),
                            fmt::format("expected {} fields as in the header, found {}", header.size(), row.size()));
            auto number = [&](int c) -> std::optional<double> {
                if (c < 0) return std::nullopt;
                return parse_report_number(trim(row[static_cast<std::size_t>(c)]));
            };
            const auto id = number(c_dispatch);
            const auto value = number(c_value);
            if (!id || !value) return fail(path, reader.record_line(), "expected numeric Dispatch_Id and Counter_Value");
            ++rows;
            Dispatch& d = dispatches[*id];
            d.name = std::string(trim(row[static_cast<std::size_t>(c_name)]));
            d.agent = c_agent >= 0 ? std::string(trim(row[static_cast<std::size_t>(c_agent)])) : "0";
            d.begin = number(c_begin);
            d.end = number(c_end);
            d.config = LaunchConfig{number(c_vgpr), number(c_agpr), number(c_sgpr), number(c_lds),
                                    number(c_wg),   number(c_grid), number(c_scr),  std::nullopt};
            d.counters[std::string(trim(row[static_cast<std::size_t>(c_counter)]))] += *value;
        }
        // "Agent 4" in some versions, "4" in others.
        std::string agent = dispatches.empty() ? "" : dispatches.begin()->second.agent;
        if (const auto sp = agent.rfind(' '); sp != std::string::npos) agent = agent.substr(sp + 1);
        std::string info = path;
        if (const auto at = info.rfind("counter_collection.csv"); at != std::string::npos)
            info.replace(at, std::string("counter_collection.csv").size(), "agent_info.csv");
        const auto sysinfo = info != path ? read_amd_agent_info(info, agent) : std::nullopt;

        TimelineBuilder builder(TimelineOptions{true, true});
        std::map<std::string, KernelSums> kernels;
        for (auto& [id, d] : dispatches) {
            KernelSums& k = kernels[d.name];
            ++k.dispatches;
            set_config(k, d.config, d.begin && d.end && *d.end > *d.begin ? *d.end - *d.begin : 0);
            for (const auto& [name, v] : d.counters) {
                if (auto derived = k_derived_counters.find(name); derived != k_derived_counters.end())
                    k.derived_sum[derived->second] += v;
                k.counters[name] += v;
            }
            TimelineEvent ev;
            ev.name = d.name;
            ev.device = fmt::format("agent {}", d.agent);
            ev.start_ns = d.begin.value_or(0);
            ev.end_ns = d.begin && d.end ? *d.end : -1;
            builder.add(std::move(ev));
        }
        RunBatch batch;
        batch.format = std::string(id());
        batch.format_detail = fmt::format("rocprofv3 counter collection, {} dispatches, {} rows", dispatches.size(), rows);
        if (dispatches.empty()) batch.notes.push_back("no dispatches in this file");
        else if (c_begin < 0) batch.notes.push_back("no timestamps: dispatches are counted, not timed");
        finish_amd_batch(batch, builder, kernels, sysinfo);
        if (!dispatches.empty() && c_begin >= 0) drop_idle_figures(batch);
        return batch;
    }
};

class KernelTopCollector final : public Collector {
public:
    std::string_view id() const override { return "rocprof-kernel-top"; }
    std::string_view description() const override {
        return "rocprof-compute (Omniperf) pmc_kernel_top.csv: dispatches and times per kernel";
    }
    bool recognizes(std::string_view head) const override {
        const auto names = header_names(head);
        return has(names, {"KernelName", "Kernel_Name"}) && has(names, {"Count"}) && has(names, {"Sum(ns)"});
    }
    Result<RunBatch> collect(const std::string& path, std::string_view content) const override {
        CsvReader reader(content);
        std::vector<std::string> header, row;
        if (reader.next(header) != CsvReader::Status::record) return fail(path, 1, "no header row");
        for (std::string& h : header) std::erase(h, '\r');
        auto col = [&](std::initializer_list<std::string_view> names) { return column_index(header, names); };
        const int c_name = col({"KernelName", "Kernel_Name"}), c_count = col({"Count"}), c_sum = col({"Sum(ns)"}),
                  c_median = col({"Median(ns)"});
        if (c_name < 0 || c_count < 0 || c_sum < 0)
            return fail(path, 1, "header lacks Kernel_Name (or KernelName), Count or Sum(ns)");
        RunBatch batch;
        batch.format = std::string(id());
        batch.format_detail = "rocprof-compute kernel summary";
        const std::size_t run = batch.run_entity();
        double gpu_time = 0, launches = 0;
        while (true) {
            const auto status = reader.next(row);
            if (status == CsvReader::Status::end) break;
            if (status == CsvReader::Status::error) return fail(path, reader.record_line(), reader.error());
            if (row.size() == 1 && trim(row[0]).empty()) continue;
            if (row.size() != header.size())
                return fail(path, reader.record_line(),
                            fmt::format("expected {} fields as in the header, found {}", header.size(), row.size()));
            const auto count = parse_report_number(row[static_cast<std::size_t>(c_count)]);
            const auto sum = parse_report_number(row[static_cast<std::size_t>(c_sum)]);
            if (!count || !sum) return fail(path, reader.record_line(), "expected numeric Count and Sum(ns)");
            Entity e;
            e.kind = EntityKind::kernel;
            e.name = std::string(trim(row[static_cast<std::size_t>(c_name)]));
            e.parent = static_cast<std::int64_t>(run);
            e.attributes["vendor"] = "AMD";
            set_aggregate_metrics(e, "launches", *count, *sum, std::nullopt, std::nullopt);
            if (c_median >= 0)
                if (auto m = parse_report_number(row[static_cast<std::size_t>(c_median)]))
                    e.set(plain("duration_median", *m, "ns", "Median(ns)"));
            gpu_time += *sum;
            launches += *count;
            batch.entities.push_back(std::move(e));
        }
        batch.entities[run].set(plain("gpu_time", gpu_time, "ns"));
        batch.entities[run].set(plain("launches", launches, "count"));
        batch.entities[run].set(plain("kernels", static_cast<double>(batch.entities.size() - 1), "count"));
        return batch;
    }
};

}  // namespace

std::optional<AmdSystemInfo> read_amd_sysinfo(const std::string& path) {
    const auto read = read_whole_file(path);
    if (!read) return std::nullopt;
    const std::string& text = *read;
    CsvReader reader(text);
    std::vector<std::string> header, row;
    if (reader.next(header) != CsvReader::Status::record || reader.next(row) != CsvReader::Status::record) return std::nullopt;
    std::map<std::string, std::string, std::less<>> v;
    for (std::size_t i = 0; i < header.size() && i < row.size(); ++i) {
        std::string key(trim(header[i]));
        std::erase(key, '\r');
        std::string value(trim(row[i]));
        std::erase(value, '\r');
        v[key] = value;
    }
    auto text_of = [&](std::initializer_list<std::string_view> keys) {
        for (std::string_view k : keys)
            if (auto it = v.find(k); it != v.end() && !it->second.empty()) return it->second;
        return std::string();
    };
    auto number_of = [&](std::initializer_list<std::string_view> keys) {
        const std::string t = text_of(keys);
        return parse_report_number(t).value_or(0);
    };
    AmdSystemInfo s;
    s.workload = text_of({"workload_name"});
    s.arch = text_of({"gpu_arch", "gpu_soc"});
    s.model = text_of({"gpu_model", "name"});
    s.compute_units = number_of({"cu_per_gpu", "numCU"});
    s.max_waves_per_cu = number_of({"max_waves_per_cu", "maxWavesPerCU"});
    s.xcds = std::max(1.0, number_of({"num_xcd"}));
    if (const double w = number_of({"wave_size", "waveSize"}); w > 0) s.wave_size = w;
    s.hbm_bandwidth_gbs = number_of({"hbm_bw", "hbmBW"});
    s.max_sclk_mhz = number_of({"max_sclk", "sclk"});
    s.max_mclk_mhz = number_of({"max_mclk", "mclk"});
    if (s.arch.empty() && s.model.empty()) return std::nullopt;
    return s;
}

std::optional<AmdSystemInfo> read_amd_agent_info(const std::string& path, const std::string& agent_id) {
    const auto read = read_whole_file(path);
    if (!read) return std::nullopt;
    const std::string& text = *read;
    CsvReader reader(text);
    std::vector<std::string> header, row;
    if (reader.next(header) != CsvReader::Status::record) return std::nullopt;
    for (std::string& h : header) std::erase(h, '\r');
    auto col = [&](std::string_view n) { return column_index(header, {n}); };
    const int c_type = col("Agent_Type"), c_node = col("Node_Id");
    std::optional<AmdSystemInfo> first_gpu;
    while (reader.next(row) == CsvReader::Status::record) {
        if (row.size() != header.size() || c_type < 0 || trim(row[static_cast<std::size_t>(c_type)]) != "GPU") continue;
        auto text_of = [&](std::string_view n) {
            const int c = col(n);
            return c < 0 ? std::string() : std::string(trim(row[static_cast<std::size_t>(c)]));
        };
        auto number_of = [&](std::string_view n) { return parse_report_number(text_of(n)).value_or(0); };
        AmdSystemInfo s;
        s.arch = text_of("Name");
        s.model = text_of("Product_Name");
        if (s.model == "AMD Radeon Graphics") s.model.clear();  // what rocprofv3 says of Instinct parts
        if (s.model.starts_with("AMD ")) s.model = s.model.substr(4);
        s.compute_units = number_of("Cu_Count");
        s.max_waves_per_cu = number_of("Max_Waves_Per_Cu");
        s.xcds = std::max(1.0, number_of("Num_Xcc"));
        if (const double w = number_of("Wave_Front_Size"); w > 0) s.wave_size = w;
        if (c_node >= 0 && trim(row[static_cast<std::size_t>(c_node)]) == agent_id) return s;
        if (!first_gpu) first_gpu = s;
    }
    return first_gpu;
}

std::optional<AmdOccupancy> amd_theoretical_occupancy(std::string_view arch, double arch_vgprs, double accum_vgprs,
                                                      double sgprs, double lds_bytes, double workgroup_size,
                                                      double wave_size) {
    AmdOccupancy o;
    const auto round_up = [](double x, double g) { return std::ceil(std::max(x, 1.0) / g) * g; };
    if (arch == "gfx90a" || arch == "gfx942" || arch == "gfx950") {
        // One unified file of 512 VGPRs per lane: arch VGPRs (aligned to 4) then AGPRs.
        o.max_waves_per_simd = 8;
        const double used = round_up(round_up(arch_vgprs, 4) + accum_vgprs, 8);
        o.by_vgprs = std::min(o.max_waves_per_simd, std::floor(512 / used));
    } else if (arch == "gfx908") {
        o.max_waves_per_simd = 10;
        const double used = round_up(std::max(arch_vgprs, accum_vgprs), 4);
        o.by_vgprs = std::min(o.max_waves_per_simd, std::floor(256 / used));
    } else {
        return std::nullopt;
    }
    // GFX9 SGPR occupancy steps (AMDGPU getOccupancyWithNumSGPRs): <=80: 10, <=88: 9, <=100: 8, else 7.
    const double by_sgprs = sgprs <= 80 ? 10 : sgprs <= 88 ? 9 : sgprs <= 100 ? 8 : 7;
    o.by_sgprs = std::min(o.max_waves_per_simd, by_sgprs);
    o.waves_per_workgroup = std::ceil(std::max(workgroup_size, 1.0) / std::max(wave_size, 1.0));
    o.by_lds = o.max_waves_per_simd;
    if (lds_bytes > 0) {
        const double groups = std::floor(65536 / lds_bytes);
        o.by_lds = std::min(o.max_waves_per_simd, std::floor(groups * o.waves_per_workgroup / 4));
    }
    o.waves_per_simd = std::max(0.0, std::min({o.by_vgprs, o.by_sgprs, o.by_lds}));
    if (o.waves_per_simd < o.max_waves_per_simd) {
        if (o.by_vgprs == o.waves_per_simd) o.limiter = "VGPRs";
        else if (o.by_lds == o.waves_per_simd) o.limiter = "LDS";
        else o.limiter = "SGPRs";
    }
    return o;
}

const Collector& rocprof_pmc_collector() {
    static const PmcCollector c;
    return c;
}

const Collector& rocprof_counter_collection_collector() {
    static const CounterCollectionCollector c;
    return c;
}

const Collector& rocprof_kernel_top_collector() {
    static const KernelTopCollector c;
    return c;
}

}  // namespace perfwatch
