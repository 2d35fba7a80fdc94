#include "web/page.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "notify/escape.hpp"
#include "web/query.hpp"

namespace perfwatch::web {

namespace {

constexpr std::pair<std::string_view, std::string_view> k_nav[] = {
    {"/", "Overview"}, {"/regressions", "Regressions"}, {"/alerts", "Alerts"}, {"/compare", "Compare"},
};

// Scripts: none at all. Styles and images: the binary's own.
constexpr const char* k_csp =
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'";

constexpr std::string_view k_css = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:.6rem 1.2rem;display:flex;gap:1.4rem;align-items:baseline}
header a{color:#cfd8e6;text-decoration:none}header a.active{color:#fff;font-weight:600}
header .brand{font-weight:700;color:#fff;margin-right:1rem}
main{padding:1rem 1.2rem;max-width:1400px}
h1{font-size:1.3rem;margin:.4rem 0 .8rem}h2{font-size:1.05rem;margin:1.4rem 0 .5rem}
table{border-collapse:collapse;background:#fff;font-size:.88rem;width:100%}
th,td{border-bottom:1px solid #e2e5ea;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#eef0f4;font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
a{color:#2456a6}code,.mono{font-family:ui-monospace,Menlo,monospace;font-size:.85em}
td code,td.mono,li code,h2 code,p.mono{overflow-wrap:anywhere;word-break:break-word}
.sev-error{color:#b3261e;font-weight:600}.sev-warning{color:#a35a00;font-weight:600}.sev-info{color:#4b5563}
.state-open{color:#b3261e;font-weight:600}.state-resolved{color:#2f7d32}.state-accepted{color:#5b4b9a}
.pager{margin:.6rem 0}.pager a,.pager span{margin-right:.8rem}
.filters{margin:.2rem 0 .8rem;display:flex;gap:.6rem;flex-wrap:wrap;align-items:center}
.filters input,.filters select{font-size:.85rem;padding:.15rem .3rem}
.chart{background:#fff;border:1px solid #e2e5ea;max-width:1200px}
.chart .point{fill:#2456a6}.chart .point.bad{fill:#b3261e}.chart .line{fill:none;stroke:#2456a6;stroke-width:1.2}
.chart .band{fill:#2456a6;fill-opacity:.12;stroke:none}.chart .median{stroke:#2456a6;stroke-opacity:.5;stroke-dasharray:4 3;fill:none}
.chart .axis{stroke:#9aa3b2}.chart text{font-size:11px;fill:#4b5563}
.chart .cp{stroke:#8c6bb1;stroke-width:1.5;stroke-dasharray:6 3}.chart .env{stroke:#a3875a;stroke-dasharray:2 3}
.chart .end{stroke:#2f7d32;stroke-width:1.5}.chart .second{fill:none;stroke:#c2410c;stroke-width:1.5;stroke-dasharray:8 3}
.chart .reg-open{fill:#b3261e;fill-opacity:.10}.chart .reg-resolved{fill:#2f7d32;fill-opacity:.10}
.chart .reg-accepted{fill:#5b4b9a;fill-opacity:.10}.chart .reg-invalid{fill:#9aa3b2;fill-opacity:.10}
.state-invalid{color:#4b5563}.triage-untriaged{color:#a35a00}.triage-investigating{color:#2456a6;font-weight:600}
.spark{vertical-align:middle}.spark polyline{fill:none;stroke:#2456a6;stroke-width:1.2}.spark .spark-bad{fill:#b3261e}
.legend{font-size:.8rem;color:#4b5563;margin:.3rem 0}.legend span{margin-right:1rem}
.note{color:#4b5563;font-size:.85rem}.box{background:#fff;border:1px solid #e2e5ea;padding:.6rem .8rem;margin:.5rem 0}
form.inline{display:inline}
)css";

std::vector<std::pair<std::string, std::string>> with(std::vector<std::pair<std::string, std::string>> params,
                                                      const std::string& key, const std::string& value) {
    std::erase_if(params, [&](const auto& p) { return p.first == key; });
    params.emplace_back(key, value);
    return params;
}

}  // namespace

std::string h(std::string_view text) { return escape_for(Medium::html, text); }

std::string page(std::string_view title, std::string_view active, std::string_view body) {
    std::string nav;
    for (const auto& [href, label] : k_nav)
        nav += fmt::format("<a href=\"{}\"{}>{}</a>", href, label == active ? " class=\"active\"" : "", label);
    return fmt::format("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                       "<title>{} - perfwatch</title><link rel=\"stylesheet\" href=\"/static/style.css\"></head>\n"
                       "<body><header><span class=\"brand\">perfwatch</span>{}</header>\n<main>\n{}</main></body></html>\n",
                       h(title), nav, body);
}

HttpResponse html_response(std::string body, unsigned status) {
    HttpResponse r{status, "text/html; charset=utf-8", std::move(body), {}};
    r.headers = {{"Content-Security-Policy", k_csp},
                 {"X-Content-Type-Options", "nosniff"},
                 {"Referrer-Policy", "same-origin"},
                 {"Cache-Control", "no-store"}};
    return r;
}

HttpResponse error_response(unsigned status, std::string_view message) {
    HttpResponse r = html_response(page("Error", "", fmt::format("<h1>{}</h1><p>{}</p>\n", status, h(message))), status);
    return r;
}

HttpResponse json_response(std::string body, unsigned status) {
    HttpResponse r = html_response(std::move(body), status);
    r.content_type = "application/json";
    return r;
}

HttpResponse json_error(unsigned status, std::string_view message) {
    return json_response(nlohmann::json{{"error", message}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), status);
}

HttpResponse redirect(std::string location) {
    HttpResponse r = html_response("", 303);
    r.headers.emplace_back("Location", std::move(location));
    return r;
}

std::string pager(std::string_view path, std::vector<std::pair<std::string, std::string>> params, std::size_t page_no,
                  std::size_t pages) {
    if (pages <= 1) return {};
    std::string out = "<div class=\"pager\">";
    if (page_no > 1) out += fmt::format("<a href=\"{}\">previous</a>", h(make_url(path, with(params, "page", std::to_string(page_no - 1)))));
    out += fmt::format("<span>page {} of {}</span>", page_no, pages);
    if (page_no < pages) out += fmt::format("<a href=\"{}\">next</a>", h(make_url(path, with(params, "page", std::to_string(page_no + 1)))));
    return out + "</div>\n";
}

std::string sort_header(std::string_view label, std::string_view key, std::string_view path,
                        std::vector<std::pair<std::string, std::string>> params, std::string_view current) {
    const std::string k(key);
    const std::string next = current == key ? "-" + k : k;
    std::erase_if(params, [](const auto& p) { return p.first == "page"; });
    const char* mark = current == key ? " &#9650;" : (current == "-" + k ? " &#9660;" : "");
    return fmt::format("<a href=\"{}\">{}</a>{}", h(make_url(path, with(params, "sort", next))), h(label), mark);
}

std::string_view stylesheet() { return k_css; }

}  // namespace perfwatch::web
