#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "collectors/byte_source.hpp"

namespace perfwatch {

// Walks a trace document without holding it: a JSON array of events, or an object whose
// "traceEvents" array holds them. Each event's JSON text is handed to `on_event` and then
// forgotten; each other top-level member's text goes to `on_member` when `want_member(key)`,
// else it is skipped. Memory stays at one event (or wanted member) plus a read buffer.
class JsonEventStream {
public:
    using EventFn = std::function<Result<void>(std::string_view json)>;
    using MemberFn = std::function<Result<void>(std::string_view key, std::string_view json)>;
    using WantFn = std::function<bool(std::string_view key)>;

    JsonEventStream(const std::string& path, ByteSource& source) : m_path(path), m_source(source) {}

    Result<void> run(const WantFn& want_member, const MemberFn& on_member, const EventFn& on_event);

    // Bytes consumed so far (of the decompressed stream).
    std::uint64_t offset() const { return m_offset; }

private:
    Result<int> peek();
    Result<int> get();
    Result<void> skip_ws();
    Result<void> expect(char c, std::string_view what);
    Result<void> read_string(std::string* out);  // at '"'; appends the raw text with quotes when out
    Result<void> value(std::string* out);          // copies (or skips) one JSON value
    Result<void> events(const EventFn& on_event);
    std::unexpected<Error> eof_error(std::string_view where) const;

    const std::string& m_path;
    ByteSource& m_source;
    std::string m_buffer = std::string(1 << 16, '\0');
    std::size_t m_pos = 0, m_len = 0;
    std::uint64_t m_offset = 0;
    std::string m_scratch;
};

}  // namespace perfwatch
