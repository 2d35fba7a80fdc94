#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace perfwatch {

// One event of a Chrome trace: complete ("X") events with their times in microseconds, and
// metadata ("M") events with their args.name in `label` (process and thread names).
struct TraceEvent {
    std::string_view name, cat, ph, label;
    double ts = 0, dur = -1;
    std::string pid, tid;
    bool tid_negative = false, tid_is_string = false;
    // rocprof v1 also writes each event's nanosecond times in args (BeginNs, EndNs): -1 when absent.
    double begin_ns = -1, end_ns = -1;
};

// Reads a Chrome trace document (plain or gzip): a JSON array of events, or an object with
// "traceEvents". A trace cut short (no closing bracket, a partial last event) is closed after its
// last complete event; the returned string is then a note saying so (else empty). Numbers
// written as strings (rocprof) are accepted.
Result<std::string> read_trace(const std::string& path, std::string_view content,
                               const std::function<void(const TraceEvent&)>& take);

}  // namespace perfwatch
