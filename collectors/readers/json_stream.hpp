#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "collectors/readers/byte_source.hpp"
#include "collectors/readers/scan_level.hpp"

namespace perfwatch {

inline constexpr std::size_t k_json_padding = 64;  // >= SIMDJSON_PADDING, and >= 8 for word reads

// Walks a trace document without holding it: a JSON array of events, or an object whose
// "traceEvents" array holds them. Each event's JSON text is handed to `on_event` and then
// forgotten; each other top-level member's text goes to `on_member` when `want_member(key)`,
// else it is skipped. Memory stays at one event (or wanted member) plus a read buffer. The text
// handed over is a view into the read buffer followed by at least k_json_padding readable bytes
// (so simdjson can parse it in place), valid until the callback returns.
class JsonEventStream {
public:
    // Raw text of an event's top-level members, found while scanning, so a reader can skip or
    // read common events without parsing them: "ph", "cat" and "name" when plain strings (no
    // escapes), "ts" and "dur" when numbers, "args" when an object. Empty otherwise.
    // `ascii`: no byte of the event is above 0x7F, so all of it is valid UTF-8.
    struct Hints {
        std::string_view ph, cat, name, ts, dur, args;
        bool ascii = false;
    };
    using EventFn = std::function<Result<void>(std::string_view json, const Hints& hints)>;
    using MemberFn = std::function<Result<void>(std::string_view key, std::string_view json)>;
    using WantFn = std::function<bool(std::string_view key)>;

    // `level`: the instruction set the scanner classifies bytes with (every level gives the same).
    JsonEventStream(const std::string& path, ByteSource& source, ScanLevel level = best_scan_level())
        : m_path(path), m_source(source), m_level(level) {}

    Result<void> run(const WantFn& want_member, const MemberFn& on_member, const EventFn& on_event);

    // Bytes consumed so far (of the decompressed stream).
    std::uint64_t offset() const { return m_offset; }

private:
    Result<int> peek();
    Result<int> get();
    Result<void> skip_ws();
    Result<void> expect(char c, std::string_view what);
    Result<void> read_string(std::string* out);  // at '"'; appends the raw text with quotes when out
    // Scans one JSON value in the buffer; its text when `keep`, else consumed bytes are dropped.
    Result<std::string_view> value(bool keep, Hints* hints = nullptr);
    // value() and events() with `level`'s instructions (value() and events() choose m_level's).
    template <ScanLevel level>
    Result<std::string_view> value_at(bool keep, Hints* hints);
    template <ScanLevel level>
    Result<void> events_at(const EventFn& on_event);
    Result<std::string_view> scalar(bool keep);  // value()'s number, true, false or null
    Result<std::size_t> refill();  // appends input after m_len, growing the buffer when full
    void drop_before(std::size_t from);  // moves m_buffer[from, m_len) to the front (from >= m_pos)
    Result<void> events(const EventFn& on_event);
    std::unexpected<Error> eof_error(std::string_view where) const;

    const std::string& m_path;
    ByteSource& m_source;
    ScanLevel m_level;
    std::string m_buffer = std::string((1 << 16) + k_json_padding, '\0');
    std::size_t m_pos = 0, m_len = 0;
    std::uint64_t m_offset = 0;  // input offset of m_buffer[m_pos]
};

}  // namespace perfwatch
