#include "collectors/readers/log_prefix.hpp"

#include <cctype>

namespace perfwatch {

namespace {

bool digit(std::string_view s, std::size_t i) { return i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); }

// Digits at [i, i + n).
bool digits(std::string_view s, std::size_t i, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k)
        if (!digit(s, i + k)) return false;
    return true;
}

// HH:MM:SS with optional fraction at i; its length, or 0.
std::size_t clock_time(std::string_view s, std::size_t i) {
    if (!digits(s, i, 2) || i + 2 >= s.size() || s[i + 2] != ':' || !digits(s, i + 3, 2) || i + 5 >= s.size() ||
        s[i + 5] != ':' || !digits(s, i + 6, 2))
        return 0;
    std::size_t n = 8;
    if (i + n < s.size() && (s[i + n] == '.' || s[i + n] == ',') && digit(s, i + n + 1)) {
        ++n;
        while (digit(s, i + n)) ++n;
    }
    return n;
}

// A date, a time, or both (ISO 8601 or with a space), with an optional zone; its length, or 0.
std::size_t timestamp(std::string_view s, std::size_t i) {
    std::size_t n = 0;
    if (digits(s, i, 4) && i + 4 < s.size() && s[i + 4] == '-' && digits(s, i + 5, 2) && i + 7 < s.size() &&
        s[i + 7] == '-' && digits(s, i + 8, 2)) {
        n = 10;
        if (i + n < s.size() && (s[i + n] == 'T' || s[i + n] == ' '))
            if (const std::size_t t = clock_time(s, i + n + 1)) n += 1 + t;
    } else {
        n = clock_time(s, i);
        if (n == 0) return 0;
    }
    if (i + n < s.size() && s[i + n] == 'Z') {
        ++n;
    } else if (i + n < s.size() && (s[i + n] == '+' || s[i + n] == '-') && digits(s, i + n + 1, 2)) {
        std::size_t z = 3;
        if (i + n + z < s.size() && s[i + n + z] == ':') ++z;
        if (digits(s, i + n + z, 2)) n += z + 2;
    }
    return n;
}

// One prefix token at i: its length, or 0.
std::size_t token(std::string_view s, std::size_t i) {
    if (i >= s.size()) return 0;
    const char c = s[i];
    if (c == '#' || c == ';') {
        std::size_t n = 1;
        while (i + n < s.size() && s[i + n] == c) ++n;
        return n;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') return 2;
    if (c == '[' || c == '<') {
        const char close = c == '[' ? ']' : '>';
        const std::size_t end = s.find(close, i + 1);
        if (end == std::string_view::npos || end - i > 64) return 0;
        std::size_t n = end - i + 1;
        if (i + n < s.size() && s[i + n] == ':') ++n;
        return n;
    }
    if (const std::size_t t = timestamp(s, i)) {
        // A time needs a separator after it, so a number starting a table row is no prefix.
        if (i + t < s.size() && (s[i + t] == ' ' || s[i + t] == ':' || s[i + t] == '|')) return t + (s[i + t] == ' ' ? 0 : 1);
    }
    return 0;
}

}  // namespace

std::size_t log_prefix_length(std::string_view line) {
    std::size_t i = 0;
    for (int tokens = 0; tokens < 4; ++tokens) {
        const std::size_t t = token(line, i);
        if (t == 0) break;
        i += t;
        if (i < line.size() && line[i] == ' ') {
            // One space separates tokens; a second one is the text's own indentation.
            if (token(line, i + 1) != 0) ++i;
        }
    }
    if (i > 0 && i < line.size() && line[i] == ' ') ++i;
    return i;
}

}  // namespace perfwatch
