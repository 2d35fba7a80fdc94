#pragma once

#include <string>
#include <string_view>

namespace perfwatch {

// The replacement for bytes that are not valid UTF-8 (and for control characters in names).
inline constexpr std::string_view k_replacement_character = "\xEF\xBF\xBD";

// True when `text` is valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view text);

// True when to_valid_utf8(text, names) would change `text` (checked without copying it).
bool needs_repair(std::string_view text, bool names = false);

// `text` with every invalid UTF-8 sequence replaced by U+FFFD (utf8cpp's maximal-subpart rule),
// and, when `names` is set, every C0 control character and DEL too: a name is one line of text.
std::string to_valid_utf8(std::string_view text, bool names = false);

// `text` with ASCII letters in lower case (other bytes, UTF-8 among them, unchanged; no locale).
std::string ascii_lower(std::string_view text);

// The longest prefix of `text` (valid UTF-8) of at most `max_bytes` that ends on a character
// boundary.
std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes);

}  // namespace perfwatch
