#include "web/dashboard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <charconv>

#include "web/page.hpp"
#include "web/pages.hpp"
#include "core/text.hpp"

namespace perfwatch::web {

namespace {

// "/run/12" with prefix "/run/" -> 12.
std::optional<std::int64_t> id_after(std::string_view path, std::string_view prefix, std::string_view suffix = {}) {
    if (!path.starts_with(prefix) || !path.ends_with(suffix) || path.size() <= prefix.size() + suffix.size())
        return std::nullopt;
    const std::string_view digits = path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
    std::int64_t id = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
    if (ec != std::errc() || end != digits.data() + digits.size() || id <= 0) return std::nullopt;
    return id;
}

// Compares without stopping at the first difference (no timing hint about the token).
bool same_secret(std::string_view a, std::string_view b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
    return diff == 0;
}

// The host part of an Origin ("http://127.0.0.1:9464" -> "127.0.0.1:9464").
std::string_view origin_host(std::string_view origin) {
    const auto at = origin.find("://");
    return at == std::string_view::npos ? origin : origin.substr(at + 3);
}

// True when `host` (a Host header: name or address, maybe a port) names this server: an IP
// literal, localhost, or one of `names` (case-insensitive).
bool host_allowed(std::string_view host, const std::vector<std::string>& names) {
    std::string_view name = host;
    if (name.starts_with('[')) {
        const std::size_t close = name.find(']');
        if (close == std::string_view::npos) return false;
        boost::system::error_code ec;
        boost::asio::ip::make_address_v6(std::string(name.substr(1, close - 1)), ec);
        return !ec;
    }
    if (const std::size_t colon = name.rfind(':'); colon != std::string_view::npos) name = name.substr(0, colon);
    if (name.empty()) return false;
    const std::string lower = ascii_lower(name);
    if (lower == "localhost") return true;
    boost::system::error_code ec;
    boost::asio::ip::make_address_v4(lower, ec);
    if (!ec) return true;
    return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return ascii_lower(n) == lower; });
}

// A path that only takes POST: an action.
bool is_action(std::string_view path) {
    return path == "/silences" || path == "/files/retry" || id_after(path, "/regression/", "/accept") ||
           id_after(path, "/regression/", "/triage") || id_after(path, "/api/v1/regressions/", "/triage") ||
           id_after(path, "/silence/", "/expire") || id_after(path, "/run/", "/pin") || id_after(path, "/run/", "/unpin");
}

}  // namespace

Result<const SeriesIndex*> PageContext::series_index() {
    auto stats = db.browse().run_count_and_newest();
    if (!stats) return std::unexpected(stats.error());
    const auto [count, newest] = *stats;
    // Runs only ever come with higher ids: the newer ones are added; should the index then hold
    // another number of runs than the database, some went (retention) and it is read again.
    for (int pass = 0; pass < 2; ++pass) {
        if (!index) index = std::make_unique<SeriesIndex>();
        if (newest > index->newest_run()) {
            auto rows = db.browse().run_index(index->newest_run());
            if (!rows) return std::unexpected(rows.error());
            index->add(*rows);
        }
        if (static_cast<std::int64_t>(index->runs()) == count || pass == 1) break;
        index.reset();
    }
    return index.get();
}

Dashboard::Dashboard(Db db, DashboardOptions options) : m_db(std::move(db)), m_options(std::move(options)) {}

std::optional<HttpResponse> Dashboard::handle(const HttpRequest& request) {
    const std::string_view target = request.target;
    const auto qm = target.find('?');
    const std::string_view path = target.substr(0, qm);
    const std::string_view query = qm == std::string_view::npos ? std::string_view() : target.substr(qm + 1);
    const bool ours = path == "/" || path == "/static/style.css" || path == "/series" || path.starts_with("/run/") ||
                      path == "/compare" || path == "/regressions" || path.starts_with("/regression/") ||
                      path == "/alerts" || path == "/silences" || path.starts_with("/silence/") ||
                      path == "/files/retry" || path.starts_with("/api/v1/") || path.starts_with("/commit/");
    if (!ours) return std::nullopt;
    if ((request.method == "GET" || request.method == "HEAD") && is_action(path)) {
        HttpResponse r = error_response(405, "this is an action: it takes POST (a form on the dashboard's pages)");
        r.headers.emplace_back("Allow", "POST");
        return r;
    }
    if (request.method == "GET" || request.method == "HEAD") return get(path, query, request.authorization);
    if (request.method == "POST") return post(request, path);
    HttpResponse r = error_response(405, "only GET and POST");
    r.headers.emplace_back("Allow", "GET, HEAD, POST");
    return r;
}

std::optional<HttpResponse> Dashboard::refuse_host(const HttpRequest& request) const {
    if (host_allowed(request.host, m_options.host_names)) return std::nullopt;
    return error_response(403, "this server does not answer for that Host (only its address, localhost or dashboard.base_url's host)");
}

