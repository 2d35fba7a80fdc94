#include <fmt/format.h>

#include <algorithm>

#include "core/vocabulary.hpp"
#include "engine/series_index.hpp"
#include "web/page.hpp"
#include "web/pages.hpp"

namespace perfwatch::web {

namespace {

// A commit's runs listed at most: a commit is one CI pipeline, tens of benchmarks.
constexpr std::size_t k_max_commit_runs = 200;

}  // namespace

HttpResponse commit_page(PageContext& ctx, std::string_view commit) {
    if (commit.empty()) return error_response(400, "which commit? (/commit/SHA)");
    auto indexed = ctx.series_index();
    if (!indexed) return error_response(500, indexed.error().to_string());
    const SeriesIndex& index = **indexed;
    // The runs of this commit, by series.
    std::vector<std::pair<const SeriesEntry*, std::int64_t>> runs;
    for (const SeriesEntry* s : index.series())
        for (const SeriesRun& r : s->runs)
            if (r.commit == commit && runs.size() < k_max_commit_runs) runs.emplace_back(s, r.id);
    if (runs.empty()) return error_response(404, fmt::format("no run of commit {}", commit));
    auto regressions = ctx.db.regressions().list(false);
    if (!regressions) return error_response(500, regressions.error().to_string());

    std::string body = fmt::format("<h1>Commit {}</h1>\n<p class=\"note\">{} runs of this commit. Every series and kernel it "
                                   "moved: the regressions whose first bad run is one of them, and each run's history findings.</p>\n",
                                   commit_html(ctx, commit), runs.size());
    // Regressions that began here.
    std::string rows;
    for (const RegressionState& r : *regressions) {
        const std::int64_t first = r.first_bad_run.value_or(r.opened_run);
        if (std::none_of(runs.begin(), runs.end(), [&](const auto& run) { return run.second == first; })) continue;
        rows += fmt::format("<tr data-regression=\"{0}\"><td><a href=\"/regression/{0}\">#{0}</a></td><td class=\"state-{1}\">{1}</td>"
                            "<td>{2}</td><td><a href=\"{3}\">{4}</a></td><td>{5}</td><td>{6} ({7})</td><td>{8}</td></tr>\n",
                            r.id, to_string(r.status), h(std::string(to_string(r.triage))), h(make_url("/series", {{"key", r.series}})),
                            h(series_title(r.series)),
                            r.entity_kind == EntityKind::run ? "the run" : "<code>" + h(r.entity_name) + "</code>", h(r.rule),
                            h(r.metric),
                            r.change_pct ? fmt::format("{:+.1f}%", *r.change_pct) : std::string());
    }
    body += "<h2>Regressions that began at this commit</h2>\n";
    body += rows.empty() ? "<p class=\"note\">None.</p>\n"
                         : "<table id=\"commit-regressions\"><thead><tr><th>#</th><th>State</th><th>Triage</th><th>Series</th>"
                           "<th>On</th><th>Rule (metric)</th><th>Change</th></tr></thead><tbody>\n" + rows + "</tbody></table>\n";
    // Each run's judgements against its history.
    body += "<h2>Its runs</h2>\n<table id=\"commit-runs\"><thead><tr><th>Run</th><th>Series</th><th>Against history</th></tr></thead><tbody>\n";
    for (const auto& [series, run] : runs) {
        auto findings = ctx.db.load_findings(run);
        if (!findings) return error_response(500, findings.error().to_string());
        std::string moved;
        for (const Finding& f : *findings) {
            if (!f.comparison) continue;
            moved += fmt::format("{}{} <code>{}</code> {:+.1f}%{}", moved.empty() ? "" : "<br>", h(std::string(to_string(f.entity_kind))),
                                 h(f.entity_name), f.comparison->change_pct,
                                 f.comparison->confidence_pct ? fmt::format(" ({:.1f}% confidence)", *f.comparison->confidence_pct) : "");
        }
        body += fmt::format("<tr><td><a href=\"/run/{0}\">run {0}</a></td><td><a href=\"{1}\">{2}</a></td><td>{3}</td></tr>\n", run,
                            h(make_url("/series", {{"key", series->key}})), h(series_title(series->key)),
                            moved.empty() ? "nothing moved" : moved);
    }
    body += "</tbody></table>\n";
    return html_response(page(fmt::format("Commit {}", commit), "", body));
}

}  // namespace perfwatch::web
