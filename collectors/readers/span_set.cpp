#include "collectors/readers/span_set.hpp"

#include <unistd.h>

#include <algorithm>

namespace perfwatch {

namespace {

// Sorts `spans` by start and merges overlapping ones in place.
void sort_and_merge(std::vector<Span>& spans) {
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
    std::size_t out = 0;
    for (std::size_t i = 0; i < spans.size(); ++i) {
        if (out > 0 && spans[i].start <= spans[out - 1].end) {
            spans[out - 1].end = std::max(spans[out - 1].end, spans[i].end);
        } else {
            spans[out++] = spans[i];
        }
    }
    spans.resize(out);
}

constexpr std::size_t k_read_spans = 4096;

}  // namespace

SpanSet::~SpanSet() = default;

void SpanSet::add(double start, double end) {
    if (m_buffer.empty()) m_buffer.reserve(std::min<std::size_t>(m_capacity, 1024));
    m_buffer.push_back({start, end});
    if (m_buffer.size() >= m_capacity) spill();
}

void SpanSet::spill() {
    sort_and_merge(m_buffer);
    if (m_buffer.size() * 2 < m_capacity) return;  // merging freed enough room
    if (!m_file) m_file.reset(std::tmpfile());
    if (!m_file || std::fseek(m_file.get(), 0, SEEK_END) != 0 ||
        std::fwrite(m_buffer.data(), sizeof(Span), m_buffer.size(), m_file.get()) != m_buffer.size() ||
        std::fflush(m_file.get()) != 0) {
        m_capacity *= 2;  // no room for a temporary file: keep the spans in memory instead
        return;
    }
    m_runs.emplace_back(m_file_spans, m_buffer.size());
    m_file_spans += m_buffer.size();
    m_buffer.clear();
}

SpanSet::Merged SpanSet::merged() {
    sort_and_merge(m_buffer);
    Merged m;
    m.m_memory = std::move(m_buffer);
    m_buffer = {};
    m.m_file = m_file.get();
    for (const auto& [offset, count] : m_runs) m.m_runs.push_back({offset, count, {}, 0});
    m_runs.clear();
    return m;
}

std::optional<Span> SpanSet::Merged::pull() {
    // The smallest head among the in-memory run and the file runs (few runs: a linear scan).
    const Span* best = nullptr;
    Run* best_run = nullptr;
    if (m_memory_pos < m_memory.size()) best = &m_memory[m_memory_pos];
    for (Run& r : m_runs) {
        if (r.pos == r.buffer.size()) {
            if (r.left == 0) continue;
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(r.left, k_read_spans));
            r.buffer.resize(n);
            const auto bytes = static_cast<ssize_t>(n * sizeof(Span));
            if (::pread(fileno(m_file), r.buffer.data(), n * sizeof(Span),
                        static_cast<off_t>(r.offset * sizeof(Span))) != bytes) {
                r.left = 0;  // an unreadable temporary file: the run ends here
                r.buffer.clear();
                r.pos = 0;
                continue;
            }
            r.offset += n;
            r.left -= n;
            r.pos = 0;
        }
        if (best == nullptr || r.buffer[r.pos].start < best->start) {
            best = &r.buffer[r.pos];
            best_run = &r;
        }
    }
    if (best == nullptr) return std::nullopt;
    const Span s = *best;
    if (best_run != nullptr) ++best_run->pos;
    else ++m_memory_pos;
    return s;
}

std::optional<Span> SpanSet::Merged::next() {
    std::optional<Span> cur = m_pending ? m_pending : pull();
    m_pending.reset();
    if (!cur) return std::nullopt;
    while (auto s = pull()) {
        if (s->start <= cur->end) {
            cur->end = std::max(cur->end, s->end);
        } else {
            m_pending = s;
            break;
        }
    }
    return cur;
}

UnionStats union_stats(SpanSet& spans, SpanSet* also_into) {
    UnionStats u;
    auto merged = spans.merged();
    while (auto s = merged.next()) {
        if (also_into != nullptr) also_into->add(s->start, s->end);
        if (!u.any) u.first = s->start;
        else u.longest_gap = std::max(u.longest_gap, s->start - u.last);
        u.length += s->end - s->start;
        u.last = s->end;
        u.any = true;
    }
    return u;
}

Overlap overlap(SpanSet& a, SpanSet& b) {
    auto ma = a.merged(), mb = b.merged();
    auto x = ma.next(), y = mb.next();
    Overlap o;
    if (x) o.a_length += x->end - x->start;
    while (x) {
        if (y) {
            const double lo = std::max(x->start, y->start), hi = std::min(x->end, y->end);
            if (hi > lo) o.both += hi - lo;
        }
        if (y && y->end <= x->end) {
            y = mb.next();
        } else {
            x = ma.next();
            if (x) o.a_length += x->end - x->start;
        }
    }
    return o;
}

}  // namespace perfwatch
