#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace perfwatch {

// One canonical metric: the name rules use, its base unit, the entity kinds that carry it
// and what it means.
struct MetricDef {
    std::string_view name;
    std::string_view unit;  // ns, byte, hz, byte/s, percent, count, byte/cycle
    std::string_view kinds; // comma-separated entity kinds
    std::string_view description;
};

// The canonical metric vocabulary, the language rules are written in. Collectors map the
// tools' own names onto it; names a tool reports beyond it are kept under slug(tool_name).
std::span<const MetricDef> metric_vocabulary();

const MetricDef* find_metric_def(std::string_view name);

// `value` in the largest fitting unit: `kind` "time" takes nanoseconds ("1.25 ms"), "bytes"
// bytes in SI units ("3.2 GB"); nullopt for another kind.
std::optional<std::string> format_in_unit(double value, std::string_view kind);

// A metric's value as people read it: times and byte counts in fitting units, percentages with
// a %, other numbers plain.
std::string format_metric(std::string_view metric, double value);

}  // namespace perfwatch
