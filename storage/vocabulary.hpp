#pragma once

#include <span>
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

}  // namespace perfwatch
