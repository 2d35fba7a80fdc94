#pragma once

#include <map>
#include <string>
#include <vector>

#include "storage/model.hpp"

namespace perfwatch {

// One operation on a device timeline, as any timeline format reports it.
struct TimelineEvent {
    enum class Kind { kernel, memory, other };
    Kind kind = Kind::kernel;
    std::string name;
    std::string device;  // device id or name as the report gives it
    std::string queue;   // command queue or stream
    double start_ns = 0;
    double end_ns = 0;   // end < start: the report gave no end; counted, not timed
    std::map<std::string, std::string> attributes;  // kept on the launch entity
};

// Launches shorter than this count as short (FORMATS.md: launch-bound analysis).
inline constexpr double k_short_launch_ns = 10'000;

struct TimelineOptions {
    bool emit_launches = true;  // one launch entity per kernel execution
};

// Turns timeline events into entities: device (busy, idle and overlap from merged intervals),
// kernel (per name and device: launches and duration statistics), launch (per execution),
// memcpy (per operation name) and run-level timeline metrics.
void build_timeline_entities(RunBatch& batch, std::vector<TimelineEvent> events, const TimelineOptions& options = {});

// Duration statistics: count, total, mean, min, max, population standard deviation, median.
struct DurationStats {
    double count = 0, total = 0, mean = 0, min = 0, max = 0, std = 0, median = 0;
};
DurationStats duration_stats(std::vector<double> durations);

// Sets the count (`count_name`: "launches" for kernels, "count" for other operations) and the
// duration_* metrics on `e` from `s`; `duration` (the mean) only for kernels.
void set_duration_metrics(Entity& e, const DurationStats& s, std::string_view count_name = "launches");

}  // namespace perfwatch
