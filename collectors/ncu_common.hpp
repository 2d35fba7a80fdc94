#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/model.hpp"

namespace perfwatch {

// One profiled launch (or, for --print-summary, one group of identical launches) as read
// from any Nsight Compute output shape, before it becomes entities.
struct NcuLaunch {
    std::string id;          // ncu's launch ID; empty for summary groups
    std::string kernel;      // kernel name as printed
    double invocations = 1;  // launches this record stands for
    bool is_summary = false; // metrics are per-launch averages of a group, not one launch
    std::string device;
    std::vector<Metric> metrics;
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

// Turns launches into device, kernel (aggregating its launches) and launch entities plus
// run-level metrics (launches, kernels, gpu_time).
void build_ncu_entities(RunBatch& batch, std::vector<NcuLaunch> launches);

}  // namespace perfwatch
