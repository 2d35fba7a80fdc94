#include "core/text.hpp"

#include <utf8cpp/utf8.h>

#include <algorithm>
#include <iterator>

namespace perfwatch {

namespace {

bool is_control(char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
}

}  // namespace

bool is_valid_utf8(std::string_view text) { return utf8::is_valid(text.begin(), text.end()); }

bool needs_repair(std::string_view text, bool names) {
    return (names && std::any_of(text.begin(), text.end(), is_control)) || !is_valid_utf8(text);
}

std::string to_valid_utf8(std::string_view text, bool names) {
    if (!needs_repair(text, names)) return std::string(text);
    const bool has_control = names && std::any_of(text.begin(), text.end(), is_control);
    std::string valid;
    valid.reserve(text.size() + 8);
    utf8::replace_invalid(text.begin(), text.end(), std::back_inserter(valid), 0xFFFDu);
    if (!has_control) return valid;
    std::string out;
    out.reserve(valid.size() + 8);
    for (const char c : valid) {
        if (is_control(c))
            out += k_replacement_character;
        else
            out += c;
    }
    return out;
}

std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) {
    if (text.size() <= max_bytes) return text;
    std::size_t end = max_bytes;
    // Back off continuation bytes (10xxxxxx) to the start of the character cut in two.
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    return text.substr(0, end);
}

std::string ascii_lower(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

}  // namespace perfwatch
