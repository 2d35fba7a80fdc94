#include "collectors/nsight_compute/ncu_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <regex>
#include <unordered_map>

#include "collectors/readers/units.hpp"

namespace perfwatch {

namespace {

// A launch's attributes as an entity keeps them: taken in key order, each appended.
Attributes flat_attributes(std::map<std::string, std::string> tree) {
    Attributes out;
    for (auto& [k, v] : tree) out[k] = std::move(v);
    return out;
}

// Nsight Compute names (section display names of every generation, and raw metric names)
// mapped to the canonical vocabulary. `unit` restricts an entry to values of that base unit,
// for names ncu uses twice ("Memory Throughput" is a percentage in one section and a
// bandwidth in another).
struct NcuName {
    std::string_view tool;
    std::string_view unit;
    std::string_view canonical;
};

constexpr std::array k_ncu_names = std::to_array<NcuName>({
    {"Duration", "", "duration"},
    {"gpu__time_duration.sum", "", "duration"},
    {"gpu__time_duration.avg", "", "duration"},
    {"Elapsed Cycles", "", "elapsed_cycles"},
    {"gpc__cycles_elapsed.max", "", "elapsed_cycles"},
    {"SM Active Cycles", "", "sm_active_cycles"},
    {"sm__cycles_active.avg", "", "sm_active_cycles"},
    {"SM Frequency", "", "sm_frequency"},
    {"sm__cycles_elapsed.avg.per_second", "", "sm_frequency"},
    {"DRAM Frequency", "", "dram_frequency"},
    {"Memory Frequency", "", "dram_frequency"},
    {"dram__cycles_elapsed.avg.per_second", "", "dram_frequency"},
    {"Compute (SM) Throughput", "", "sm_throughput"},
    {"Compute (SM) [%]", "", "sm_throughput"},
    {"SM [%]", "", "sm_throughput"},
    {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "", "sm_throughput"},
    {"Memory Throughput", "percent", "memory_throughput"},
    {"Memory [%]", "", "memory_throughput"},
    {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "", "memory_throughput"},
    {"Memory Throughput", "byte/s", "dram_bandwidth"},
    {"dram__bytes.sum.per_second", "", "dram_bandwidth"},
    {"DRAM Throughput", "", "dram_throughput"},
    {"SOL FB", "", "dram_throughput"},
    {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "", "dram_throughput"},
    {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "", "dram_throughput"},
    {"L1/TEX Cache Throughput", "", "l1tex_throughput"},
    {"SOL TEX", "", "l1tex_throughput"},
    {"l1tex__throughput.avg.pct_of_peak_sustained_active", "", "l1tex_throughput"},
    {"L2 Cache Throughput", "", "l2_throughput"},
    {"SOL L2", "", "l2_throughput"},
    {"lts__throughput.avg.pct_of_peak_sustained_elapsed", "", "l2_throughput"},
    {"Mem Busy", "", "mem_busy"},
    {"Max Bandwidth", "", "max_bandwidth"},
    {"Mem Pipes Busy", "", "mem_pipes_busy"},
    {"Block Size", "", "block_size"},
    {"launch__block_size", "", "block_size"},
    {"Grid Size", "", "grid_size"},
    {"launch__grid_size", "", "grid_size"},
    {"Threads", "", "threads"},
    {"launch__thread_count", "", "threads"},
    {"Registers Per Thread", "", "registers_per_thread"},
    {"launch__registers_per_thread", "", "registers_per_thread"},
    {"Static Shared Memory Per Block", "", "shared_mem_static_per_block"},
    {"launch__shared_mem_per_block_static", "", "shared_mem_static_per_block"},
    {"Dynamic Shared Memory Per Block", "", "shared_mem_dynamic_per_block"},
    {"launch__shared_mem_per_block_dynamic", "", "shared_mem_dynamic_per_block"},
    {"Driver Shared Memory Per Block", "", "shared_mem_driver_per_block"},
    {"launch__shared_mem_per_block_driver", "", "shared_mem_driver_per_block"},
    {"Shared Memory Configuration Size", "", "shared_mem_config_size"},
    {"launch__shared_mem_config_size", "", "shared_mem_config_size"},
    {"# SMs", "", "sm_count"},
    {"launch__sm_count", "", "sm_count"},
    {"device__attribute_multiprocessor_count", "", "sm_count"},
    {"Waves Per SM", "", "waves_per_sm"},
    {"launch__waves_per_multiprocessor", "", "waves_per_sm"},
    {"Block Limit SM", "", "block_limit_sm"},
    {"launch__occupancy_limit_blocks", "", "block_limit_sm"},
    {"Block Limit Registers", "", "block_limit_registers"},
    {"launch__occupancy_limit_registers", "", "block_limit_registers"},
    {"Block Limit Shared Mem", "", "block_limit_shared_mem"},
    {"launch__occupancy_limit_shared_mem", "", "block_limit_shared_mem"},
    {"Block Limit Warps", "", "block_limit_warps"},
    {"launch__occupancy_limit_warps", "", "block_limit_warps"},
    {"Block Limit Barriers", "", "block_limit_barriers"},
    {"launch__occupancy_limit_barriers", "", "block_limit_barriers"},
    {"Theoretical Occupancy", "", "occupancy_theoretical"},
    {"sm__maximum_warps_per_active_cycle_pct", "", "occupancy_theoretical"},
    {"Achieved Occupancy", "", "occupancy_achieved"},
    {"sm__warps_active.avg.pct_of_peak_sustained_active", "", "occupancy_achieved"},
    {"Theoretical Active Warps per SM", "", "warps_theoretical_per_sm"},
    {"sm__maximum_warps_avg_per_active_cycle", "", "warps_theoretical_per_sm"},
    {"Achieved Active Warps Per SM", "", "warps_achieved_per_sm"},
    {"sm__warps_active.avg.per_cycle_active", "", "warps_achieved_per_sm"},
    {"Issue Slots Busy", "", "issue_slots_busy"},
    {"sm__inst_issued.avg.pct_of_peak_sustained_active", "", "issue_slots_busy"},
    {"SM Busy", "", "sm_busy"},
    {"Executed Ipc Active", "", "ipc_executed_active"},
    {"sm__inst_executed.avg.per_cycle_active", "", "ipc_executed_active"},
    {"Executed Ipc Elapsed", "", "ipc_executed_elapsed"},
    {"sm__inst_executed.avg.per_cycle_elapsed", "", "ipc_executed_elapsed"},
    {"Issued Ipc Active", "", "ipc_issued_active"},
    {"sm__inst_issued.avg.per_cycle_active", "", "ipc_issued_active"},
    {"Eligible Warps Per Scheduler", "", "eligible_warps_per_scheduler"},
    {"smsp__warps_eligible.avg.per_cycle_active", "", "eligible_warps_per_scheduler"},
    {"Active Warps Per Scheduler", "", "active_warps_per_scheduler"},
    {"smsp__warps_active.avg.per_cycle_active", "", "active_warps_per_scheduler"},
    {"Issued Warp Per Scheduler", "", "issued_warps_per_scheduler"},
    {"No Eligible", "", "no_eligible"},
    {"One or More Eligible", "", "one_or_more_eligible"},
    {"Warp Cycles Per Issued Instruction", "", "warp_cycles_per_issued_instruction"},
    {"Warp Cycles Per Executed Instruction", "", "warp_cycles_per_executed_instruction"},
    {"Avg. Active Threads Per Warp", "", "threads_per_warp_active"},
    {"smsp__thread_inst_executed_per_inst_executed.ratio", "", "threads_per_warp_active"},
    {"Avg. Not Predicated Off Threads Per Warp", "", "threads_per_warp_not_predicated"},
    {"Executed Instructions", "", "instructions_executed"},
    {"smsp__inst_executed.sum", "", "instructions_executed"},
    {"Issued Instructions", "", "instructions_issued"},
    {"smsp__inst_issued.sum", "", "instructions_issued"},
    {"Branch Instructions", "", "branch_instructions"},
    {"smsp__inst_executed_op_branch.sum", "", "branch_instructions"},
    {"Branch Efficiency", "", "branch_efficiency"},
    {"smsp__sass_average_branch_targets_threads_uniform.pct", "", "branch_efficiency"},
    {"Avg. Divergent Branches", "", "divergent_branches"},
    {"smsp__sass_branch_targets_threads_divergent.avg", "", "divergent_branches"},
    {"L1/TEX Hit Rate", "", "l1_hit_rate"},
    {"L1 Hit Rate", "", "l1_hit_rate"},
    {"l1tex__t_sector_hit_rate.pct", "", "l1_hit_rate"},
    {"L2 Hit Rate", "", "l2_hit_rate"},
    {"lts__t_sector_hit_rate.pct", "", "l2_hit_rate"},
    {"Local Memory Spilling Requests", "", "local_spill_requests"},
    {"Local Memory Spilling Request Overhead", "", "local_spill_overhead"},
    {"derived__local_spilling_requests", "", "local_spill_requests"},
    {"derived__local_spilling_requests_pct", "", "local_spill_overhead"},
    {"derived__memory_l2_theoretical_sectors_global_excessive", "", "global_sectors_excessive"},
    {"memory_l2_theoretical_sectors_global_excessive", "", "global_sectors_excessive"},
    {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "", "shared_bank_conflicts"},
    {"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "", "shared_wavefronts"},
    {"memory_l2_theoretical_sectors_global_ideal", "", "global_sectors_ideal"},
    {"memory_l1_tag_requests_global", "", "global_sectors_requested"},
    {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "", "global_load_sectors"},
    {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "", "global_load_requests"},
    {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "", "global_store_sectors"},
    {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "", "global_store_requests"},
});

constexpr double k_bytes_per_sector = 32;

std::string limiter_text(const NcuLaunch& launch) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> k_limits{{
        {"block_limit_registers", "registers"},
        {"block_limit_shared_mem", "shared memory"},
        {"block_limit_warps", "warps"},
        {"block_limit_sm", "block count"},
        {"block_limit_barriers", "barriers"},
    }};
    double lowest = std::numeric_limits<double>::infinity();
    for (const auto& [metric, label] : k_limits)
        for (const Metric& m : launch.metrics)
            if (m.name() == metric) lowest = std::min(lowest, m.value);
    if (!std::isfinite(lowest)) return {};
    std::vector<std::string_view> names;
    for (const auto& [metric, label] : k_limits)
        for (const Metric& m : launch.metrics)
            if (m.name() == metric && m.value == lowest) names.push_back(label);
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) out += (i + 1 == names.size()) ? " and " : ", ";
        out += names[i];
    }
    return out;
}

