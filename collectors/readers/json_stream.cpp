#include "collectors/readers/json_stream.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#if defined(__SSE2__)
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

// Classifies the 64 bytes at `p` (all readable), 16 at a time where SSE2 is there.
BlockBits classify(const char* p) {
    BlockBits bits;
#if defined(__SSE2__)
    for (unsigned k = 0; k < 4; ++k) {
        const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
        // '[' and '{' (and ']' and '}') differ only in the 0x20 bit.
        const __m128i folded = _mm_or_si128(c, _mm_set1_epi8(0x20));
        const __m128i bracket =
            _mm_or_si128(_mm_cmpeq_epi8(folded, _mm_set1_epi8('{')), _mm_cmpeq_epi8(folded, _mm_set1_epi8('}')));
        const __m128i structural = _mm_or_si128(
            bracket, _mm_or_si128(_mm_cmpeq_epi8(c, _mm_set1_epi8(',')), _mm_cmpeq_epi8(c, _mm_set1_epi8(':'))));
        auto mask = [k](__m128i v) {
            return static_cast<std::uint64_t>(static_cast<std::uint16_t>(_mm_movemask_epi8(v))) << (16 * k);
        };
        bits.quote |= mask(_mm_cmpeq_epi8(c, _mm_set1_epi8('"')));
        bits.high |= mask(c);
        bits.backslash |= mask(_mm_cmpeq_epi8(c, _mm_set1_epi8('\\')));
        bits.bracket |= mask(bracket);
        bits.structural |= mask(structural);
    }
#else
    for (unsigned i = 0; i < k_block; ++i) {
        const std::uint64_t bit = std::uint64_t{1} << i;
        if (static_cast<unsigned char>(p[i]) > 0x7F) bits.high |= bit;
        switch (p[i]) {
        case '"': bits.quote |= bit; break;
        case '\\': bits.backslash |= bit; break;
        case '{': case '}': case '[': case ']': bits.bracket |= bit; bits.structural |= bit; break;
        case ',': case ':': bits.structural |= bit; break;
        default: break;
        }
    }
#endif
    return bits;
}

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
std::size_t hint_key(const char* key, std::size_t length) {
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

Result<std::string_view> JsonEventStream::value(bool keep, Hints* hints) {
    if (m_pos == m_len || is_space(m_buffer[m_pos]))
        if (auto r = skip_ws(); !r) return std::unexpected(r.error());
    auto first = peek();
    if (!first) return std::unexpected(first.error());
    if (*first == k_eof) return eof_error("inside a value");
    if (*first != '{' && *first != '[' && *first != '"') return scalar(keep);

    // The value is walked a structural character at a time: each 64-byte block is classified at
    // once, and only its quotes (outside escapes) and its brackets, commas and colons (outside
    // strings) are visited; inside a nested container (an event's args), only its brackets.
    std::size_t start = m_pos, next = m_pos, block = m_pos;
    std::uint64_t bits = 0;            // characters of the block still to visit
    std::uint64_t block_all = 0, block_brackets = 0;  // the block's structural characters, its brackets
    std::uint64_t block_backslash = 0;                 // the block's backslashes
    std::uint64_t string_carry = 0;    // all ones when the previous block ended inside a string
    std::uint64_t high = 0;            // bytes above 0x7F in any block classified (the value's and a few after)
    bool escape_carry = false, in_string = false;
    int depth = 0;
    // The top-level members of an object value, for the hints: where each member is (a key, its
    // colon, its value, after it), which hint the current member fills (`slot`), and the hints
    // found, as offsets from `start`.
    enum class At { key, colon, value, after } at = At::after;
    enum Slot : std::size_t { none, ph, cat, name, ts, dur, args, slots };
    static_assert(ph == 1 && cat == 2 && name == 3 && ts == 4 && dur == 5 && args == 6, "hint_key's numbers");
    std::size_t slot = none, string_start = 0, value_start = 0, args_start = 0;
    std::size_t hint_at[slots] = {}, hint_len[slots] = {};
    bool object = false;  // the value is an object (not an array)
    auto record = [&](std::size_t which, std::size_t from, std::size_t to) {
        if (from < start || to <= from) return;  // hints are best effort: never a bad view
        hint_at[which] = from - start;
        hint_len[which] = to - from;
    };
    // A top-level member's value ends at `to` (a comma or the closing bracket): "ts" and "dur"
    // are kept when they were scalars (no string or container began after the colon).
    auto member_ends = [&](const char* buf, std::size_t to) {
        if (at != At::value || (slot != ts && slot != dur)) return;
        std::string_view scalar(buf + value_start, to - value_start);
        if (!scalar.empty() && (is_space(scalar.front()) || is_space(scalar.back()))) scalar = trim(scalar);
        const auto from = static_cast<std::size_t>(scalar.data() - buf);
        record(slot, from, from + scalar.size());
    };
    // A backslash in [from, to), `to` in the current block: read off its bits when `from` is too.
    auto has_backslash = [&](const char* buf, std::size_t from, std::size_t to) {
        if (from < block) return std::memchr(buf + from, '\\', to - from) != nullptr;
        const std::uint64_t below_to = (to - block) == k_block ? ~std::uint64_t{0} : (std::uint64_t{1} << (to - block)) - 1;
        return (block_backslash & below_to & ~((std::uint64_t{1} << (from - block)) - 1)) != 0;
    };
    // A top-level string value closes at `close` (the hints' ph, cat and name are such values).
    auto string_value_closes = [&](const char* buf, std::size_t close) {
        const std::size_t text_at = string_start + 1;
        if ((slot == ph || slot == cat || slot == name) && !has_backslash(buf, text_at, close))
            record(slot, text_at, close);
        at = At::after;
    };
    // A comma between the value's top-level members (or elements) at `i`.
    auto comma = [&](const char* buf, std::size_t i) {
        member_ends(buf, i);
        at = object ? At::key : At::after;
        slot = none;
    };
    // The block's next character to visit is `c`.
    auto next_is = [&](char c) {
        return bits != 0 && m_buffer[block + static_cast<std::size_t>(std::countr_zero(bits))] == c;
    };
    // The next character of the block to visit (bits != 0), taken off its bits.
    auto take_next = [&] {
        const std::size_t at_next = block + static_cast<std::size_t>(std::countr_zero(bits));
        bits &= bits - 1;
        return at_next;
    };
    std::size_t end = 0;
    while (true) {
        while (bits == 0) {
            if (next + k_block > m_len) {
                // Out of buffered input: move the value's start to the front (or drop what was
                // scanned when it is skipped) and read more; at the end, pad the last block.
                const std::size_t from = keep ? start : std::min(next, m_len);
                drop_before(from);
                next -= from;
                string_start -= std::min(string_start, from);
                value_start -= std::min(value_start, from);
                args_start -= std::min(args_start, from);
                start = keep ? start - from : 0;  // a skipped value has no text to return
                auto r = refill();
                if (!r) return std::unexpected(r.error());
                if (*r > 0) continue;
                if (next >= m_len) {
                    m_offset += m_len;
                    return eof_error(in_string ? "inside a string" : "inside a value");
                }
                // Spaces: nothing past the input is structural.
                std::memset(m_buffer.data() + m_len, ' ', next + k_block - m_len);
            }
            const BlockBits b = classify(m_buffer.data() + next);
            high |= b.high;
            const std::uint64_t quotes = b.quote & ~escaped_bits(b.backslash, escape_carry);
            const std::uint64_t inside = prefix_xor(quotes) ^ string_carry;
            string_carry = static_cast<std::uint64_t>(static_cast<std::int64_t>(inside) >> 63);
            block_all = (b.structural & ~inside) | quotes;
            block_brackets = b.bracket & ~inside;
            block_backslash = b.backslash;
            bits = depth >= 2 ? block_brackets : block_all;
            block = next;
            next += k_block;
        }
        const std::size_t i = take_next();
        const char* buf = m_buffer.data();
        const char c = buf[i];
        if (c == '"') {
            std::size_t close = i;
            if (!in_string) {
                string_start = i;
                if (bits == 0) {  // it closes in a later block
                    in_string = true;
                    continue;
                }
                // Nothing inside a string is visited: the next character is its closing quote.
                close = take_next();
            }
            in_string = false;
            if (depth == 0) {
                end = close + 1;
                break;
            }
            if (depth == 1 && hints != nullptr) {
                if (at != At::key) {
                    string_value_closes(buf, close);
                    continue;
                }
                // A key. Its colon, the next character, is taken here rather than in a turn of
                // its own; so are a string value right after it, the comma after the value and
                // the next key, member after member while the block holds them.
                while (true) {
                    slot = hint_key(buf + string_start + 1, close - string_start - 1);
                    at = At::colon;
                    if (!next_is(':')) break;
                    at = At::value;
                    value_start = take_next() + 1;
                    if (next_is('"')) {
                        string_start = take_next();
                        if (bits == 0) {  // it closes in a later block
                            in_string = true;
                            break;
                        }
                        string_value_closes(buf, take_next());
                        if (!next_is(',')) break;
                        comma(buf, take_next());
                    } else if (next_is(',')) {  // a number, true, false or null, then the comma
                        comma(buf, take_next());
                    } else {
                        break;
                    }
                    if (!next_is('"')) break;
                    string_start = take_next();
                    if (bits == 0) {
                        in_string = true;
                        break;
                    }
                    close = take_next();
                }
            }
            continue;
        }
        switch (c) {
        case '{':
        case '[':
            ++depth;
            if (depth == 1) {
                object = c == '{';
                at = object ? At::key : At::after;
            } else if (depth == 2) {
                // Only a well-formed member ("args": {...}) is captured.
                if (slot == args && c == '{' && at == At::value) args_start = i;
                else slot = none;
                at = At::after;
                bits &= block_brackets;
            }
            break;
        case '}':
        case ']':
            if (depth == 1) member_ends(buf, i);
            if (depth == 2 && slot == args && c == '}') record(args, args_start, i + 1);
            if (--depth == 0) end = i + 1;
            if (depth == 1) bits = block_all & ~((std::uint64_t{2} << (i - block)) - 1);  // what follows i
            break;
        case ',':
            if (depth == 1) comma(buf, i);
            break;
        case ':':
            if (depth == 1 && at == At::colon) {
                at = At::value;
                value_start = i + 1;
            }
            break;
        default:
            break;
        }
        if (end != 0) break;  // the closing bracket of the value
    }
    const std::string_view text(m_buffer.data() + start, end - start);
    m_offset += end - m_pos;
    m_pos = end;
    if (hints != nullptr) {
        auto hint = [&](std::size_t which) {
            return hint_len[which] > 0 ? text.substr(hint_at[which], hint_len[which]) : std::string_view();
        };
        hints->ph = hint(ph);
        hints->cat = hint(cat);
        hints->name = hint(name);
        hints->ts = hint(ts);
        hints->dur = hint(dur);
        hints->args = hint(args);
        hints->ascii = high == 0;
    }
    return keep ? text : std::string_view();
}

Result<void> JsonEventStream::events(const EventFn& on_event) {
    if (auto r = skip_ws(); !r) return r;
    auto c = peek();
    if (!c) return std::unexpected(c.error());
    if (*c == ']') {
        (void)get();
        return {};
    }
    std::size_t index = 0;
    while (true) {
        Hints hints;
        auto event = value(true, &hints);
        if (!event) return std::unexpected(event.error());
        ++index;
        if (auto r = on_event(*event, hints); !r) return r;
        // Most events are followed at once by their comma, or by a line break and it.
        std::size_t at = m_pos;
        if (at < m_len && m_buffer[at] == '\n') ++at;
        if (at < m_len && m_buffer[at] == ',') {
            m_offset += at + 1 - m_pos;
            m_pos = at + 1;
            continue;
        }
        if (auto r = skip_ws(); !r) return r;
        auto sep = get();
        if (!sep) return std::unexpected(sep.error());
        if (*sep == k_eof) return eof_error(fmt::format("after trace event {} (the event array is not closed)", index));
        if (*sep == ']') return {};
        if (*sep != ',')
            return fail_at_offset(m_path, m_offset - 1,
                                  fmt::format("expected ',' or ']' after trace event {}, found '{}'", index,
                                              static_cast<char>(*sep)));
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
