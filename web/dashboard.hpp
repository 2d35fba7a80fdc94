#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/series_index.hpp"
#include "storage/db.hpp"
#include "web/http_server.hpp"

namespace perfwatch::web {

struct DashboardOptions {
    // Accepting a regression, adding or expiring a silence and pinning a baseline need this token
    // (sent as the form's `token` field or `Authorization: Bearer`); empty: the dashboard is read-only.
    std::string token;
    // Host names (besides IP literals and localhost) that requests may name in their Host header:
    // the host of dashboard.base_url and this machine's name.
    std::vector<std::string> host_names;
    // Evidence links: a commit's page (`{commit}` replaced) and the base URL of the daemon's HTML
    // reports (run-ID.html); empty: not linked.
    std::string commit_url;
    std::string reports_base_url;
    // Who changes made with the token are recorded as (triage history).
    std::string token_name = "dashboard token";
};

// The dashboard's pages over one database: overview, series, run, compare, regressions, alerts,
// and the few POST actions that change state. Pages are HTML with SVG charts and no script; every
// value from the database goes through the HTML escaping layer; a page is a bounded number of
// queries whatever the history's length. Not thread-safe: one request at a time.
class Dashboard {
public:
    Dashboard(Db db, DashboardOptions options);

    // The response to a dashboard request; nullopt when `request` is not for a dashboard path.
    std::optional<HttpResponse> handle(const HttpRequest& request);
    // A 403 for a request whose Host is not this server's (a DNS-rebinding page reading the
    // dashboard, /healthz or /metrics): an IP literal, localhost or one of the options' host
    // names is; nullopt when the request may go on. Asked before any path is served.
    std::optional<HttpResponse> refuse_host(const HttpRequest& request) const;

    const Db& db() const { return m_db; }

private:
    HttpResponse get(std::string_view path, std::string_view query, std::string_view authorization);
    HttpResponse post(const HttpRequest& request, std::string_view path);

    Db m_db;
    DashboardOptions m_options;
    std::unique_ptr<SeriesIndex> m_index;  // read once, then grown with the runs stored since
};

}  // namespace perfwatch::web