HttpResponse Dashboard::get(std::string_view path, std::string_view query, std::string_view authorization) {
    if (path == "/static/style.css") {
        HttpResponse r{200, "text/css; charset=utf-8", std::string(stylesheet()), {}};
        r.headers = {{"X-Content-Type-Options", "nosniff"}, {"Cache-Control", "max-age=3600"}};
        return r;
    }
    auto q = Query::parse(query);
    if (!q) return error_response(400, q.error().message);
    PageContext ctx{m_db, !m_options.token.empty(), m_options.commit_url, m_options.reports_base_url, m_options.token_name, m_index};
    // The report file: open to all on a read-only dashboard, with the token (Authorization:
    // Bearer, or the POST form) where one is configured.
    if (auto id = id_after(path, "/run/", "/report")) {
        if (!m_options.token.empty() && !(authorization.starts_with("Bearer ") && same_secret(authorization.substr(7), m_options.token)))
            return error_response(403, "the report file needs the token (the run page's Download form, or Authorization: Bearer)");
        return report_download(ctx, *id);
    }
    if (path == "/") return overview_page(ctx, *q);
    if (path == "/series") return series_page(ctx, *q);
    if (path == "/compare") return q->has("a_series") || q->has("b_series") ? range_compare_page(ctx, *q) : compare_page(ctx, *q);
    if (path.starts_with("/commit/")) {
        auto commit = Query::parse("c=" + std::string(path.substr(8)));
        if (!commit) return error_response(400, commit.error().message);
        return commit_page(ctx, commit->get("c"));
    }
    if (path == "/api/v1/compare") return range_compare_api(ctx, *q);
    if (path == "/api/v1/series") return q->has("key") ? api_series_values(ctx, *q) : api_series(ctx, *q);
    if (path == "/api/v1/regressions") return api_regressions(ctx, *q);
    if (auto id = id_after(path, "/api/v1/regressions/")) return api_regression(ctx, *id);
    if (path == "/api/v1/kernels") return api_kernels(ctx, *q);
    if (path == "/api/v1/search") return api_search(ctx, *q);
    if (auto id = id_after(path, "/api/v1/runs/")) return api_run(ctx, *id);
    if (path.starts_with("/api/")) return json_error(404, "no such API path");
    if (path == "/regressions") return regressions_page(ctx, *q);
    if (path == "/alerts") return alerts_page(ctx, *q);
    if (auto id = id_after(path, "/run/")) return run_page(ctx, *id);
    if (auto id = id_after(path, "/regression/")) return regression_page(ctx, *id);
    return error_response(404, "no such page");
}

HttpResponse Dashboard::post(const HttpRequest& request, std::string_view path) {
    // The API's callers are told in JSON, a browser's in a page.
    const auto refuse = [api = path.starts_with("/api/")](unsigned status, std::string_view why) {
        return api ? json_error(status, why) : error_response(status, why);
    };
    // Cross-site requests are refused before anything else: a browser says where a form came from.
    if (request.sec_fetch_site == "cross-site" || request.sec_fetch_site == "same-site")
        return refuse(403, "cross-site requests cannot change state");
    if (!request.origin.empty() && origin_host(request.origin) != request.host)
        return refuse(403, "cross-site requests cannot change state");
    if (m_options.token.empty()) return refuse(403, "this dashboard is read-only (no token is configured)");
    if (!request.content_type.starts_with("application/x-www-form-urlencoded"))
        return refuse(415, "a form (application/x-www-form-urlencoded) is expected");
    auto form = Query::parse(request.body);
    if (!form) return refuse(400, form.error().message);
    std::string token = form->get("token");
    if (token.empty() && request.authorization.starts_with("Bearer ")) token = request.authorization.substr(7);
    if (!same_secret(token, m_options.token)) return refuse(403, "a valid token is needed to change state");
    PageContext ctx{m_db, true, m_options.commit_url, m_options.reports_base_url, m_options.token_name, m_index};
    if (auto id = id_after(path, "/run/", "/report")) return report_download(ctx, *id);
    if (auto id = id_after(path, "/regression/", "/accept")) return accept_action(ctx, *id, *form);
    if (auto id = id_after(path, "/regression/", "/triage")) return triage_action(ctx, *id, *form);
    if (auto id = id_after(path, "/api/v1/regressions/", "/triage")) return api_triage(ctx, *id, *form);
    if (path == "/silences") return silence_add_action(ctx, *form);
    if (auto id = id_after(path, "/silence/", "/expire")) return silence_expire_action(ctx, *id);
    if (path == "/files/retry") return file_retry_action(ctx, *form);
    if (auto id = id_after(path, "/run/", "/pin")) return pin_action(ctx, *id, *form);
    if (auto id = id_after(path, "/run/", "/unpin")) return unpin_action(ctx, *id);
    return error_response(404, "no such action");
}

}  // namespace perfwatch::web
