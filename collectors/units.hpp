#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace perfwatch {

// A value in one of the base units: ns, byte, hz, byte/s, percent (0-100) or count.
struct BaseValue {
    double value = 0;
    std::string_view unit;
};

// Converts `value` given in the tool's unit ("msecond", "Kbyte/block", "cycle/usecond", "%", ...)
// to its base unit. Unknown units pass through unscaled as "count".
BaseValue to_base_unit(double value, std::string_view tool_unit);

// Parses a report's number: plain, with thousands separators ("3,103,434"), with a decimal comma
// ("3.103.434,5"), or scientific. Returns nullopt for non-numeric text ("CachePreferNone",
// "(!) nan", "n/a", "").
std::optional<double> parse_report_number(std::string_view text);

// Lower-case identifier made of [a-z0-9_] from a tool's metric name: "Executed Ipc Active" ->
// "executed_ipc_active"; "sm__inst_executed.avg" -> "sm__inst_executed_avg".
std::string slug(std::string_view tool_name);

std::string_view trim(std::string_view s);

}  // namespace perfwatch
