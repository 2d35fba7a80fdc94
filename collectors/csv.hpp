#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace perfwatch {

// An RFC 4180 reader over text already in memory: quoted fields with doubled quotes and
// embedded commas or newlines, CRLF or LF line ends, ragged rows.
class CsvReader {
public:
    explicit CsvReader(std::string_view text, std::uint64_t first_line = 1)
        : m_text(text), m_line(first_line) {}

    enum class Status { record, end, error };

    // Reads the next record into `fields`. On error, error() says what and line() where.
    Status next(std::vector<std::string>& fields);

    // Line on which the last record started (1-based, counting from first_line).
    std::uint64_t record_line() const { return m_record_line; }
    std::uint64_t line() const { return m_line; }
    std::size_t offset() const { return m_pos; }
    const std::string& error() const { return m_error; }

private:
    std::string_view m_text;
    std::size_t m_pos = 0;
    std::uint64_t m_line;
    std::uint64_t m_record_line = 0;
    std::string m_error;
};

}  // namespace perfwatch
