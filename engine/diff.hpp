#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/model.hpp"

namespace perfwatch {

struct DiffOptions {
    EntityKind kind = EntityKind::kernel;
    double min_change_pct = 5;  // smaller per-launch changes are "unchanged"
    double confidence = 0.99;   // needed where both sides have per-instance samples
};

// One entity of either run, matched by name.
struct DiffEntry {
    // count_changed: the per-launch time held, but the number of launches (or operations) changed.
    enum class Status { added, removed, slower, faster, count_changed, unchanged };
    std::string name;
    Status status = Status::unchanged;
    double count_a = 0, count_b = 0;  // launches (kernels) or operations
    double total_a = 0, total_b = 0;  // summed duration, ns
    double mean_a = 0, mean_b = 0;    // per launch or operation, ns
    double change_pct = 0;            // of the per-launch time (Hodges-Lehmann shift with samples)
    std::optional<double> confidence; // that the change is real, 0-1, where samples allow a rank test
    // Deterministic properties that differ, compared exactly: "registers_per_thread 128 -> 168",
    // "active_blocks_per_sm 32 -> absent".
    std::vector<std::string> property_changes;
};

// Properties of a kernel that do not vary between identical builds: compared exactly.
bool is_deterministic_metric(std::string_view metric);

struct RunDiff {
    std::vector<DiffEntry> entries;  // largest change of total time first
    std::size_t added = 0, removed = 0, slower = 0, faster = 0, count_changed = 0, unchanged = 0;
    double total_a = 0, total_b = 0;
    double count_a = 0, count_b = 0;  // launches (kernels) or operations in all
};

std::string_view to_string(DiffEntry::Status status);

// Compares the entities of one kind of run `a` (before) and run `b` (after) by name, like a
// trace diff: added, removed, slower, faster, count changed, unchanged, with counts and total time. `a` is
// taken by value: it becomes the one-run baseline of the comparison.
RunDiff diff_runs(RunBatch a, const RunBatch& b, const DiffOptions& options = {});

}  // namespace perfwatch
