#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/series_index.hpp"
#include "storage/db.hpp"
#include "web/http_server.hpp"
#include "web/query.hpp"

namespace perfwatch::web {

// What a page needs besides its parameters.
struct PageContext {
    Db& db;
    bool writable = false;  // a token is configured: the action forms are shown
    std::string_view commit_url;        // DashboardOptions::commit_url
    std::string_view reports_base_url;  // DashboardOptions::reports_base_url
    std::string_view token_name;        // who a change made with the token is recorded as
    // The dashboard's series index, kept between requests.
    std::unique_ptr<SeriesIndex>& index;

    // The series index brought up to date: the runs stored since the last request are added (two
    // statements); when runs went (retention), it is read again whole.
    Result<const SeriesIndex*> series_index();
};

// How sharp a regression's judgement was: the opening finding's confidence, the run-to-run
// spread of the (at most 10) runs of its series before its first bad run, as a share of their
// level, and the smallest change those runs let the engine's test show.
struct Sharpness {
    std::optional<double> confidence_pct;
    std::optional<double> noise_pct;
    bool noise_floored = false;  // below the test's 0.5% floor: tested as the floor
    std::optional<double> detectable_pct;
    std::size_t runs_before = 0;
};
Result<Sharpness> sharpness_of(PageContext& ctx, const SeriesIndex& index, const RegressionState& r);
// "confidence 99.9%; noise (run-to-run spread of the 10 runs before) 0.80%; smallest change ...".
std::string sharpness_text(const Sharpness& s);

// Matches of a search of `needle` (ASCII case ignored) across series (title and key: every one),
// kernel names and commits (at most `limit` of each, by name).
struct SearchHits {
    std::vector<const SeriesEntry*> series;
    std::vector<std::pair<std::string, std::int64_t>> kernels;  // name, newest run with it
    std::vector<std::pair<std::string, std::int64_t>> commits;  // commit, its newest run
};
Result<SearchHits> search(PageContext& ctx, std::string_view needle, std::size_t limit);

// `commit` as HTML: a link to its page on the code host when a commit_url is configured.
std::string commit_html(const PageContext& ctx, std::string_view commit);

// The pages, one per file (web/*_page.cpp); each a bounded number of queries.
HttpResponse overview_page(PageContext& ctx, const Query& q);
HttpResponse series_page(PageContext& ctx, const Query& q);
HttpResponse run_page(PageContext& ctx, std::int64_t run_id);
HttpResponse compare_page(PageContext& ctx, const Query& q);
// N runs of one series against M runs of another (or of the same: two commit ranges): the run
// metric and the top kernels, each with the engine's rank test, its confidence, the noise and the
// smallest change the runs could tell. The page, and the same as JSON at /api/v1/compare.
HttpResponse range_compare_page(PageContext& ctx, const Query& q);
HttpResponse range_compare_api(PageContext& ctx, const Query& q);
// The JSON API (web/api.cpp): every series with its labels, run count, latest run and open
// regressions; one series' values of a metric (run, or kernel `entity`) per run; one run with
// its labels, run metrics, kernels' metrics (at most 1,000) and findings; the regressions by
// status (open by default; resolved, accepted, all) and series.
HttpResponse api_series(PageContext& ctx, const Query& q);
HttpResponse api_series_values(PageContext& ctx, const Query& q);
HttpResponse api_run(PageContext& ctx, std::int64_t run_id);
HttpResponse api_regressions(PageContext& ctx, const Query& q);
// One regression with its sharpness and triage history (GET /api/v1/regressions/ID).
HttpResponse api_regression(PageContext& ctx, std::int64_t id);
// The kernels of a run (`run`, or the newest run of series `key`) with their duration, launches
// and GPU time, most GPU time first (at most 1,000).
HttpResponse api_kernels(PageContext& ctx, const Query& q);
// Series, kernels and commits whose name holds `q` (at most 50 kernels and commits), as /?q= lists them.
HttpResponse api_search(PageContext& ctx, const Query& q);
// Triage through the API (POST /api/v1/regressions/ID/triage, the token as Bearer): the form's
// fields as the page's triage form; answers the regression as GET does, or a JSON error.
HttpResponse api_triage(PageContext& ctx, std::int64_t id, const Query& form);
HttpResponse regressions_page(PageContext& ctx, const Query& q);
HttpResponse regression_page(PageContext& ctx, std::int64_t id);
HttpResponse alerts_page(PageContext& ctx, const Query& q);
// One commit: the regressions that began at it (state and triage) and each of its runs with what
// moved against history, with confidence; /commit/SHA.
HttpResponse commit_page(PageContext& ctx, std::string_view commit);

// The state-changing actions (POST, token checked by the caller); each answers with a redirect.
HttpResponse accept_action(PageContext& ctx, std::int64_t id, const Query& form);
// Sets a regression's triage state, assignee, bug URL and note (each change kept, by the
// token's name); accepted and invalid end an open regression (storage's RegressionStore::triage).
HttpResponse triage_action(PageContext& ctx, std::int64_t id, const Query& form);
// The triage change a form asks (state, assignee, bug_url, note), by the token's name, now,
// applied to regression `id`: the regression as it then stands, or the HTTP status and sentence
// of what went wrong (400 a field, 404 no such regression, 500 the database).
std::expected<RegressionState, std::pair<unsigned, std::string>> apply_triage(PageContext& ctx, std::int64_t id, const Query& form);
HttpResponse silence_add_action(PageContext& ctx, const Query& form);
HttpResponse silence_expire_action(PageContext& ctx, std::int64_t id);
// A quarantined (or failed) file, the form's `path`, read once more by the daemon.
HttpResponse file_retry_action(PageContext& ctx, const Query& form);
HttpResponse pin_action(PageContext& ctx, std::int64_t run_id, const Query& form);
// The run's report file itself (read-only, as stored at its path), as a download.
HttpResponse report_download(PageContext& ctx, std::int64_t run_id);
HttpResponse unpin_action(PageContext& ctx, std::int64_t run_id);

// The chart of one series with what `q` chooses (metric, entity, kind, from..to), its zoom and pan
// links and legend; `error` set when a parameter is wrong. Shared by the series and regression pages.
std::string series_chart_section(PageContext& ctx, const SeriesEntry& s, const Query& q, std::string& error);

// The run metric a series is charted by when none is asked: a job's step time (jobs have no
// single GPU time), else GPU time.
std::string_view run_metric_of(const SeriesEntry& s);

// Forms of the actions: hidden when the dashboard is read-only.
std::string token_field();

}  // namespace perfwatch::web
