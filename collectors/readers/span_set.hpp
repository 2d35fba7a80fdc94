#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

namespace perfwatch {

struct Span {
    double start, end;
};

// Time intervals added in any order, read back as their union in start order. Memory stays at
// `buffer_spans` spans (16 bytes each): beyond that, sorted and merged runs go to an anonymous
// temporary file and are merged again when read. Without a temporary file it keeps everything.
class SpanSet {
public:
    static constexpr std::size_t k_default_buffer = 1 << 18;

    explicit SpanSet(std::size_t buffer_spans = k_default_buffer) : m_capacity(buffer_spans) {}
    SpanSet(SpanSet&&) noexcept = default;
    SpanSet& operator=(SpanSet&&) noexcept = default;
    ~SpanSet();

    void add(double start, double end);
    bool empty() const { return m_buffer.empty() && m_runs.empty(); }
    std::uint64_t spilled_runs() const { return m_runs.size(); }

    // The union's intervals in start order, each once; reading consumes the set.
    class Merged {
    public:
        std::optional<Span> next();

    private:
        friend class SpanSet;
        struct Run {
            std::uint64_t offset = 0, left = 0;  // in spans, within the file
            std::vector<Span> buffer;
            std::size_t pos = 0;
        };
        std::optional<Span> pull();  // the next span by start across runs (not merged)
        std::vector<Span> m_memory;  // the last, in-memory run
        std::size_t m_memory_pos = 0;
        std::vector<Run> m_runs;
        std::FILE* m_file = nullptr;
        std::optional<Span> m_pending;
    };
    Merged merged();

private:
    void spill();

    std::size_t m_capacity;
    std::vector<Span> m_buffer;
    struct Closer {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    std::unique_ptr<std::FILE, Closer> m_file;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> m_runs;  // offset, count in spans
    std::uint64_t m_file_spans = 0;
};

// Length of the union of `spans`, and the longest gap between its intervals. When `also_into` is
// given, each merged interval is added to it too (a union over several sets, from their merged
// intervals only).
struct UnionStats {
    double length = 0, longest_gap = 0, first = 0, last = 0;
    bool any = false;
};
UnionStats union_stats(SpanSet& spans, SpanSet* also_into = nullptr);

// The length of the union of `a`, and how much of it the union of `b` covers.
struct Overlap {
    double a_length = 0, both = 0;
};
Overlap overlap(SpanSet& a, SpanSet& b);

}  // namespace perfwatch
