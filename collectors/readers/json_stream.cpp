#include "collectors/readers/json_stream.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "collectors/readers/units.hpp"

namespace perfwatch {

namespace {
constexpr int k_eof = -1;
}

Result<std::size_t> JsonEventStream::refill() {
    const std::size_t capacity = m_buffer.size() - k_json_padding;
    // Grow when the value being scanned fills the buffer (one event or member at a time), and
    // while input keeps coming, up to 256 KB (small reports stay with a small buffer; large ones
    // are read in large chunks).
    if (m_len == capacity || (m_offset > 4 * capacity && capacity < (1 << 18))) m_buffer.resize(capacity * 2 + k_json_padding);
    auto r = m_source.read(m_buffer.data() + m_len, m_buffer.size() - k_json_padding - m_len);
    if (!r) return std::unexpected(r.error());
    m_len += *r;
    return *r;
}

void JsonEventStream::drop_before(std::size_t from) {
    m_offset += from - m_pos;
    std::memmove(m_buffer.data(), m_buffer.data() + from, m_len - from);
    m_len -= from;
    m_pos = 0;
}

Result<int> JsonEventStream::peek() {
    if (m_pos == m_len) {
        m_pos = m_len = 0;
        auto r = refill();
        if (!r) return std::unexpected(r.error());
        if (*r == 0) return k_eof;
    }
    return static_cast<unsigned char>(m_buffer[m_pos]);
}

Result<int> JsonEventStream::get() {
    auto c = peek();
    if (c && *c != k_eof) {
        ++m_pos;
        ++m_offset;
    }
    return c;
}

std::unexpected<Error> JsonEventStream::eof_error(std::string_view where) const {
    return fail_at_offset(m_path, m_offset,
                          fmt::format("unexpected end of JSON {} (file cut short?)", where));
}

Result<void> JsonEventStream::skip_ws() {
    while (true) {
        while (m_pos < m_len && is_space(m_buffer[m_pos])) {
            ++m_pos;
            ++m_offset;
        }
        if (m_pos < m_len) return {};
        auto c = peek();  // refills
        if (!c) return std::unexpected(c.error());
        if (*c == k_eof) return {};
    }
}

Result<void> JsonEventStream::expect(char want, std::string_view what) {
    if (auto r = skip_ws(); !r) return r;
    auto c = get();
    if (!c) return std::unexpected(c.error());
    if (*c == k_eof) return eof_error(fmt::format("where {} was expected", what));
    if (*c != want)
        return fail_at_offset(m_path, m_offset - 1,
                              fmt::format("expected {} ('{}'), found '{}'", what, want, static_cast<char>(*c)));
    return {};
}

Result<void> JsonEventStream::read_string(std::string* out) {
    auto q = get();  // opening quote
    if (!q) return std::unexpected(q.error());
    if (out) out->push_back('"');
    while (true) {
        // Copy runs of plain characters straight from the buffer.
        if (m_pos == m_len) {
            auto c = peek();
            if (!c) return std::unexpected(c.error());
            if (*c == k_eof) return eof_error("inside a string");
        }
        std::size_t i = m_pos;
        while (i < m_len && m_buffer[i] != '"' && m_buffer[i] != '\\') ++i;
        if (out) out->append(m_buffer.data() + m_pos, i - m_pos);
        m_offset += i - m_pos;
        m_pos = i;
        if (m_pos == m_len) continue;
        const char c = m_buffer[m_pos++];
        ++m_offset;
        if (out) out->push_back(c);
        if (c == '"') return {};
        auto esc = get();  // the escaped character
        if (!esc) return std::unexpected(esc.error());
        if (*esc == k_eof) return eof_error("inside a string");
        if (out) out->push_back(static_cast<char>(*esc));
    }
}

namespace {

// The characters of a 64-byte block that the scanner looks at, a bit each (bit i: block[i]).
struct BlockBits {
    std::uint64_t quote = 0, backslash = 0, high = 0;  // high: bytes above 0x7F
    std::uint64_t bracket = 0, structural = 0;  // bracket: { } [ ]; structural: those, ',' and ':'
};

constexpr std::size_t k_block = 64;

// The characters a backslash escapes. `carry`: the block's first character is escaped (the
// previous block ended in an escaping backslash); set for the next block. Backslashes are rare
// in traces: walked one at a time.
std::uint64_t escaped_bits(std::uint64_t backslash, bool& carry) {
    std::uint64_t escaped = carry ? 1 : 0;
    carry = false;
    backslash &= ~escaped;
    while (backslash != 0) {
        const int i = std::countr_zero(backslash);
        backslash &= backslash - 1;
        if (i == 63) {
            carry = true;
            break;
        }
        const std::uint64_t next = std::uint64_t{2} << i;
        escaped |= next;
        backslash &= ~next;  // an escaped backslash escapes nothing
    }
    return escaped;
}

// Bit i set where an odd number of bits 0..i are set: inside a string from its opening quote
// (included) to its closing one (excluded).
std::uint64_t prefix_xor(std::uint64_t x) {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}

// The hint a top-level key names (by Hints' order: 1 ph, 2 cat, 3 name, 4 ts, 5 dur, 6 args), 0 for
// any other: its length first, then bytes compared at a known length (no call per key).
[[gnu::always_inline]] inline std::size_t hint_key(const char* key, std::size_t length) {
    const auto is = [key](const char (&word)[5]) { return std::memcmp(key, word, 4) == 0; };
    switch (length) {
    case 2: return key[0] == 'p' && key[1] == 'h' ? 1 : key[0] == 't' && key[1] == 's' ? 4 : 0;
    case 3: return std::memcmp(key, "cat", 3) == 0 ? 2 : std::memcmp(key, "dur", 3) == 0 ? 5 : 0;
    case 4: return is("name") ? 3 : is("args") ? 6 : 0;
    default: return 0;
    }
}

}  // namespace

Result<std::string_view> JsonEventStream::scalar(bool keep) {
    // A number, true, false or null: up to a separator, a closing bracket or white space.
    std::size_t start = m_pos, i = m_pos;
    while (true) {
        while (i < m_len && !is_space(m_buffer[i]) && m_buffer[i] != ',' && m_buffer[i] != ']' && m_buffer[i] != '}') ++i;
        if (i < m_len) break;
        const std::size_t from = keep ? start : i;
        drop_before(from);
        i -= from;
        start = keep ? start - from : 0;
        auto r = refill();
        if (!r) return std::unexpected(r.error());
        if (*r == 0) break;  // a scalar at the very end
    }
    const std::string_view text(m_buffer.data() + start, i - start);
    m_offset += i - m_pos;
    m_pos = i;
    return keep ? text : std::string_view();
}

// value_at() and events_at(), compiled once for each instruction set: each version classifies
// its blocks with the widest registers its set has.
#define PERFWATCH_WALK_LEVEL ScanLevel::base
#define PERFWATCH_WALK_SET 0
#define PERFWATCH_WALK_TARGET
#include "collectors/readers/json_walk.inc"
#undef PERFWATCH_WALK_LEVEL
#undef PERFWATCH_WALK_SET
#undef PERFWATCH_WALK_TARGET
#if defined(__x86_64__)
#define PERFWATCH_WALK_LEVEL ScanLevel::avx2
#define PERFWATCH_WALK_SET 1
#define PERFWATCH_WALK_TARGET __attribute__((target("avx2,bmi")))
#include "collectors/readers/json_walk.inc"
#undef PERFWATCH_WALK_LEVEL
#undef PERFWATCH_WALK_SET
#undef PERFWATCH_WALK_TARGET
#define PERFWATCH_WALK_LEVEL ScanLevel::avx512
#define PERFWATCH_WALK_SET 2
#define PERFWATCH_WALK_TARGET __attribute__((target("avx512f,avx512bw,bmi")))
#include "collectors/readers/json_walk.inc"
#undef PERFWATCH_WALK_LEVEL
#undef PERFWATCH_WALK_SET
#undef PERFWATCH_WALK_TARGET
#endif

Result<std::string_view> JsonEventStream::value(bool keep, Hints* hints) {
    switch (m_level) {
#if defined(__x86_64__)
    case ScanLevel::avx512: return value_at<ScanLevel::avx512>(keep, hints);
    case ScanLevel::avx2: return value_at<ScanLevel::avx2>(keep, hints);
#endif
    default: return value_at<ScanLevel::base>(keep, hints);
    }
}

Result<void> JsonEventStream::events(const EventFn& on_event) {
    switch (m_level) {
#if defined(__x86_64__)
    case ScanLevel::avx512: return events_at<ScanLevel::avx512>(on_event);
    case ScanLevel::avx2: return events_at<ScanLevel::avx2>(on_event);
#endif
    default: return events_at<ScanLevel::base>(on_event);
    }
}

Result<void> JsonEventStream::run(const WantFn& want_member, const MemberFn& on_member, const EventFn& on_event) {
    if (auto r = skip_ws(); !r) return r;
    auto first = get();
    if (!first) return std::unexpected(first.error());
    if (*first == '[') return events(on_event);
    if (*first != '{') return fail_at_offset(m_path, 0, "expected a JSON object or array of trace events");
    std::string key;
    if (auto r = skip_ws(); !r) return r;
    if (auto c = peek(); c && *c == '}') return {};
    while (true) {
        if (auto r = skip_ws(); !r) return r;
        auto c = peek();
        if (!c) return std::unexpected(c.error());
        if (*c == k_eof) return eof_error("in the top-level object");
        if (*c != '"') return fail_at_offset(m_path, m_offset, "expected a member name");
        key.clear();
        if (auto r = read_string(&key); !r) return r;
        const std::string_view name = std::string_view(key).substr(1, key.size() - 2);
        if (auto r = expect(':', "a colon"); !r) return r;
        if (name == "traceEvents") {
            if (auto r = expect('[', "the traceEvents array"); !r) return r;
            if (auto r = events(on_event); !r) return r;
        } else if (want_member(name)) {
            auto member = value(true);
            if (!member) return std::unexpected(member.error());
            if (auto r = on_member(name, *member); !r) return r;
        } else {
            if (auto r = value(false); !r) return std::unexpected(r.error());
        }
        if (auto r = skip_ws(); !r) return r;
        auto sep = get();
        if (!sep) return std::unexpected(sep.error());
        if (*sep == '}') return {};
        if (*sep == k_eof) return eof_error("in the top-level object");
        if (*sep != ',')
            return fail_at_offset(m_path, m_offset - 1,
                                  fmt::format("expected ',' or '}}' between members, found '{}'", static_cast<char>(*sep)));
    }
}

}  // namespace perfwatch