// Launch-configuration metrics: properties of how a launch was set up, not measurements.
bool is_config_metric(std::string_view name) {
    static constexpr std::array<std::string_view, 15> k_config{
        "block_size", "grid_size", "threads", "registers_per_thread", "shared_mem_static_per_block",
        "shared_mem_dynamic_per_block", "shared_mem_driver_per_block", "shared_mem_config_size", "waves_per_sm",
        "block_limit_sm", "block_limit_registers", "block_limit_shared_mem", "block_limit_warps",
        "occupancy_theoretical", "warps_theoretical_per_sm"};
    return std::find(k_config.begin(), k_config.end(), name) != k_config.end() || name.starts_with("block_limit_");
}

// Counts of events in a launch (requests, sectors, wavefronts, conflicts, branches, instructions):
// across a kernel's launches they add up, so the kernel's figure is their total, a sum of numbers
// the report prints (a duration-weighted mean of counts is a number it holds nowhere).
bool is_event_count_metric(std::string_view name) {
    static constexpr std::array<std::string_view, 14> k_counts{
        "shared_bank_conflicts", "shared_wavefronts",   "global_sectors_excessive", "global_sectors_ideal",
        "global_sectors_requested", "global_load_sectors", "global_load_requests",  "global_store_sectors",
        "global_store_requests", "local_spill_requests", "divergent_branches",      "branch_instructions",
        "instructions_executed", "instructions_issued"};
    return std::find(k_counts.begin(), k_counts.end(), name) != k_counts.end();
}

