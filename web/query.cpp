#include "web/query.hpp"

#include <fmt/format.h>

#include <charconv>

#include "core/text.hpp"

namespace perfwatch::web {

namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::optional<std::string> decode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '+') {
            out += ' ';
        } else if (c == '%') {
            if (i + 2 >= text.size()) return std::nullopt;
            const int hi = hex_digit(text[i + 1]), lo = hex_digit(text[i + 2]);
            if (hi < 0 || lo < 0) return std::nullopt;
            out += static_cast<char>(hi * 16 + lo);
            i += 2;
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace

Result<Query> Query::parse(std::string_view text) {
    Query q;
    std::size_t at = 0;
    while (at < text.size()) {
        const std::size_t end = std::min(text.find('&', at), text.size());
        const std::string_view item = text.substr(at, end - at);
        at = end + 1;
        if (item.empty()) continue;
        if (q.m_items.size() == k_max_params) return fail("request", 0, fmt::format("more than {} parameters", k_max_params));
        const std::size_t eq = item.find('=');
        auto key = decode(item.substr(0, eq));
        auto value = decode(eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1));
        if (!key || !value) return fail("request", 0, "a parameter is not percent-encoded correctly");
        if (key->size() > 64 || value->size() > k_max_value)
            return fail("request", 0, fmt::format("parameter '{}' is longer than {} bytes", key->substr(0, 64), k_max_value));
        if (!is_valid_utf8(*key) || !is_valid_utf8(*value)) return fail("request", 0, "a parameter is not valid UTF-8");
        q.m_items.emplace_back(std::move(*key), std::move(*value));
    }
    return q;
}

std::string Query::get(std::string_view key) const {
    for (const auto& [k, v] : m_items)
        if (k == key) return v;
    return {};
}

bool Query::has(std::string_view key) const {
    for (const auto& [k, v] : m_items)
        if (k == key) return true;
    return false;
}

std::vector<std::string> Query::all(std::string_view key) const {
    std::vector<std::string> out;
    for (const auto& [k, v] : m_items)
        if (k == key) out.push_back(v);
    return out;
}

std::optional<std::int64_t> Query::id(std::string_view key) const {
    const std::string v = get(key);
    std::int64_t out = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || out <= 0) return std::nullopt;
    return out;
}

std::string commit_link(std::string_view url, std::string_view commit) {
    const std::size_t at = url.find("{commit}");
    if (commit.empty() || at == std::string_view::npos) return {};
    return std::string(url.substr(0, at)) + url_encode(commit) + std::string(url.substr(at + 8));
}

std::string url_encode(std::string_view text) {
    std::string out;
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '-' || c == '_' ||
            c == '.' || c == '~')
            out += c;
        else
            out += fmt::format("%{:02X}", u);
    }
    return out;
}

std::string make_url(std::string_view path, const std::vector<std::pair<std::string, std::string>>& params) {
    std::string out(path);
    char sep = '?';
    for (const auto& [k, v] : params) {
        if (v.empty()) continue;
        out += sep;
        out += url_encode(k) + "=" + url_encode(v);
        sep = '&';
    }
    return out;
}

}  // namespace perfwatch::web
