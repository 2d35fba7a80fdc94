#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace perfwatch {

// Whose fault a failure is: the report's own content (it fails only that report), the database
// (locked, full, unreachable: the same report is tried again later), a bug in perfwatch, or the
// process reading the report died on it (a crash, a signal: the report is quarantined, never read
// again automatically).
enum class ErrorKind { report, database, internal, reader_died };

// A failure a caller is expected to handle: which file, where in it (line, or byte offset when
// lines do not apply; 0 when unknown), and what was expected there.
struct Error {
    std::string file;
    std::uint64_t line = 0;
    std::uint64_t offset = 0;
    bool has_offset = false;
    std::string message;
    // The input was set aside on purpose (a converter tool is missing), not found malformed.
    bool skipped = false;
    ErrorKind kind = ErrorKind::report;
    // More lines for a person at a terminal (the formats perfwatch reads), printed by the CLI after
    // the message and never logged: `message` is one line whatever the file's name holds.
    std::string detail = {};

    // "file:line: message", "file: offset N: message" or "file: message".
    std::string to_string() const;
};

std::string_view to_string(ErrorKind kind);

template <typename T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> fail(std::string file, std::uint64_t line, std::string message) {
    return std::unexpected(Error{std::move(file), line, 0, false, std::move(message)});
}

inline std::unexpected<Error> fail_at_offset(std::string file, std::uint64_t offset, std::string message) {
    return std::unexpected(Error{std::move(file), 0, offset, true, std::move(message)});
}

}  // namespace perfwatch