// Most launches have some tens of metrics: a scan costs less than a map node per metric. Past
// k_scanned_metrics the names are indexed (a raw page can hold 100,000 metrics per launch).
void set_metric(NcuLaunch& launch, Metric m) {
    std::size_t at = launch.metrics.size();
    if (launch.metrics.size() < NcuLaunch::k_scanned_metrics) {
        for (std::size_t i = 0; i < launch.metrics.size() && at == launch.metrics.size(); ++i)
            if (launch.metrics[i].name() == m.name()) at = i;
    } else {
        if (launch.metric_index.size() != launch.metrics.size()) {
            launch.metric_index.clear();
            for (std::size_t i = 0; i < launch.metrics.size(); ++i) launch.metric_index.emplace(launch.metrics[i].name(), i);
        }
        const auto [it, fresh] = launch.metric_index.try_emplace(m.name(), launch.metrics.size());
        if (!fresh) at = it->second;
    }
    if (at == launch.metrics.size()) {
        launch.metrics.push_back(std::move(m));
        return;
    }
    Metric& old = launch.metrics[at];
    if (old.tool_name() == m.tool_name() || old.tool_unit().empty()) old = std::move(m);
    // else: keep the first of two tool metrics mapping to one name (display name wins over raw)
}

// The details page and the text output carry the excessive-sector counts only in the text of
// ncu's UncoalescedGlobalAccess rule: "... uncoalesced global accesses resulting in a total of
// 58720256 excessive sectors (78% of the total 75497472 sectors)". Raw metrics win when present.
void derive_sectors_from_rule_text(NcuLaunch& launch) {
    static const std::regex k_pattern(
        R"(uncoalesced global accesses resulting in a total of ([0-9,]+) excessive sectors \([0-9.]+% of the total ([0-9,]+) sectors\))");
    for (const ToolFinding& f : launch.findings) {
        std::smatch m;
        // The literal check first: std::regex is slow, and most rule texts are other rules'.
        if (f.text.find("excessive sectors") == std::string::npos || !std::regex_search(f.text, m, k_pattern)) continue;
        const auto excessive = parse_report_number(m[1].str());
        const auto total = parse_report_number(m[2].str());
        if (!excessive || !total || *total < *excessive) continue;
        const std::string source = f.rule.empty() ? "uncoalesced global access rule" : f.rule;
        set_metric(launch, Metric{"global_sectors_excessive", *excessive, "count", source, "sector"});
        set_metric(launch, Metric{"global_sectors_ideal", *total - *excessive, "count", source, "sector"});
        return;
    }
}

