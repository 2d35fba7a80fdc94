#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/interned.hpp"

namespace perfwatch {

// A text from a small vocabulary (a metric's name, unit or tool name), kept once per process:
// equal texts share one interned copy, so a Symbol is one pointer wide, copies without allocating
// and compares by address. Past k_max_interned_bytes of distinct texts (a hostile or unusual
// report) a new text is not interned but shared by its copies and freed with the last of them, so
// the table cannot grow without bound. Thread-safe.
class Symbol : public detail::InternHandle<std::string> {
public:
    Symbol() noexcept = default;  // the empty text
    Symbol(std::string_view text);
    Symbol(const char* text) : Symbol(std::string_view(text)) {}
    Symbol(const std::string& text) : Symbol(std::string_view(text)) {}

    const std::string& str() const noexcept { return m_bits == 0 ? empty_text() : node()->value; }
    std::string_view view() const noexcept { return str(); }
    operator const std::string&() const noexcept { return str(); }
    operator std::string_view() const noexcept { return str(); }
    const char* c_str() const noexcept { return str().c_str(); }
    const char* data() const noexcept { return str().data(); }
    std::size_t size() const noexcept { return str().size(); }
    bool empty() const noexcept { return m_bits == 0; }
    bool starts_with(std::string_view prefix) const noexcept { return view().starts_with(prefix); }
    bool ends_with(std::string_view suffix) const noexcept { return view().ends_with(suffix); }

    friend bool operator==(const Symbol& a, const Symbol& b) noexcept { return same(a, b); }
    friend bool operator==(const Symbol& a, std::string_view b) noexcept { return a.view() == b; }
    friend bool operator==(const Symbol& a, const std::string& b) noexcept { return a.view() == b; }
    friend bool operator==(const Symbol& a, const char* b) noexcept { return a.view() == b; }
    friend std::strong_ordering operator<=>(const Symbol& a, const Symbol& b) noexcept { return a.view() <=> b.view(); }
    friend std::strong_ordering operator<=>(const Symbol& a, std::string_view b) noexcept { return a.view() <=> b; }
    friend std::strong_ordering operator<=>(const Symbol& a, const std::string& b) noexcept {
        return a.view() <=> std::string_view(b);
    }
    friend std::strong_ordering operator<=>(const Symbol& a, const char* b) noexcept {
        return a.view() <=> std::string_view(b);
    }
    friend std::string operator+(const Symbol& a, std::string_view b) { return std::string(a.view()).append(b); }
    friend std::string operator+(std::string_view a, const Symbol& b) { return std::string(a).append(b.view()); }
    friend std::string operator+(const Symbol& a, const char* b) { return std::string(a.view()).append(b); }
    friend std::string operator+(const char* a, const Symbol& b) { return std::string(a).append(b.view()); }
    friend std::string operator+(const Symbol& a, const std::string& b) { return std::string(a.view()).append(b); }
    friend std::string operator+(const std::string& a, const Symbol& b) { return std::string(a).append(b.view()); }

    // Bytes of distinct texts interned so far (for tests).
    static std::size_t interned_bytes();

private:
    static const std::string& empty_text() noexcept;
};

// Writes the text (test failure messages, streams).
std::ostream& operator<<(std::ostream& out, const Symbol& s);

// Past this many bytes of distinct interned texts, new texts are counted, not interned.
inline constexpr std::size_t k_max_interned_bytes = 32u << 20;

}  // namespace perfwatch

template <>
struct std::hash<perfwatch::Symbol> {
    std::size_t operator()(const perfwatch::Symbol& s) const noexcept { return std::hash<std::string_view>{}(s.view()); }
};

template <>
struct fmt::formatter<perfwatch::Symbol> : fmt::formatter<std::string_view> {
    auto format(const perfwatch::Symbol& s, format_context& ctx) const {
        return fmt::formatter<std::string_view>::format(s.view(), ctx);
    }
};
