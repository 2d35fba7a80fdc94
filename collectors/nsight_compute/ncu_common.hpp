#pragma once

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/model.hpp"

namespace perfwatch {

// One profiled launch (or, for --print-summary, one group of identical launches) as read
// from any Nsight Compute output shape, before it becomes entities.
struct NcuLaunch {
    std::string id;          // ncu's launch ID; empty for summary groups
    std::string kernel;      // kernel name as printed
    double invocations = 1;  // launches this record stands for
    bool is_summary = false; // metrics are per-launch averages of a group, not one launch
    std::string device;
    // Launches with fewer metrics are searched by a scan; past it, through metric_index.
    static constexpr std::size_t k_scanned_metrics = 64;
    std::vector<Metric> metrics;  // names unique (set_metric)
    std::unordered_map<Symbol, std::size_t> metric_index;  // name -> position, once past the scan
    // A tree while the launch is read (a raw page may hold thousands of text values, in column
    // order), made an entity's flat Attributes in key order once the launch is complete.
    std::map<std::string, std::string> attributes;
    std::vector<ToolFinding> findings;
};

// Adds one metric read from the report: numeric values are normalized to base units under
// their canonical name; non-numeric ones become attributes. Returns false when the value is
// neither a number nor text worth keeping ("(!) nan", "n/a", empty).
bool add_ncu_value(NcuLaunch& launch, std::string_view tool_name, std::string_view tool_unit,
                   std::string_view raw_value);

// Canonical metric name for an Nsight Compute metric (display name such as "Duration" or raw
// name such as "gpu__time_duration.sum"), given the base unit of its value.
std::string ncu_canonical_name(std::string_view tool_name, std::string_view base_unit);

// "2022-Jun-03 11:31:08" (ncu's kernel time) -> "2022-06-03T11:31:08"; nullopt otherwise.
std::optional<std::string> ncu_time_to_iso(std::string_view text);

// Names the occupancy limiter from the block limits ("registers", "registers and shared memory").
void derive_ncu_attributes(NcuLaunch& launch);

// Turns launches, given one at a time as they are read, into device, kernel (aggregating its
// launches) and launch entities plus run-level metrics (launches, kernels, gpu_time). Memory
// grows with the number of kernels, not launches: past `max_launch_entities` launches only the
// kernels' aggregates change (a note says so).
class NcuEntityBuilder {
public:
    explicit NcuEntityBuilder(std::size_t max_launch_entities = k_max_launch_entities)
        : m_max_launch_entities(max_launch_entities) {}
    void add(NcuLaunch launch);
    // Appends the entities to `batch` (its run entity gets the run-level metrics).
    void finish(RunBatch& batch);
    std::size_t records() const { return m_records; }

private:
    struct Aggregate {
        Metric first;
        bool uniform = true;
        double sum_by_count = 0, weight_by_count = 0, sum_by_time = 0, weight_by_time = 0;
    };
    struct Kernel {
        std::string name, device, limiter;
        bool summary = false, timed = true;
        double count = 0, total = 0;
        double dmin = std::numeric_limits<double>::infinity(), dmax = -std::numeric_limits<double>::infinity();
        std::size_t members = 0;
        std::vector<std::string> metric_order;
        std::unordered_map<std::string, Aggregate> metrics;
        std::vector<Metric> dominant_by_count, dominant_by_time;
        double dominant_count_weight = -1, dominant_time_weight = -1;
        Attributes attributes;  // those every launch so far shares
        std::vector<ToolFinding> findings;
        std::vector<Entity> launches;
    };
    std::size_t m_max_launch_entities;
    std::size_t m_records = 0, m_kept_launches = 0;
    std::vector<Entity> m_devices;
    std::map<std::string, std::size_t> m_device_of;
    std::vector<Kernel> m_kernels;
    std::unordered_map<std::string, std::size_t> m_kernel_of;
};

// Convenience: feeds `launches` to an NcuEntityBuilder and finishes into `batch`.
// ncu's note when it profiled without locking the clocks (--clock-control none); such a run gets
// the environment label clocks=unlocked.
bool says_unlocked_clocks(std::string_view line);

void build_ncu_entities(RunBatch& batch, std::vector<NcuLaunch> launches);

}  // namespace perfwatch