// Likewise the shared-memory bank conflicts, from the MemoryWorkloadAnalysis tables rule: "...
// This results in 262144 bank conflicts, which represent 49.98% of the overall 524502 wavefronts
// for shared loads." Loads and stores add up.
void derive_bank_conflicts_from_rule_text(NcuLaunch& launch) {
    static const std::regex k_pattern(
        R"(results in ([0-9,]+) bank conflicts,\s+which\s+represent\s+[0-9.]+%\s+of\s+the\s+overall\s+([0-9,]+)\s+wavefronts\s+for\s+shared\s+(loads|stores))");
    for (const Metric& m : launch.metrics)
        if (m.name() == "shared_bank_conflicts") return;  // raw metrics win
    double conflicts = 0, wavefronts = 0;
    bool any = false;
    for (const ToolFinding& f : launch.findings) {
        if (f.text.find("bank conflicts") == std::string::npos) continue;
        for (std::sregex_iterator it(f.text.begin(), f.text.end(), k_pattern), end; it != end; ++it) {
            const auto c = parse_report_number((*it)[1].str());
            const auto w = parse_report_number((*it)[2].str());
            if (!c || !w) continue;
            conflicts += *c;
            wavefronts += *w;
            any = true;
        }
    }
    if (!any) return;
    set_metric(launch, Metric{"shared_bank_conflicts", conflicts, "count", "shared memory bank conflict rule", ""});
    set_metric(launch, Metric{"shared_wavefronts", wavefronts, "count", "shared memory bank conflict rule", ""});
}

