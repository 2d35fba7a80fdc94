#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace perfwatch::web {

// The parameters of a query string or a form body (application/x-www-form-urlencoded), decoded,
// in their order. Bounded: at most k_max_params parameters of k_max_value bytes each; more is an
// error, as is a value that is not valid UTF-8 once decoded.
class Query {
public:
    static constexpr std::size_t k_max_params = 64;
    // A kernel's history link carries its name: real PyTorch names reach 5 KB (15 KB encoded).
    static constexpr std::size_t k_max_value = 16384;

    static Result<Query> parse(std::string_view text);

    // The first value of `key`; "" when absent.
    std::string get(std::string_view key) const;
    bool has(std::string_view key) const;
    // Every value of `key`, in order.
    std::vector<std::string> all(std::string_view key) const;
    // A positive integer parameter; nullopt when absent or not one.
    std::optional<std::int64_t> id(std::string_view key) const;
    const std::vector<std::pair<std::string, std::string>>& items() const { return m_items; }

private:
    std::vector<std::pair<std::string, std::string>> m_items;
};

// `text` percent-encoded for a query value (everything but unreserved characters).
std::string url_encode(std::string_view text);

// The URL template `url` (holding "{commit}", as dashboard.commit_url) with `commit` percent-encoded
// in its place; empty when either is empty.
std::string commit_link(std::string_view url, std::string_view commit);

// "path?k=v&k=v" with the values encoded; empty values left out.
std::string make_url(std::string_view path, const std::vector<std::pair<std::string, std::string>>& params);

}  // namespace perfwatch::web
