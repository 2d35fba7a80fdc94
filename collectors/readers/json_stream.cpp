#include "collectors/readers/json_stream.hpp"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cctype>
#include <cstring>

namespace perfwatch {

namespace {
constexpr int k_eof = -1;
}

Result<std::size_t> JsonEventStream::refill() {
    const std::size_t capacity = m_buffer.size() - k_json_padding;
    // Grow when the value being scanned fills the buffer (one event or member at a time), and
    // while input keeps coming up to 1 MB (small reports stay with a small buffer).
    if (m_len == capacity || (m_len > capacity / 2 && capacity < (1 << 20))) m_buffer.resize(capacity * 2 + k_json_padding);
    auto r = m_source.read(m_buffer.data() + m_len, m_buffer.size() - k_json_padding - m_len);
    if (!r) return std::unexpected(r.error());
    m_len += *r;
    return *r;
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
        auto c = peek();
        if (!c) return std::unexpected(c.error());
        if (*c == k_eof || !std::isspace(*c)) return {};
        ++m_pos;
        ++m_offset;
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

// Character classes for the scanner: what ends a run of plain characters.
enum : unsigned char { k_plain, k_quote, k_open, k_close, k_separator };

constexpr std::array<unsigned char, 256> k_classes = [] {
    std::array<unsigned char, 256> t{};
    t['"'] = k_quote;
    t['{'] = t['['] = k_open;
    t['}'] = t[']'] = k_close;
    t[','] = t[' '] = t['\n'] = t['\r'] = t['\t'] = k_separator;
    return t;
}();

// The first '"' or '\\' in buf[i, end), or end; eight bytes at a time (the buffer is padded,
// so reading up to 8 bytes past `end` is safe; matches there are ignored).
std::size_t find_quote_or_backslash(const char* buf, std::size_t i, std::size_t end) {
    if constexpr (std::endian::native != std::endian::little) {
        while (i < end && buf[i] != '"' && buf[i] != '\\') ++i;
        return i;
    }
    // The lowest flagged byte is exact (and the first in memory on little-endian machines).
    constexpr std::uint64_t k_ones = 0x0101010101010101ULL, k_highs = 0x8080808080808080ULL;
    while (i < end) {
        std::uint64_t v;
        std::memcpy(&v, buf + i, sizeof v);
        const std::uint64_t q = v ^ (k_ones * '"'), b = v ^ (k_ones * '\\');
        const std::uint64_t hit = (((q - k_ones) & ~q) | ((b - k_ones) & ~b)) & k_highs;
        if (hit != 0) return std::min(end, i + static_cast<std::size_t>(__builtin_ctzll(hit) >> 3));
        i += 8;
    }
    return end;
}

}  // namespace

Result<std::string_view> JsonEventStream::value(bool keep, Hints* hints) {
    if (auto r = skip_ws(); !r) return std::unexpected(r.error());
    std::size_t start = m_pos, i = m_pos;
    int depth = 0;
    bool in_string = false, started = false;
    // The top-level members of an object value, for the hints: where each member is (a key, its
    // colon, its value, inside a scalar, after the value), which hint the current member fills
    // (`slot`), and the hints found, as offsets from `start`.
    enum class At { key, colon, value, scalar, after } at = At::after;
    enum Slot : std::size_t { none, ph, cat, name, ts, dur, args, slots };
    std::size_t slot = none, string_start = 0, scalar_start = 0;
    std::size_t hint_at[slots] = {}, hint_len[slots] = {};
    bool string_escaped = false, escape_pending = false;
    bool object = false;  // the value is an object (not an array)
    auto record = [&](std::size_t which, std::size_t from, std::size_t to) {
        if (from < start || to < from) return;  // hints are best effort: never a bad view
        hint_at[which] = from - start;
        hint_len[which] = to - from;
    };
    while (true) {
        if (i == m_len) {
            // Out of buffered input: move the value's start to the front (or drop what was
            // scanned when it is skipped) and read more.
            const std::size_t from = keep ? start : i;
            m_offset += from - m_pos;
            std::memmove(m_buffer.data(), m_buffer.data() + from, m_len - from);
            m_len -= from;
            i -= from;
            string_start -= std::min(string_start, from);
            scalar_start -= std::min(scalar_start, from);
            start = keep ? start - from : 0;  // a skipped value has no text to return
            m_pos = 0;
            auto r = refill();
            if (!r) return std::unexpected(r.error());
            if (*r == 0) {
                if (started && depth == 0 && !in_string) break;  // a scalar at the very end
                m_offset += i;
                return eof_error(in_string ? "inside a string" : "inside a value");
            }
        }
        const char* buf = m_buffer.data();
        if (in_string) {
            if (escape_pending) {  // the character after a backslash that ended the last buffer
                escape_pending = false;
                ++i;
                continue;
            }
            i = find_quote_or_backslash(buf, i, m_len);
            if (i == m_len) continue;
            if (buf[i] == '\\') {
                string_escaped = true;
                if (i + 1 < m_len) {
                    i += 2;
                } else {
                    escape_pending = true;
                    i = m_len;
                }
                continue;
            }
            in_string = false;
            ++i;
            if (depth == 0) break;
            if (depth == 1 && hints != nullptr) {
                const std::size_t text_at = string_start + 1, text_len = i - 1 - text_at;
                if (at == At::key) {
                    const std::string_view key(buf + text_at, text_len);
                    slot = key == "ph"     ? ph
                           : key == "cat"  ? cat
                           : key == "name" ? name
                           : key == "ts"   ? ts
                           : key == "dur"  ? dur
                           : key == "args" ? args
                                           : none;
                    at = At::colon;
                } else {
                    if ((slot == ph || slot == cat || slot == name) && !string_escaped)
                        record(slot, text_at, text_at + text_len);
                    at = At::after;
                }
            }
            continue;
        }
        if (depth == 1 && at == At::value && k_classes[static_cast<unsigned char>(buf[i])] == k_plain &&
            buf[i] != ':') {
            at = At::scalar;
            scalar_start = i;
        }
        while (i < m_len && k_classes[static_cast<unsigned char>(buf[i])] == k_plain) {
            if (buf[i] == ':' && depth == 1 && at == At::colon) {
                at = At::value;
                ++i;
                break;
            }
            started = true;
            ++i;
        }
        if (i == m_len) continue;
        const char c = buf[i];
        switch (k_classes[static_cast<unsigned char>(c)]) {
        case k_plain:
            continue;  // after a top-level colon: the value starts here
        case k_quote:
            in_string = true;
            string_escaped = false;
            string_start = i;
            started = true;
            break;
        case k_open:
            ++depth;
            started = true;
            if (depth == 1) {
                object = c == '{';
                at = object ? At::key : At::after;
            } else if (depth == 2) {
                // Only a well-formed member ("args": {...}) is captured.
                if (slot == args && c == '{' && at == At::value) scalar_start = i;
                else slot = none;
                at = At::after;
            }
            break;
        case k_close:
            if (depth == 0) goto done;  // the end of a scalar value
            if (depth == 1 && at == At::scalar && (slot == ts || slot == dur)) record(slot, scalar_start, i);
            if (depth == 2 && slot == args && c == '}') record(args, scalar_start, i + 1);
            if (--depth == 0) {
                ++i;
                goto done;
            }
            break;
        case k_separator:
            if (depth == 0) goto done;
            if (depth == 1) {
                if (at == At::scalar) {
                    if (slot == ts || slot == dur) record(slot, scalar_start, i);
                    at = At::after;
                }
                if (c == ',') {
                    at = object ? At::key : At::after;
                    slot = none;
                }
            }
            break;
        default:
            break;
        }
        ++i;
    }
done:
    const std::string_view text(m_buffer.data() + start, i - start);
    m_offset += i - m_pos;
    m_pos = i;
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
