#include "collectors/csv.hpp"

namespace perfwatch {

CsvReader::Status CsvReader::next(std::vector<std::string>& fields) {
    fields.clear();
    if (m_pos >= m_text.size()) return Status::end;
    m_record_line = m_line;
    std::string field;
    const std::size_t n = m_text.size();
    while (true) {
        if (m_pos < n && m_text[m_pos] == '"') {
            const std::uint64_t quote_line = m_line;
            ++m_pos;
            while (true) {
                const std::size_t q = m_text.find('"', m_pos);
                if (q == std::string_view::npos) {
                    m_error = "unterminated quoted field (opened on line " + std::to_string(quote_line) + ")";
                    m_pos = n;
                    return Status::error;
                }
                for (std::size_t i = m_pos; i < q; ++i)
                    if (m_text[i] == '\n') ++m_line;
                field.append(m_text.substr(m_pos, q - m_pos));
                m_pos = q + 1;
                if (m_pos < n && m_text[m_pos] == '"') {
                    field.push_back('"');
                    ++m_pos;
                    continue;
                }
                break;
            }
            // Text after the closing quote up to the separator is kept (lenient, as spreadsheets do).
            while (m_pos < n && m_text[m_pos] != ',' && m_text[m_pos] != '\n' && m_text[m_pos] != '\r')
                field.push_back(m_text[m_pos++]);
        } else {
            std::size_t end = m_pos;
            while (end < n && m_text[end] != ',' && m_text[end] != '\n' && m_text[end] != '\r') ++end;
            field.assign(m_text.substr(m_pos, end - m_pos));
            m_pos = end;
        }
        fields.push_back(std::move(field));
        field.clear();
        if (m_pos >= n) return Status::record;
        const char c = m_text[m_pos];
        if (c == ',') {
            ++m_pos;
            if (m_pos >= n) {  // trailing comma at end of input: one more empty field
                fields.emplace_back();
                return Status::record;
            }
            continue;
        }
        if (c == '\r') ++m_pos;
        if (m_pos < n && m_text[m_pos] == '\n') ++m_pos;
        ++m_line;
        return Status::record;
    }
}

}  // namespace perfwatch
