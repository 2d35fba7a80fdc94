#include "collectors/readers/sync_idle.hpp"

#include <algorithm>

namespace perfwatch {

void SyncIdle::add_call(double start, double end, const std::string& name) {
    if (m_calls.size() >= m_max_calls) {
        m_overflow = true;
        return;
    }
    auto it = std::find(m_names.begin(), m_names.end(), name);
    if (it == m_names.end()) it = m_names.insert(m_names.end(), name);
    m_calls.push_back({start, end, static_cast<std::size_t>(it - m_names.begin())});
}

void SyncIdle::calls_done() {
    std::sort(m_calls.begin(), m_calls.end(), [](const Call& a, const Call& b) { return a.start < b.start; });
    m_reach.resize(m_calls.size());
    double reach = 0;
    for (std::size_t i = 0; i < m_calls.size(); ++i) m_reach[i] = reach = i == 0 ? m_calls[i].end : std::max(reach, m_calls[i].end);
    m_pieces.assign(m_calls.size(), {});
}

void SyncIdle::add_busy(double start, double end) {
    if (m_calls.empty() || m_overflow || !(end > start)) return;
    // Calls starting before the operation ends; walk back while an earlier call may still reach it.
    auto it = std::upper_bound(m_calls.begin(), m_calls.end(), end, [](double t, const Call& c) { return t < c.start; });
    for (auto i = static_cast<std::size_t>(it - m_calls.begin()); i-- > 0;) {
        if (m_reach[i] <= start) break;
        const Call& c = m_calls[i];
        const double lo = std::max(start, c.start), hi = std::min(end, c.end);
        if (hi <= lo) continue;
        if (++m_kept > m_max_pieces) {
            m_overflow = true;
            return;
        }
        m_pieces[i].push_back({lo, hi});
    }
}

std::map<std::string, double> SyncIdle::idle_by_name() {
    std::map<std::string, double> out;
    if (m_overflow) return out;
    for (std::size_t i = 0; i < m_calls.size(); ++i) {
        auto& pieces = m_pieces[i];
        std::sort(pieces.begin(), pieces.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
        double busy = 0, lo = 0, hi = 0;
        bool open = false;
        for (const Span& p : pieces) {
            if (open && p.start <= hi) {
                hi = std::max(hi, p.end);
                continue;
            }
            if (open) busy += hi - lo;
            lo = p.start;
            hi = p.end;
            open = true;
        }
        if (open) busy += hi - lo;
        out[m_names[m_calls[i].name]] += (m_calls[i].end - m_calls[i].start) - busy;
    }
    return out;
}

}  // namespace perfwatch
