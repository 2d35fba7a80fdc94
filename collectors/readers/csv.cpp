#include "collectors/readers/csv.hpp"

#include <algorithm>
#include <cstring>

namespace perfwatch {

namespace {

constexpr std::string_view k_field_ends = ",\n\r";

// The record read as views, written into the strings `fields` already holds (their capacity
// reused from record to record: no allocation per field once the rows' sizes are seen).
void assign_fields(const std::vector<std::string_view>& views, std::vector<std::string>& fields) {
    fields.resize(views.size());
    for (std::size_t i = 0; i < views.size(); ++i) fields[i].assign(views[i]);
}

}  // namespace

int column_index(const std::vector<std::string>& header, std::initializer_list<std::string_view> names) {
    for (std::string_view n : names)
        if (auto it = std::find(header.begin(), header.end(), n); it != header.end())
            return static_cast<int>(it - header.begin());
    return -1;
}


CsvReader::Status CsvReader::next(std::vector<std::string>& fields) {
    m_rewritten.clear();
    const Status status = next(m_views, m_rewritten);
    assign_fields(m_views, fields);
    return status;
}

CsvReader::Status CsvReader::next(std::vector<std::string_view>& fields, std::list<std::string>& rewritten) {
    fields.clear();
    if (m_pos >= m_text.size()) return Status::end;
    m_record_line = m_line;
    const std::size_t n = m_text.size();
    while (true) {
        if (m_pos < n && m_text[m_pos] == '"') {
            const std::uint64_t quote_line = m_line;
            const std::size_t start = ++m_pos;
            std::string* own = nullptr;  // the field's text once it differs from what is written
            std::string_view as_written;
            while (true) {
                const std::size_t q = m_text.find('"', m_pos);
                if (q == std::string_view::npos) {
                    m_error = "unterminated quoted field (opened on line " + std::to_string(quote_line) + ")";
                    m_pos = n;
                    return Status::error;
                }
                const std::string_view quoted = m_text.substr(m_pos, q - m_pos);
                if (std::memchr(quoted.data(), '\n', quoted.size()) != nullptr)
                    m_line += static_cast<std::uint64_t>(std::count(quoted.begin(), quoted.end(), '\n'));
                if (own != nullptr) own->append(quoted);
                m_pos = q + 1;
                if (m_pos < n && m_text[m_pos] == '"') {  // a doubled quote stands for one
                    if (own == nullptr) own = &rewritten.emplace_back(m_text.substr(start, q - start));
                    own->push_back('"');
                    ++m_pos;
                    continue;
                }
                if (own == nullptr) as_written = m_text.substr(start, q - start);
                break;
            }
            // Text after the closing quote up to the separator is kept (lenient, as spreadsheets do).
            std::size_t after = m_pos;
            while (after < n && m_text[after] != ',' && m_text[after] != '\n' && m_text[after] != '\r') ++after;
            if (after > m_pos) {
                if (own == nullptr) own = &rewritten.emplace_back(as_written);
                own->append(m_text.substr(m_pos, after - m_pos));
                m_pos = after;
            }
            fields.push_back(own != nullptr ? std::string_view(*own) : as_written);
        } else {
            std::size_t end = m_text.find_first_of(k_field_ends, m_pos);
            if (end == std::string_view::npos) end = n;
            fields.push_back(m_text.substr(m_pos, end - m_pos));
            m_pos = end;
        }
        if (m_pos >= n) break;
        const char c = m_text[m_pos];
        if (c == ',') {
            ++m_pos;
            if (m_pos >= n) {  // trailing comma at end of input: one more empty field
                fields.emplace_back();
                break;
            }
            continue;
        }
        if (c == '\r') ++m_pos;
        if (m_pos < n && m_text[m_pos] == '\n') ++m_pos;
        ++m_line;
        break;
    }
    return Status::record;
}

Result<void> CsvStream::fill() {
    if (m_pos > 0) {
        std::memmove(m_buffer.data(), m_buffer.data() + m_pos, m_len - m_pos);
        m_len -= m_pos;
        m_window -= std::min(m_window, m_pos);
        m_pos = 0;
    }
    const std::size_t old_window = m_window;
    while (!m_eof) {
        // Windows start small (most reports are small) and grow to 4 MB, or to the longest record.
        if (m_buffer.size() - m_len < std::min<std::size_t>(m_buffer.size() / 2 + 1, 1 << 20))
            // (Grown without zeroing: every byte is read into before it is looked at.)
            m_buffer.resize_and_overwrite(
                std::clamp<std::size_t>(m_buffer.size() * 2, 1 << 16, std::max<std::size_t>(4 << 20, m_len * 2)),
                [](char*, std::size_t n) { return n; });
        auto got = m_source.read(m_buffer.data() + m_len, m_buffer.size() - m_len);
        if (!got) return std::unexpected(got.error());
        if (*got == 0) m_eof = true;
        m_len += *got;
        const std::size_t nl = std::string_view(m_buffer.data(), m_len).rfind('\n');
        if (nl != std::string_view::npos && nl + 1 > old_window) {
            m_window = nl + 1;
            return {};
        }
    }
    m_window = m_len;
    return {};
}

Result<bool> CsvStream::skip_to_line_starting_with(std::initializer_list<std::string_view> prefixes,
                                                   const std::function<void(std::string_view)>& on_skipped) {
    while (true) {
        while (m_pos < m_window) {
            const std::string_view rest(m_buffer.data() + m_pos, m_window - m_pos);
            for (std::string_view p : prefixes)
                if (rest.starts_with(p)) return true;
            const std::size_t nl = rest.find('\n');
            // A line shorter than the longest prefix at the window's end: read more first.
            if (nl == std::string_view::npos) break;
            if (on_skipped) on_skipped(rest.substr(0, nl));
            m_pos += nl + 1;
            ++m_line;
        }
        if (m_eof && m_window == m_len) {
            const std::string_view rest(m_buffer.data() + m_pos, m_len - m_pos);
            for (std::string_view p : prefixes)
                if (rest.starts_with(p)) return true;
            return false;
        }
        if (auto r = fill(); !r) return std::unexpected(r.error());
    }
}

Result<CsvReader::Status> CsvStream::next(std::vector<std::string>& fields) {
    const auto status = next(m_views);
    if (status) assign_fields(m_views, fields);
    return status;
}

Result<CsvReader::Status> CsvStream::next(std::vector<std::string_view>& fields) {
    while (true) {
        m_rewritten.clear();
        CsvReader reader(std::string_view(m_buffer.data() + m_pos, m_window - m_pos), m_line);
        const auto status = reader.next(fields, m_rewritten);
        if (status == CsvReader::Status::record) {
            m_record_line = reader.record_line();
            m_pos += reader.offset();
            m_line = reader.line();
            return status;
        }
        // The window ended (or a quoted field runs past it): read more, unless at the end.
        if (m_eof && m_window == m_len) {
            m_record_line = reader.record_line();
            m_error = reader.error();
            return status;
        }
        if (auto r = fill(); !r) return std::unexpected(r.error());
    }
}

Result<bool> CsvStream::next_line(std::string_view& line) {
    while (true) {
        const std::string_view rest(m_buffer.data() + m_pos, m_window - m_pos);
        const std::size_t nl = rest.find('\n');
        const bool at_end = m_eof && m_window == m_len;
        if (nl != std::string_view::npos || (at_end && !rest.empty())) {
            line = rest.substr(0, nl == std::string_view::npos ? rest.size() : nl);
            m_pos += nl == std::string_view::npos ? rest.size() : nl + 1;
            if (line.ends_with('\r')) line.remove_suffix(1);
            m_record_line = m_line++;
            return true;
        }
        if (at_end) return false;
        if (auto r = fill(); !r) return std::unexpected(r.error());
    }
}

}  // namespace perfwatch
