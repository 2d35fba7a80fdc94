#include "collectors/readers/units.hpp"

#include <array>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <utility>

namespace perfwatch {

namespace {

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

constexpr std::array<std::pair<std::string_view, double>, 9> k_time_units{{
    {"ns", 1},
    {"nsecond", 1},
    {"us", 1e3},
    {"usecond", 1e3},
    {"ms", 1e6},
    {"msecond", 1e6},
    {"s", 1e9},
    {"sec", 1e9},
    {"second", 1e9},
}};

// Decimal SI prefixes as Nsight tools print them ("Kbyte" is 1000 bytes); binary ones spelled "Ki".
double prefix_factor(std::string_view prefix, bool& ok) {
    ok = true;
    if (prefix.empty()) return 1;
    if (prefix == "K" || prefix == "k") return 1e3;
    if (prefix == "M") return 1e6;
    if (prefix == "G") return 1e9;
    if (prefix == "T") return 1e12;
    if (prefix == "P") return 1e15;
    if (prefix == "Ki") return 1024.0;
    if (prefix == "Mi") return 1024.0 * 1024.0;
    if (prefix == "Gi") return 1024.0 * 1024.0 * 1024.0;
    if (prefix == "Ti") return 1024.0 * 1024.0 * 1024.0 * 1024.0;
    ok = false;
    return 1;
}

std::optional<double> time_factor(std::string_view unit) {
    for (const auto& [name, factor] : k_time_units)
        if (unit == name) return factor;
    return std::nullopt;
}

}  // namespace

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

BaseValue to_base_unit(double value, std::string_view tool_unit) {
    const std::string_view u = trim(tool_unit);
    if (u.empty()) return {value, "count"};
    if (u == "%") return {value, "percent"};
    if (auto f = time_factor(u)) return {value * *f, "ns"};

    // Frequencies: hz, Khz, Mhz, Ghz and cycle/<time>.
    if (u.size() >= 2 && iequals(u.substr(u.size() - 2), "hz")) {
        bool ok = false;
        const double f = prefix_factor(u.substr(0, u.size() - 2), ok);
        if (ok) return {value * f, "hz"};
        if (u.size() == 3) {
            const char p = static_cast<char>(std::toupper(static_cast<unsigned char>(u[0])));
            const double g = prefix_factor(std::string_view(&p, 1), ok);
            if (ok) return {value * g, "hz"};
        }
    }
    if (u.starts_with("cycle/")) {
        if (auto f = time_factor(u.substr(6))) return {value * 1e9 / *f, "hz"};
    }

    // Sizes and bandwidths: <prefix>byte, <prefix>byte/<time>, <prefix>byte/<per-thing>.
    if (const auto pos = u.find("byte"); pos != std::string_view::npos) {
        bool ok = false;
        const double f = prefix_factor(u.substr(0, pos), ok);
        if (ok) {
            const std::string_view rest = u.substr(pos + 4);
            if (rest.empty()) return {value * f, "byte"};
            if (rest.starts_with("/")) {
                if (auto t = time_factor(rest.substr(1))) return {value * f * 1e9 / *t, "byte/s"};
                if (rest == "/cycle") return {value * f, "byte/cycle"};
                return {value * f, "byte"};  // per block, per thread, per request: still a size
            }
        }
    }
    // Nsight Systems spells sizes "B", "MB", "KiB" and rates "MBps".
    if (u.ends_with("Bps") || u.ends_with("B/s")) {
        bool ok = false;
        const double f = prefix_factor(u.substr(0, u.size() - 3), ok);
        if (ok) return {value * f, "byte/s"};
    }
    if (u.ends_with("B")) {
        bool ok = false;
        const double f = prefix_factor(u.substr(0, u.size() - 1), ok);
        if (ok) return {value * f, "byte"};
    }
    return {value, "count"};
}

namespace {
__extension__ using Uint128 = unsigned __int128;
}

bool parse_decimal(std::string_view text, double& out) {
    // Digits below 2^53 scaled by a power of ten up to 10^22: both are exact doubles, so one
    // correctly rounded division gives the correctly rounded value (Clinger's fast path), which
    // is what from_chars gives.
    static constexpr double k_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                         1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    static constexpr std::uint64_t k_pow10_integer[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                                         100000000, 1000000000, 10000000000, 100000000000,
                                                         1000000000000, 10000000000000, 100000000000000,
                                                         1000000000000000, 10000000000000000, 100000000000000000,
                                                         1000000000000000000, 10000000000000000000u};
    const char* p = text.data();
    const char* const end = p + text.size();
    const bool negative = p != end && *p == '-';
    if (negative) ++p;
    std::uint64_t digits = 0;
    std::size_t count = 0, fraction = 0;
    const auto take_digits = [&] {
        const char* from = p;
        // Eight digits at a time where eight bytes are there: each a digit (high nibble 3, and
        // still 3 after adding 6), then pairs, fours and the eight combined by multiplies, a
        // chain of 3 steps rather than 8 dependent multiply-adds.
        while (end - p >= 8) {
            std::uint64_t word = 0;
            std::memcpy(&word, p, 8);  // p[0], the leading digit, in the low byte
            constexpr std::uint64_t k_high = 0xF0F0F0F0F0F0F0F0, k_threes = 0x3333333333333333;
            if (((word & k_high) | (((word + 0x0606060606060606) & k_high) >> 4)) != k_threes) break;
            word -= 0x3030303030303030;
            word = word * 10 + (word >> 8);  // each even byte: two digits
            word = (((word & 0x000000FF000000FF) * (100 + (1000000ULL << 32))) +
                    (((word >> 16) & 0x000000FF000000FF) * (1 + (10000ULL << 32)))) >> 32;
            digits = digits * 100000000 + word;
            p += 8;
        }
        for (; p != end && static_cast<unsigned char>(*p - '0') < 10; ++p)
            digits = digits * 10 + static_cast<std::uint64_t>(*p - '0');
        count += static_cast<std::size_t>(p - from);
        return static_cast<std::size_t>(p - from);
    };
    bool plain = take_digits() > 0;
    if (plain && p != end && *p == '.') {
        ++p;
        fraction = take_digits();
        plain = fraction > 0;
    }
    // Zeros ending the fraction change nothing ("1712195515284428.0").
    for (const char* z = p; plain && p == end && count <= 19 && fraction > 0 && digits > (std::uint64_t{1} << 53) && *--z == '0';) {
        digits /= 10;
        --fraction;
        --count;
    }
    if (plain && p == end && count <= 19 && digits <= (std::uint64_t{1} << 53)) {
        const double v = static_cast<double>(digits) / k_pow10[fraction];
        out = negative ? -v : v;
        return true;
    }
    // More digits than 53 bits with a whole part below 2^53 (a microsecond timestamp with a
    // fraction, "1712195495610619.8"): the whole part fixes the exponent; the digits scaled by 2^s
    // so that their quotient by 10^fraction has 53 bits, that quotient and its remainder give the
    // correctly rounded value (ties to even), as from_chars does.
    if (plain && p == end && count <= 19 && fraction > 0) {
        const std::uint64_t scale = k_pow10_integer[fraction];
        const std::uint64_t whole = digits / scale;
        if (whole > 0 && whole < (std::uint64_t{1} << 53)) {
            const int s = 53 - static_cast<int>(std::bit_width(whole));
            const Uint128 scaled = static_cast<Uint128>(digits) << s;
            std::uint64_t quotient = static_cast<std::uint64_t>(scaled / scale);  // below 2^53: one division
            const std::uint64_t remainder = static_cast<std::uint64_t>(scaled) - quotient * scale;
            if (remainder > scale - remainder || (remainder == scale - remainder && (quotient & 1) != 0)) ++quotient;
            // Times 2^-s: exact.
            const double v = static_cast<double>(quotient) * std::bit_cast<double>(static_cast<std::uint64_t>(1023 - s) << 52);
            out = negative ? -v : v;
            return true;
        }
    }
    const auto [ptr, ec] = std::from_chars(text.data(), end, out);
    return ec == std::errc() && ptr == end;
}

std::optional<double> parse_report_number(std::string_view text) {
    std::string_view t = trim(text);
    if (t.empty()) return std::nullopt;
    std::string buf;
    const auto comma = t.find(',');
    const auto dot = t.find('.');
    if (comma != std::string_view::npos) {
        const auto last_comma = t.rfind(',');
        const auto last_dot = t.rfind('.');
        buf.reserve(t.size());
        if (dot != std::string_view::npos && last_dot > last_comma) {
            for (char c : t)  // "1,234.5": commas group thousands
                if (c != ',') buf.push_back(c);
        } else if (dot != std::string_view::npos) {
            for (char c : t)  // "1.234,5": dots group thousands, comma is the decimal mark
                if (c != '.') buf.push_back(c == ',' ? '.' : c);
        } else {
            // Commas only: groups of three digits are thousands ("95,175,254"), else a decimal comma.
            bool grouped = true;
            std::size_t start = (t.front() == '-') ? 1 : 0;
            std::size_t first = t.find(',');
            if (first == start || first - start > 3) grouped = false;
            for (std::size_t p = first; grouped && p != std::string_view::npos; p = t.find(',', p + 1)) {
                const std::size_t next = t.find(',', p + 1);
                const std::size_t end = next == std::string_view::npos ? t.size() : next;
                if (end - p - 1 != 3) grouped = false;
            }
            for (char c : t) {
                if (c == ',') {
                    if (!grouped) buf.push_back('.');
                } else {
                    buf.push_back(c);
                }
            }
        }
        t = buf;
    }
    if (t.front() == '+') t.remove_prefix(1);
    double v = 0;
    if (!parse_decimal(t, v) || !std::isfinite(v)) return std::nullopt;
    return v;
}

std::string slug(std::string_view tool_name) {
    std::string out;
    out.reserve(tool_name.size());
    bool pending_sep = false;
    for (char ch : tool_name) {
        const auto c = static_cast<unsigned char>(ch);
        if (std::isalnum(c)) {
            if (pending_sep && !out.empty()) out.push_back('_');
            pending_sep = false;
            out.push_back(static_cast<char>(std::tolower(c)));
        } else if (ch == '_') {
            // keep raw-metric double underscores ("sm__cycles") as they are
            if (pending_sep && !out.empty()) out.push_back('_');
            pending_sep = false;
            out.push_back('_');
        } else {
            pending_sep = true;
        }
    }
    if (!out.empty() && std::isdigit(static_cast<unsigned char>(out.front()))) out.insert(0, "m_");
    return out;
}

}  // namespace perfwatch
