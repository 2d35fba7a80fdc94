#pragma once

#include <string_view>

namespace perfwatch {

// The length of the prefix a log or script puts before a tool's output on `line`: comment
// markers (`#`, `//`, `;`), bracketed tags (`[stdout]`, `[1,0]<stdout>:`, `<stderr>:`), dates and
// times (`2024-05-01T10:11:12.123Z`, `[2024-05-01 10:11:12]`, `10:11:12.5`), any of them in a
// row, and the one space after them; 0 when the line has none. A table whose lines all carry the
// same prefix keeps its column alignment once the prefix is removed.
std::size_t log_prefix_length(std::string_view line);

// `line` without its log prefix.
inline std::string_view strip_log_prefix(std::string_view line) { return line.substr(log_prefix_length(line)); }

}  // namespace perfwatch
