#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "web/http_server.hpp"

namespace perfwatch::web {

// `text` escaped for HTML text and attribute values (notify's one HTML escaping layer).
std::string h(std::string_view text);

// A whole page: the title, the navigation with `active` marked, `body` (already HTML).
std::string page(std::string_view title, std::string_view active, std::string_view body);

// A 200 (or `status`) HTML response with the dashboard's security headers.
HttpResponse html_response(std::string body, unsigned status = 200);
// A plain-text error page with those headers.
HttpResponse error_response(unsigned status, std::string_view message);
// A JSON document (the API) with the same security headers, never cached.
HttpResponse json_response(std::string body, unsigned status = 200);
// {"error": message} with `status`.
HttpResponse json_error(unsigned status, std::string_view message);
// 303 See Other to `location` (after a POST).
HttpResponse redirect(std::string location);

// "Page 2 of 7" with previous and next links keeping `params`.
std::string pager(std::string_view path, std::vector<std::pair<std::string, std::string>> params, std::size_t page,
                  std::size_t pages);

// A table header cell that sorts the list by `key` when clicked (descending on a second click).
std::string sort_header(std::string_view label, std::string_view key, std::string_view path,
                        std::vector<std::pair<std::string, std::string>> params, std::string_view current);

// The stylesheet served at /static/style.css.
std::string_view stylesheet();

}  // namespace perfwatch::web
