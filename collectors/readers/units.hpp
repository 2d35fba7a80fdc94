#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace perfwatch {

// A value in one of the base units: ns, byte, hz, byte/s, percent (0-100) or count.
struct BaseValue {
    double value = 0;
    std::string_view unit;
};

// Converts `value` given in the tool's unit ("msecond", "Kbyte/block", "cycle/usecond", "%", ...)
// to its base unit. Unknown units pass through unscaled as "count".
BaseValue to_base_unit(double value, std::string_view tool_unit);

// Parses a report's number: plain, with thousands separators ("3,103,434"), with a decimal comma
// ("3.103.434,5"), or scientific. Returns nullopt for non-numeric text ("CachePreferNone",
// "(!) nan", "n/a", "").
std::optional<double> parse_report_number(std::string_view text);

// A number as std::from_chars reads it (fixed or scientific notation, no '+', the whole text):
// false when it is not one. Plain decimals of up to 19 digits take an exact short path.
bool parse_decimal(std::string_view text, double& out);

// Lower-case identifier made of [a-z0-9_] from a tool's metric name: "Executed Ipc Active" ->
// "executed_ipc_active"; "sm__inst_executed.avg" -> "sm__inst_executed_avg".
std::string slug(std::string_view tool_name);

// The C locale's white space, without a call per character (std::isspace is one).
constexpr bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// `s` without the white space around it.
std::string_view trim(std::string_view s);

// Splits text into lines (LF or CRLF; the last line may lack its newline), counting from 1.
class LineReader {
public:
    explicit LineReader(std::string_view text) : m_text(text) {}
    // The next line without its line ending; false at the end of the text.
    bool next(std::string_view& line) {
        if (m_pos >= m_text.size()) return false;
        std::size_t nl = m_text.find('\n', m_pos);
        if (nl == std::string_view::npos) nl = m_text.size();
        line = m_text.substr(m_pos, nl - m_pos);
        if (line.ends_with('\r')) line.remove_suffix(1);
        m_pos = nl + 1;
        ++m_line;
        return true;
    }
    // Number of the line `next` returned last.
    std::uint64_t line_number() const { return m_line; }
    // True when the line `next` returned last ended the text without a newline.
    bool at_unterminated_end() const { return m_pos > m_text.size(); }

private:
    std::string_view m_text;
    std::size_t m_pos = 0;
    std::uint64_t m_line = 0;
};

}  // namespace perfwatch
