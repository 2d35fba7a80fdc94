#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "collectors/readers/span_set.hpp"
#include "core/model.hpp"

namespace perfwatch {

// One operation on a device timeline, as any timeline format reports it.
struct TimelineEvent {
    enum class Kind { kernel, memory, other };
    Kind kind = Kind::kernel;
    std::string name;
    std::string device;  // device id or name as the report gives it; empty: on no device (a shared
                         // copy-engine lane), so in no device's busy or idle time
    std::string queue;   // command queue or stream
    double start_ns = 0;
    double end_ns = 0;   // end < start: the report gave no end; counted, not timed
    Attributes attributes;  // kept on the launch entity
};

// Launches shorter than this count as short (FORMATS.md: launch-bound analysis).
inline constexpr double k_short_launch_ns = 10'000;

// Past this many kept durations (32 MB), medians are estimated from a uniform sample per name.
inline constexpr std::size_t k_max_kept_durations = 1 << 22;

struct TimelineOptions {
    bool emit_launches = true;   // one launch entity per kernel execution, for the first
                                 // max_launch_entities executions (later ones are aggregates only)
    bool keep_durations = true;  // keep each duration for exact medians (8 bytes per event) up to
                                 // max_kept_durations in all, then estimate them from samples;
                                 // otherwise a reservoir of k_max_samples per name is kept for rank tests
    std::size_t max_kept_durations = k_max_kept_durations;
    std::size_t max_launch_entities = k_max_launch_entities;
};

// A metric in a base unit, with the tool's own name and unit when they differ from perfwatch's.
Metric plain(std::string name, double value, std::string unit, std::string tool = {}, std::string tool_unit = {});

// Duration statistics: count, total, mean, min, max, population standard deviation, median.
struct DurationStats {
    double count = 0, total = 0, mean = 0, min = 0, max = 0, std = 0, median = 0;
    bool has_median = false;
};
DurationStats duration_stats(std::vector<double> durations);

// Sets the count (`count_name`: "launches" for kernels, "count" for other operations) and the
// duration_* metrics on `e` from `s`; `duration` (the mean) only for kernels.
void set_duration_metrics(Entity& e, const DurationStats& s, std::string_view count_name = "launches");

// Sets the count and duration_total/mean/min/max metrics from aggregates a report already gives
// (no per-event durations, so no median or spread); min and max only where the report has them.
void set_aggregate_metrics(Entity& e, std::string_view count_name, double count, double total, std::optional<double> min,
                           std::optional<double> max);

// Accumulates timeline events one at a time, in any order, keeping per-name statistics and
// per-device busy intervals (in bounded memory: SpanSet), then turns them into entities: device
// (busy, idle, overlap from merged intervals), kernel and memcpy per name (across devices),
// launch per kernel execution when asked, and run-level timeline metrics.
class TimelineBuilder {
public:
    explicit TimelineBuilder(TimelineOptions options = {}) : m_options(options) {}

    void add(TimelineEvent event);
    // The same for an event without attributes, without copying its strings once they are known.
    void add(TimelineEvent::Kind kind, std::string_view name, std::string_view device, double start_ns, double end_ns);
    // The group of `kind` events named `name` (made, with `device` as its device, when new), for
    // the add() below: a caller that keeps it looks each name up once.
    std::size_t group_index(TimelineEvent::Kind kind, std::string_view name, std::string_view device);
    // The same as the add() above for an event of group `group` (from group_index).
    void add(std::size_t group, std::string_view device, double start_ns, double end_ns);
    // Appends the entities to `batch` (its run entity gets the run-level metrics).
    void finish(RunBatch& batch);
    std::size_t kernel_events() const { return m_kernel_events; }

private:
    struct Group {
        TimelineEvent::Kind kind;
        std::string name;
        std::string device;
        bool one_device = true;
        double count = 0, timed = 0, total = 0, mean = 0, m2 = 0, min = 0, max = 0;
        double first_start = 0, first_duration = 0;  // the earliest-starting timed execution
        std::vector<double> durations;
        std::vector<double> reservoir;  // without keep_durations: a uniform sample of the durations
        std::uint64_t rng = 0x9e3779b97f4a7c15;
        std::vector<std::size_t> events;
    };
    struct Device {
        std::string name;
        SpanSet busy, kernels;
        double kernel_sum = 0, launches = 0;
    };
    // Counts an event of group `index` on `device` (its Device, none when empty, in `dev`).
    Group& enter(std::size_t index, std::string_view device, Device*& dev);
    void time(Group& g, Device* dev, bool kernel, double start_ns, double end_ns);
    void sample_from_now_on();

    TimelineOptions m_options;
    std::vector<Group> m_groups;
    std::unordered_map<std::string, std::size_t> m_group_of;
    std::vector<Device> m_devices;
    std::unordered_map<std::string, std::size_t> m_device_of;
    std::size_t m_last_device = 0;  // the device of the last event, looked at first
    std::vector<TimelineEvent> m_events;
    std::size_t m_kernel_events = 0;
    std::size_t m_unkept_launches = 0;  // executions past max_launch_entities
    std::size_t m_kept_durations = 0;
    bool m_sampled = false;  // medians estimated: too many durations to keep
    std::string m_key;
    double m_short = 0;
};

// Convenience: feeds `events` to a TimelineBuilder and finishes into `batch`.
void build_timeline_entities(RunBatch& batch, std::vector<TimelineEvent> events, const TimelineOptions& options = {});

}  // namespace perfwatch
