#include "collectors/json_stream.hpp"

#include <fmt/format.h>

#include <cctype>

namespace perfwatch {

namespace {
constexpr int k_eof = -1;
}

Result<int> JsonEventStream::peek() {
    if (m_pos == m_len) {
        auto r = m_source.read(m_buffer.data(), m_buffer.size());
        if (!r) return std::unexpected(r.error());
        m_len = *r;
        m_pos = 0;
        if (m_len == 0) return k_eof;
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

Result<void> JsonEventStream::value(std::string* out) {
    if (auto r = skip_ws(); !r) return r;
    int depth = 0;
    while (true) {
        auto c = peek();
        if (!c) return std::unexpected(c.error());
        if (*c == k_eof) return eof_error("inside a value");
        if (*c == '"') {
            if (auto r = read_string(out); !r) return r;
        } else {
            const char ch = static_cast<char>(*c);
            if (depth == 0 && (ch == ',' || ch == '}' || ch == ']')) return {};  // end of a scalar
            ++m_pos;
            ++m_offset;
            if (out) out->push_back(ch);
            if (ch == '{' || ch == '[') ++depth;
            if (ch == '}' || ch == ']') --depth;
        }
        if (depth == 0) {
            // A container closed, or a string or scalar character was read at top level.
            auto n = peek();
            if (!n) return std::unexpected(n.error());
            if (*n == k_eof) return {};
            const char next = static_cast<char>(*n);
            if (next == ',' || next == '}' || next == ']' || std::isspace(*n)) return {};
        }
    }
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
        m_scratch.clear();
        if (auto r = value(&m_scratch); !r) return r;
        ++index;
        if (auto r = on_event(m_scratch); !r) return r;
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
    std::string key, member;
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
            member.clear();
            if (auto r = value(&member); !r) return r;
            if (auto r = on_member(name, member); !r) return r;
        } else {
            if (auto r = value(nullptr); !r) return r;
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
