#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "collectors/readers/span_set.hpp"

namespace perfwatch {

// GPU idle time during synchronizing host calls. The calls come first (at most max_calls), then
// every device operation in any order; a call's wait that no operation covers is idle. Memory is
// the calls plus the pieces of operations that meet a call (at most max_pieces).
class SyncIdle {
public:
    explicit SyncIdle(std::size_t max_calls = 1 << 16, std::size_t max_pieces = 1 << 22)
        : m_max_calls(max_calls), m_max_pieces(max_pieces) {}

    void add_call(double start, double end, const std::string& name);
    // Call once every call is added, before the first add_busy.
    void calls_done();
    void add_busy(double start, double end);
    // Per call name, the GPU idle time during its calls; empty when there were no calls or too many
    // calls or pieces to keep (then nothing is claimed).
    std::map<std::string, double> idle_by_name();

private:
    struct Call {
        double start = 0, end = 0;
        std::size_t name = 0;
    };
    std::vector<Call> m_calls;
    std::vector<std::string> m_names;
    std::vector<double> m_reach;               // the latest end among calls 0..i (start order)
    std::vector<std::vector<Span>> m_pieces;   // per call, the busy pieces inside it
    std::size_t m_kept = 0, m_max_calls, m_max_pieces;
    bool m_overflow = false;
};

}  // namespace perfwatch