// The GPU a launch ran on: the device's display name when the report printed it (raw page),
// else its architecture from the compute capability, so runs still carry a `gpu` label.
std::string ncu_gpu_name(const NcuLaunch& l) {
    for (const char* key : {"device_attribute_display_name", "device__attribute_display_name"})
        if (auto it = l.attributes.find(key); it != l.attributes.end() && !it->second.empty()) return it->second;
    const auto cc = l.attributes.find("cc");
    if (cc == l.attributes.end() || cc->second.empty()) return {};
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 14> k_arch{{
        {"5.0", "Maxwell"}, {"5.2", "Maxwell"}, {"6.0", "Pascal"}, {"6.1", "Pascal"}, {"7.0", "Volta"},
        {"7.2", "Volta"}, {"7.5", "Turing"}, {"8.0", "Ampere"}, {"8.6", "Ampere"}, {"8.7", "Ampere"},
        {"8.9", "Ada Lovelace"}, {"9.0", "Hopper"}, {"10.0", "Blackwell"}, {"12.0", "Blackwell"}}};
    for (const auto& [version, arch] : k_arch)
        if (cc->second == version) return fmt::format("NVIDIA {} GPU (compute capability {})", arch, version);
    return fmt::format("NVIDIA GPU (compute capability {})", cc->second);
}

}  // namespace

