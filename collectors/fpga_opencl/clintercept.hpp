#pragma once

#include "collectors/collector.hpp"

namespace perfwatch {

// OpenCL Intercept Layer report (clintercept_report.txt): host API and per-device timing tables.
const Collector& clintercept_report_collector();

// OpenCL Intercept Layer Chrome trace (clintercept_trace.json), also when cut short without its
// closing bracket.
const Collector& clintercept_trace_collector();

// Any other Chrome trace-event JSON with complete ("X") events: a generic timeline fallback.
const Collector& chrome_trace_collector();

}  // namespace perfwatch
