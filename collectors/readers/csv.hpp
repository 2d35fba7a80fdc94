#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <list>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/readers/byte_source.hpp"

namespace perfwatch {

// The index of the first of `names` found in `header`; -1 when none is there.
int column_index(const std::vector<std::string>& header, std::initializer_list<std::string_view> names);

// An RFC 4180 reader over text already in memory: quoted fields with doubled quotes and
// embedded commas or newlines, CRLF or LF line ends, ragged rows.
class CsvReader {
public:
    explicit CsvReader(std::string_view text, std::uint64_t first_line = 1)
        : m_text(text), m_line(first_line) {}

    enum class Status { record, end, error };

    // Reads the next record into `fields`. On error, error() says what and line() where.
    Status next(std::vector<std::string>& fields);
    // The same record as views: into the text where a field is as written, into a string of
    // `rewritten` where it is not (doubled quotes, text after a closing quote). The views last
    // while the text and those strings do.
    Status next(std::vector<std::string_view>& fields, std::list<std::string>& rewritten);

    // Line on which the last record started (1-based, counting from first_line).
    std::uint64_t record_line() const { return m_record_line; }
    std::uint64_t line() const { return m_line; }
    std::size_t offset() const { return m_pos; }
    const std::string& error() const { return m_error; }

private:
    std::string_view m_text;
    std::vector<std::string_view> m_views;  // next(strings)'s record, as views first
    std::list<std::string> m_rewritten;
    std::size_t m_pos = 0;
    std::uint64_t m_line;
    std::uint64_t m_record_line = 0;
    std::string m_error;
};

// The same records read from a ByteSource in windows of whole lines: a report of any size is
// parsed with one window in memory (4 MB, or the longest record when longer).
class CsvStream {
public:
    explicit CsvStream(ByteSource& source) : m_source(source) {}

    // Skips lines until one starting with one of `prefixes` (true), or the end (false).
    Result<bool> skip_to_line_starting_with(std::initializer_list<std::string_view> prefixes,
                                            const std::function<void(std::string_view)>& on_skipped = {});
    // As CsvReader::next; read errors come back as the Error.
    Result<CsvReader::Status> next(std::vector<std::string>& fields);
    // As CsvReader::next into views, which last until the next call.
    Result<CsvReader::Status> next(std::vector<std::string_view>& fields);
    // The next raw line without its line ending (for line formats that are not quoted CSV); false
    // at the end. The view lasts until the next call; record_line() is its number.
    Result<bool> next_line(std::string_view& line);
    std::uint64_t record_line() const { return m_record_line; }
    std::uint64_t line() const { return m_line; }
    const std::string& error() const { return m_error; }

private:
    // Moves the unread bytes to the front and reads until a new whole line (or the end) is in.
    Result<void> fill();

    ByteSource& m_source;
    std::vector<std::string_view> m_views;  // next(strings)'s record, as views first
    std::list<std::string> m_rewritten;     // the current record's rewritten fields
    std::string m_buffer;
    std::size_t m_pos = 0, m_window = 0, m_len = 0;  // read up to, whole lines up to, bytes in
    bool m_eof = false;
    std::uint64_t m_line = 1, m_record_line = 0;
    std::string m_error;
};

}  // namespace perfwatch