std::optional<std::string> ncu_time_to_iso(std::string_view t) {
    static constexpr std::array<std::string_view, 12> k_months{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                               "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    t = trim(t);
    if (t.size() != 20 || t[4] != '-' || t[8] != '-' || t[11] != ' ') return std::nullopt;
    for (std::size_t m = 0; m < k_months.size(); ++m)
        if (t.substr(5, 3) == k_months[m])
            return fmt::format("{}-{:02}-{}T{}", t.substr(0, 4), m + 1, t.substr(9, 2), t.substr(12, 8));
    return std::nullopt;
}

std::string ncu_canonical_name(std::string_view tool_name, std::string_view base_unit) {
    for (const NcuName& n : k_ncu_names)
        if (n.tool == tool_name && (n.unit.empty() || n.unit == base_unit)) return std::string(n.canonical);
    return slug(tool_name);
}

namespace {

struct TransparentHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// What a (tool name, tool unit) of a report becomes: its canonical name and base unit, with the
// tool's name and unit kept beside them, as one interned key.
struct NcuMetricNames {
    std::string base_unit;  // the key's base unit (to_base_unit of the tool unit)
    MetricKey key;
};

// ncu_canonical_name and the key of a metric, worked out once per thread for each (tool name,
// tool unit, base unit): a report repeats the same few hundred metrics on every launch.
const NcuMetricNames& ncu_name_cached(std::string_view tool_name, std::string_view tool_unit, std::string_view base_unit) {
    thread_local std::unordered_map<std::string, std::vector<NcuMetricNames>, TransparentHash, std::equal_to<>> cache;
    if (cache.size() > (1U << 16)) cache.clear();  // a raw page names up to 100,000 metrics
    auto it = cache.find(tool_name);
    if (it == cache.end()) it = cache.try_emplace(std::string(tool_name)).first;
    for (const NcuMetricNames& n : it->second)
        if (n.key.tool_unit() == tool_unit && n.base_unit == base_unit) return n;
    std::string name = ncu_canonical_name(tool_name, base_unit);
    // Some versions report sector counts in bytes: they are kept as sectors (see add_ncu_value).
    const bool sectors = name.starts_with("global_sectors_") && base_unit == "byte";
    return it->second.emplace_back(NcuMetricNames{
        std::string(base_unit), MetricKey(Symbol(name), Symbol(sectors ? std::string_view("count") : base_unit),
                                          Symbol(tool_name), Symbol(tool_unit))});
}

}  // namespace

bool add_ncu_value(NcuLaunch& launch, std::string_view tool_name, std::string_view tool_unit,
                   std::string_view raw_value) {
    const std::string_view value_text = trim(raw_value);
    const std::string_view unit = trim(tool_unit);
    if (auto v = parse_report_number(value_text)) {
        BaseValue base = to_base_unit(*v, unit);
        const NcuMetricNames& n = ncu_name_cached(tool_name, unit, base.unit);
        if (n.key.unit() != base.unit) base.value /= k_bytes_per_sector;  // bytes of sectors: counted as sectors
        set_metric(launch, Metric{n.key, base.value});
        return true;
    }
    if (value_text.empty() || value_text.find("nan") != std::string_view::npos || value_text == "n/a" ||
        value_text == "N/A" || value_text == "-")
        return false;
    launch.attributes[ncu_name_cached(tool_name, "", "").key.name()] = std::string(value_text);
    return true;
}

// Block and grid sizes from the launch's "128x1x1" dimensions (the CSV's Block Size and Grid Size
// columns, the text output's kernel line) when no section printed them as metrics.
void derive_sizes_from_dimensions(NcuLaunch& launch) {
    for (const auto& [attribute, metric] : {std::pair<std::string, std::string>{"block", "block_size"},
                                            std::pair<std::string, std::string>{"grid", "grid_size"}}) {
        const auto it = launch.attributes.find(attribute);
        if (it == launch.attributes.end()) continue;
        if (std::any_of(launch.metrics.begin(), launch.metrics.end(), [&](const Metric& m) { return m.name() == metric; }))
            continue;
        double product = 1;
        std::size_t start = 0;
        bool ok = true;
        while (ok && start <= it->second.size()) {
            std::size_t x = it->second.find('x', start);
            if (x == std::string::npos) x = it->second.size();
            const auto v = parse_report_number(std::string_view(it->second).substr(start, x - start));
            ok = v && *v >= 1;
            if (ok) product *= *v;
            start = x + 1;
        }
        if (ok) set_metric(launch, Metric{metric, product, "count", attribute + " dimensions", ""});
    }
}

// Shares of a whole that no correct measurement exceeds (a little over 100% is rounding). A value
// past them (an achieved occupancy of 172%: a replay that mixed passes, a clock change mid-profile)
// makes every measured value of the launch suspect: they are removed, so no rule judges them (the
// launch configuration and the duration stay), and the impossible ones are named in the launch's
// impossible_metrics attribute. Cache hit rates are not among them: ncu's L2 hit rate passes 100% on
// correct profiles (101.59% for an H100 kernel that barely touches L2, tests/fixtures/h100).
void drop_impossible_values(NcuLaunch& launch) {
    static constexpr std::array<std::string_view, 15> k_shares{
        "sm_throughput", "memory_throughput", "dram_throughput", "l1tex_throughput", "l2_throughput",
        "mem_busy", "max_bandwidth", "mem_pipes_busy", "occupancy_theoretical", "occupancy_achieved",
        "issue_slots_busy", "sm_busy", "no_eligible", "one_or_more_eligible", "branch_efficiency"};
    constexpr double k_tolerance = 1.0;  // percent points
    std::string named;
    std::vector<Metric> kept;
    for (const Metric& m : launch.metrics) {
        const bool share = std::find(k_shares.begin(), k_shares.end(), m.name()) != k_shares.end();
        if (share && (m.value > 100 + k_tolerance || m.value < -k_tolerance))
            named += fmt::format("{}{} {:g}%", named.empty() ? "" : ", ", m.tool_name().empty() ? m.name() : m.tool_name(), m.value);
    }
    if (named.empty()) return;
    for (Metric& m : launch.metrics)
        if (is_config_metric(m.name()) || m.name() == "duration") kept.push_back(std::move(m));
    launch.metrics = std::move(kept);
    launch.metric_index.clear();
    launch.attributes["impossible_metrics"] = named;
}

void derive_ncu_attributes(NcuLaunch& launch) {
    drop_impossible_values(launch);
    derive_sizes_from_dimensions(launch);
    if (std::string limiter = limiter_text(launch); !limiter.empty())
        launch.attributes["occupancy_limiter"] = std::move(limiter);
    derive_sectors_from_rule_text(launch);
    derive_bank_conflicts_from_rule_text(launch);
}

void NcuEntityBuilder::add(NcuLaunch l) {
    derive_ncu_attributes(l);
    ++m_records;
    if (!l.device.empty() && !m_device_of.contains(l.device)) {
        Entity dev;
        dev.kind = EntityKind::device;
        dev.name = "device " + l.device;
        if (auto it = l.attributes.find("cc"); it != l.attributes.end()) dev.attributes["cc"] = it->second;
        for (const Metric& m : l.metrics)
            if (m.name() == "sm_count") dev.set(m);
        if (const std::string gpu = ncu_gpu_name(l); !gpu.empty()) dev.attributes["gpu"] = gpu;
        m_device_of[l.device] = m_devices.size();
        m_devices.push_back(std::move(dev));
    }
    const auto [slot, fresh] = m_kernel_of.try_emplace(l.kernel, m_kernels.size());
    if (!fresh)
        if (auto bad = l.attributes.find("impossible_metrics"); bad != l.attributes.end())
            m_kernels[slot->second].attributes["impossible_metrics"] = bad->second;
    if (fresh) {
        m_kernels.emplace_back();
        m_kernels.back().name = l.kernel;
        m_kernels.back().device = l.device;
        m_kernels.back().summary = l.is_summary;
        m_kernels.back().attributes = flat_attributes(l.attributes);
    }
    Kernel& k = m_kernels[slot->second];
    const Metric* d = nullptr;
    for (const Metric& m : l.metrics)
        if (m.name() == "duration") d = &m;
    k.count += l.invocations;
    if (d == nullptr) {
        k.timed = false;
    } else {
        k.total += d->value * l.invocations;
        if (!l.is_summary) {
            k.dmin = std::min(k.dmin, d->value);
            k.dmax = std::max(k.dmax, d->value);
        }
    }
    // Both weightings are kept until the end tells whether every launch was timed.
    const double by_count = l.invocations;
    const double by_time = d != nullptr ? d->value * l.invocations : 0;
    for (const Metric& m : l.metrics) {
        auto [it, first] = k.metrics.try_emplace(m.name());
        Aggregate& a = it->second;
        if (first) {
            k.metric_order.push_back(m.name());
            a.first = m;
        } else if (a.first.value != m.value) {
            a.uniform = false;
        }
        a.sum_by_count += m.value * by_count;
        a.weight_by_count += by_count;
        a.sum_by_time += m.value * by_time;
        a.weight_by_time += by_time;
    }
    if (by_count > k.dominant_count_weight) {
        k.dominant_count_weight = by_count;
        k.dominant_by_count = l.metrics;
    }
    if (by_time > k.dominant_time_weight) {
        k.dominant_time_weight = by_time;
        k.dominant_by_time = l.metrics;
    }
    // Attributes shared by every launch describe the kernel.
    if (k.members > 0)
        erase_if(k.attributes, [&](const auto& kv) {
            auto it = l.attributes.find(kv.first);
            return it == l.attributes.end() || it->second != kv.second;
        });
    if (auto it = l.attributes.find("occupancy_limiter"); it != l.attributes.end()) k.limiter = it->second;
    ++k.members;

    if (k.summary) {
        // A summary group has no per-launch records; its rule results belong to the kernel.
        for (ToolFinding& f : l.findings) k.findings.push_back(std::move(f));
        return;
    }
    if (m_kept_launches >= m_max_launch_entities) return;
    ++m_kept_launches;
    Entity launch;
    launch.kind = EntityKind::launch;
    launch.name = l.id.empty() ? l.kernel : fmt::format("{} #{}", l.kernel, l.id);
    launch.metrics = std::move(l.metrics);
    launch.attributes = flat_attributes(std::move(l.attributes));
    if (!l.id.empty()) launch.attributes["id"] = l.id;
    launch.tool_findings = std::move(l.findings);
    k.launches.push_back(std::move(launch));
}

void NcuEntityBuilder::finish(RunBatch& batch) {
    const std::size_t run_index = batch.run_entity();
    for (Entity& dev : m_devices) {
        dev.parent = static_cast<std::int64_t>(run_index);
        batch.entities.push_back(std::move(dev));
    }
    double run_gpu_time = 0, run_launches = 0, all_launches = 0;
    double clock_sum = 0, clock_weight = 0;  // the SM clock over the run, weighted by GPU time (or launches)
    bool have_time = false;
    for (Kernel& k : m_kernels) {
        Entity kernel;
        kernel.kind = EntityKind::kernel;
        kernel.name = k.name;
        kernel.parent = static_cast<std::int64_t>(run_index);
        // Event counts are their total over the launches. Other metrics: the common value when
        // launches agree. Otherwise launch-configuration metrics take the values of the launch with
        // the most GPU time (so grid, waves and limits stay consistent with each other) and
        // measured ones the duration-weighted mean.
        const std::vector<Metric>& dominant = k.timed ? k.dominant_by_time : k.dominant_by_count;
        for (const std::string& mname : k.metric_order) {
            if (mname == "duration") continue;  // replaced by the duration statistics below
            const Aggregate& a = k.metrics.at(mname);
            Metric m = a.first;
            if (!a.uniform) {
                const Metric* from_dominant = nullptr;
                for (const Metric& dm : dominant)
                    if (dm.name() == mname) from_dominant = &dm;
                const double sum = k.timed ? a.sum_by_time : a.sum_by_count;
                const double weight = k.timed ? a.weight_by_time : a.weight_by_count;
                if (is_config_metric(mname) && from_dominant != nullptr)
                    m.value = from_dominant->value;
                else if (weight > 0)
                    m.value = sum / weight;
            }
            if (is_event_count_metric(mname)) m.value = a.sum_by_count;
            kernel.metrics.push_back(std::move(m));
        }
        kernel.set(Metric{"launches", k.count, "count", "", ""});
        if (k.timed && k.count > 0) {
            const auto d = k.metrics.find("duration");
            const std::string tool_name = d != k.metrics.end() ? d->second.first.tool_name() : "";
            const std::string tool_unit = d != k.metrics.end() ? d->second.first.tool_unit() : "";
            kernel.set(Metric{"duration_total", k.total, "ns", tool_name, tool_unit});
            kernel.set(Metric{"duration_mean", k.total / k.count, "ns", tool_name, tool_unit});
            kernel.set(Metric{"duration", k.total / k.count, "ns", tool_name, tool_unit});
            if (std::isfinite(k.dmin)) {
                kernel.set(Metric{"duration_min", k.dmin, "ns", tool_name, tool_unit});
                kernel.set(Metric{"duration_max", k.dmax, "ns", tool_name, tool_unit});
            }
            run_gpu_time += k.total;
            have_time = true;
        }
        run_launches += k.count;
        if (const auto clock = kernel.value("sm_frequency"); clock && std::isfinite(*clock) && *clock > 0) {
            const double weight = k.timed ? k.total : k.count;
            clock_sum += *clock * weight;
            clock_weight += weight;
        }
        kernel.attributes = std::move(k.attributes);
        if (k.members > 1 && !kernel.attributes.contains("occupancy_limiter") && !k.limiter.empty())
            kernel.attributes["occupancy_limiter"] = k.limiter;
        if (m_device_of.contains(k.device)) kernel.attributes["device"] = "device " + k.device;
        kernel.tool_findings = std::move(k.findings);
        const std::size_t kernel_index = batch.entities.size();
        batch.entities.push_back(std::move(kernel));
        if (!k.summary) all_launches += static_cast<double>(k.members);
        for (Entity& launch : k.launches) {
            launch.parent = static_cast<std::int64_t>(kernel_index);
            batch.entities.push_back(std::move(launch));
        }
    }
    if (static_cast<double>(m_kept_launches) < all_launches)
        batch.notes.push_back(fmt::format("launch entities are kept for the first {} of {:.0f} launches (bounded "
                                          "memory); every launch counts in its kernel's figures",
                                          m_kept_launches, all_launches));
    Entity& run = batch.entities[run_index];
    run.set(Metric{"launches", run_launches, "count", "", ""});
    run.set(Metric{"kernels", static_cast<double>(m_kernels.size()), "count", "", ""});
    if (have_time) run.set(Metric{"gpu_time", run_gpu_time, "ns", "", ""});
    if (clock_weight > 0) run.set(Metric{"sm_frequency", clock_sum / clock_weight, "hz", "", ""});
}

bool says_unlocked_clocks(std::string_view line) {
    return line.starts_with("==WARNING==") && line.find("unmodified GPU clocks") != std::string_view::npos;
}

void build_ncu_entities(RunBatch& batch, std::vector<NcuLaunch> launches) {
    NcuEntityBuilder builder;
    for (NcuLaunch& l : launches) builder.add(std::move(l));
    builder.finish(batch);
}

}  // namespace perfwatch
