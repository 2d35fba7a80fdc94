#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/vocabulary.hpp"
#include "engine/series_index.hpp"
#include "engine/stats.hpp"
#include "web/chart.hpp"
#include "web/page.hpp"
#include "web/pages.hpp"

namespace perfwatch::web {

namespace {

// Change points are looked for on at most this many values (longer windows: bucket medians).
constexpr std::size_t k_change_point_values = 300;
constexpr std::size_t k_top_kernels = 12;

constexpr const char* k_run_metrics[] = {"gpu_time", "span", "idle_pct", "launches", "kernels", "memory_time",
                                         "gpu_time_comm", "gpu_time_compute", "comm_exposed_time", "job_step_time"};
constexpr const char* k_kernel_metrics[] = {"duration", "duration_total", "launches", "duration_median", "duration_max",
                                            "sm_throughput", "dram_throughput", "sm_frequency"};

// Change points of `values`, as indices into them.
std::vector<std::size_t> changes_of(const std::vector<double>& values) {
    if (values.size() < 6) return {};
    if (values.size() <= k_change_point_values) return change_points(values);
    const std::size_t buckets = k_change_point_values;
    std::vector<double> medians;
    std::vector<std::size_t> starts;
    for (std::size_t b = 0; b < buckets; ++b) {
        const std::size_t from = values.size() * b / buckets, to = values.size() * (b + 1) / buckets;
        if (from >= to) continue;
        medians.push_back(median(std::vector<double>(values.begin() + static_cast<std::ptrdiff_t>(from),
                                                     values.begin() + static_cast<std::ptrdiff_t>(to))));
        starts.push_back(from);
    }
    std::vector<std::size_t> out;
    for (const std::size_t c : change_points(medians)) out.push_back(starts[c]);
    return out;
}

}  // namespace

std::string_view run_metric_of(const SeriesEntry& s) { return s.format == "job" ? "job_step_time" : "gpu_time"; }

std::string series_chart_section(PageContext& ctx, const SeriesEntry& s, const Query& q, std::string& error) {
    const std::string entity = q.get("entity");
    EntityKind kind = entity.empty() ? EntityKind::run : EntityKind::kernel;
    if (q.has("kind")) {
        const auto k = entity_kind_from_string(q.get("kind"));
        if (!k) {
            error = fmt::format("'{}' is not an entity kind", q.get("kind"));
            return {};
        }
        kind = *k;
    }
    const std::string metric = q.has("metric") ? q.get("metric") : std::string(kind == EntityKind::run ? run_metric_of(s) : "duration");

    // The window: [from, to] run ids, default the whole series.
    std::size_t lo = 0, hi = s.runs.size();
    if (auto from = q.id("from")) lo = s.position_from(*from);
    if (auto to = q.id("to")) hi = s.position_from(*to + 1);
    if (lo >= hi) {
        lo = 0;
        hi = s.runs.size();
    }
    // Values of the whole series (bands need the runs before the window), one statement per 500 runs.
    std::vector<std::int64_t> ids;
    for (const SeriesRun& r : s.runs) ids.push_back(r.id);
    auto values = ctx.db.browse().metric_values(kind, entity.empty() ? std::nullopt : std::optional(entity), metric, ids);
    if (!values) {
        error = values.error().to_string();
        return {};
    }
    auto regressions = ctx.db.regressions().of_series(s.key);
    if (!regressions) {
        error = regressions.error().to_string();
        return {};
    }
    std::vector<std::size_t> at;  // series positions with a value
    std::vector<double> series_values;
    for (std::size_t i = 0; i < s.runs.size(); ++i)
        if (auto it = values->find(s.runs[i].id); it != values->end()) {
            at.push_back(i);
            series_values.push_back(it->second.value);
        }
    // A regression's bad runs are no baseline: an open one's from its first bad run on, a resolved
    // one's up to its last bad run (as history judges them).
    std::vector<const RegressionState*> relevant;
    for (const RegressionState& r : *regressions)
        if (r.entity_kind == kind && r.metric == metric && (kind == EntityKind::run || r.entity_name == entity))
            relevant.push_back(&r);
    std::vector<bool> usable(at.size(), true);
    for (std::size_t k = 0; k < at.size(); ++k) {
        const std::int64_t id = s.runs[at[k]].id;
        for (const RegressionState* r : relevant) {
            const std::int64_t first = r->first_bad_run.value_or(r->opened_run);
            if (r->status == RegressionStatus::open && id >= first) usable[k] = false;
            if (r->status == RegressionStatus::resolved && id >= first && id <= r->last_bad_run) usable[k] = false;
        }
    }
    const auto bands = rolling_band(series_values, usable);

    ChartInput chart;
    chart.metric = metric;
    std::vector<std::size_t> window;  // indices into at/series_values inside [lo, hi)
    for (std::size_t k = 0; k < at.size(); ++k)
        if (at[k] >= lo && at[k] < hi) window.push_back(k);
    // A kernel's duration is its mean per launch; its regressions judge each run's level, the
    // median of the launches' stored samples (3 or more), drawn beside it where the runs have them.
    std::map<std::int64_t, std::vector<double>> samples;
    if (kind != EntityKind::run && metric == "duration") {
        std::vector<std::int64_t> shown;
        for (const std::size_t k : window) shown.push_back(s.runs[at[k]].id);
        auto read = ctx.db.browse().samples(kind, entity, "duration", shown);
        if (!read) {
            error = read.error().to_string();
            return {};
        }
        samples = std::move(*read);
        if (!samples.empty()) chart.second_label = "median per launch";
    }
    for (const std::size_t k : window) {
        const SeriesRun& r = s.runs[at[k]];
        ChartPoint p{r.id, series_values[k], values->at(r.id).launches, r.commit, bands[k], false, std::nullopt};
        if (auto m = samples.find(r.id); m != samples.end() && m->second.size() >= 3) p.second = median(m->second);
        chart.points.push_back(std::move(p));
    }
    auto point_of = [&](std::int64_t run) -> std::optional<std::size_t> {
        auto it = std::lower_bound(chart.points.begin(), chart.points.end(), run,
                                   [](const ChartPoint& p, std::int64_t v) { return p.run < v; });
        if (it == chart.points.end()) return chart.points.empty() ? std::nullopt : std::optional(chart.points.size() - 1);
        return static_cast<std::size_t>(it - chart.points.begin());
    };
    for (const RegressionState* rp : relevant) {
        const RegressionState& r = *rp;
        const std::int64_t first = r.first_bad_run.value_or(r.opened_run);
        const std::int64_t last = r.last_bad_run;
        if (chart.points.empty() || last < chart.points.front().run || first > chart.points.back().run) continue;
        const auto a = point_of(first), b = point_of(last);
        if (!a || !b) continue;
        const std::size_t to = chart.points[*b].run > last && *b > 0 ? *b - 1 : *b;
        // Accepted (the new level) and invalid (a false alarm) runs are not bad runs.
        const bool bad = r.status == RegressionStatus::open || r.status == RegressionStatus::resolved;
        for (std::size_t i = *a; i <= to && i < chart.points.size(); ++i) chart.points[i].bad = chart.points[i].bad || bad;
        chart.spans.push_back({*a, std::max(*a, to), first, last, "reg-" + std::string(to_string(r.status)),
                               fmt::format("regression #{} ({}): {} {}{}", r.id, to_string(r.status), r.rule, metric,
                                           r.change_pct ? fmt::format(" {:+.1f}%", *r.change_pct) : ""),
                               fmt::format("/regression/{}", r.id)});
        // Where it ended: back inside the band, or accepted.
        if (r.resolved_run && *r.resolved_run >= chart.points.front().run && *r.resolved_run <= chart.points.back().run)
            if (const auto end = point_of(*r.resolved_run))
                chart.marks.push_back({*end, "end", fmt::format("regression #{} {} at run {}{}", r.id, r.resolution, *r.resolved_run,
                                                                 r.comment.empty() ? "" : ": " + r.comment)});
    }
    std::vector<double> window_values;
    for (const ChartPoint& p : chart.points) window_values.push_back(p.value);
    for (const std::size_t c : changes_of(window_values))
        chart.marks.push_back({c, "cp", fmt::format("change point before run {} (level {} -> {})", chart.points[c].run,
                                                     format_metric(metric, median(std::vector<double>(window_values.begin(), window_values.begin() + static_cast<std::ptrdiff_t>(c)))),
                                                     format_metric(metric, median(std::vector<double>(window_values.begin() + static_cast<std::ptrdiff_t>(c), window_values.end()))))});
    for (std::size_t i = 1; i < window.size(); ++i) {
        const SeriesRun& before = s.runs[at[window[i - 1]]];
        const SeriesRun& now = s.runs[at[window[i]]];
        if (before.environment != now.environment)
            chart.marks.push_back({i, "env", fmt::format("environment changed at run {}: {} -> {}", now.id,
                                                         before.environment.empty() ? "(none)" : before.environment,
                                                         now.environment.empty() ? "(none)" : now.environment)});
    }

    // Zoom and pan keep the other parameters.
    std::vector<std::pair<std::string, std::string>> base{{"key", s.key}, {"entity", entity}, {"metric", metric}};
    if (q.has("kind")) base.emplace_back("kind", q.get("kind"));
    auto window_url = [&](std::size_t a, std::size_t b) {
        auto p = base;
        p.emplace_back("from", std::to_string(s.runs[a].id));
        p.emplace_back("to", std::to_string(s.runs[b - 1].id));
        return h(make_url("/series", p));
    };
    const std::size_t width = hi - lo, n = s.runs.size();
    std::string nav = "<div class=\"pager\" id=\"zoom\">";
    if (width >= 8) nav += fmt::format("<a href=\"{}\">zoom in</a>", window_url(lo + width / 4, hi - width / 4));
    if (width < n) {
        const std::size_t a = lo > width / 2 ? lo - width / 2 : 0, b = std::min(n, hi + width / 2);
        nav += fmt::format("<a href=\"{}\">zoom out</a>", window_url(a, b));
        if (lo > 0) nav += fmt::format("<a href=\"{}\">&larr; earlier</a>", window_url(lo - std::min(lo, width / 2), hi - std::min(lo, width / 2)));
        if (hi < n) nav += fmt::format("<a href=\"{}\">later &rarr;</a>", window_url(lo + std::min(n - hi, width / 2), hi + std::min(n - hi, width / 2)));
        nav += fmt::format("<a href=\"{}\">whole series</a>", h(make_url("/series", base)));
    }
    nav += fmt::format("<span class=\"note\">runs {} to {} ({} of {} runs, {} with this metric{})</span></div>\n",
                       s.runs[lo].id, s.runs[hi - 1].id, width, n, chart.points.size(),
                       chart.points.size() > k_max_drawn_points ? fmt::format("; drawn as {} bucket extremes", k_max_drawn_points) : "");
    // Which statistic the points are: a kernel's stored duration is its mean per launch, while
    // its regressions judge the median per launch of the samples (both said, as they differ).
    const std::string statistic =
        kind != EntityKind::run && metric == "duration"
            ? std::string("<span class=\"statistic\">points and solid line: each run's <b>mean</b> per launch; a regression's change is "
                          "judged on the <b>median</b> per launch of the launches' samples (the regression page's numbers)") +
                  (chart.second_label.empty() ? "" : "; dashed orange: each run's median per launch") + "</span>"
            : "";
    const std::string legend =
        "<div class=\"legend\">" + statistic + "<span>shaded: baseline band (median &plusmn; 3 robust &sigma; of the 10 runs before)</span>"
        "<span>red spans: open regressions, green: resolved, violet: accepted, grey: invalid</span>"
        "<span>dashed violet: change point; dotted: environment change; green: where a regression ended</span>"
        "<span>hover a point for its commit, value and launches; click to open the run</span></div>\n";
    return nav + series_chart(chart) + legend;
}

HttpResponse series_page(PageContext& ctx, const Query& q) {
    const std::string key = q.get("key");
    if (key.empty()) return error_response(400, "which series? (key=...)");
    auto indexed = ctx.series_index();
    if (!indexed) return error_response(500, indexed.error().to_string());
    const SeriesIndex& index = **indexed;
    const SeriesEntry* s = index.find(key);
    if (s == nullptr) return error_response(404, "no series " + key);
    std::string error;
    const std::string chart = series_chart_section(ctx, *s, q, error);
    if (!error.empty()) return error_response(400, error);

    auto top = ctx.db.browse().top_kernels(s->runs.back().id, k_top_kernels);
    if (!top) return error_response(500, top.error().to_string());
    const std::string entity = q.get("entity");
    const std::string metric = q.has("metric") ? q.get("metric") : std::string(entity.empty() ? run_metric_of(*s) : "duration");

    std::string body = fmt::format("<h1>{}</h1>\n<p class=\"note mono\">series {}</p>\n", h(series_title(s->key)), h(s->key));
    body += fmt::format("<h2>{} of {}</h2>\n", h(metric), entity.empty() ? "the run" : "kernel <code>" + h(entity) + "</code>");
    body += "<form class=\"filters\" method=\"get\" action=\"/series\">";
    body += fmt::format("<input type=\"hidden\" name=\"key\" value=\"{}\"><input type=\"hidden\" name=\"entity\" value=\"{}\">",
                        h(s->key), h(entity));
    body += "<select name=\"metric\">";
    const auto& choices = entity.empty() ? std::vector<std::string>(std::begin(k_run_metrics), std::end(k_run_metrics))
                                         : std::vector<std::string>(std::begin(k_kernel_metrics), std::end(k_kernel_metrics));
    for (const std::string& m : choices)
        body += fmt::format("<option value=\"{}\"{}>{}</option>", h(m), m == metric ? " selected" : "", h(m));
    if (std::find(choices.begin(), choices.end(), metric) == choices.end())
        body += fmt::format("<option value=\"{0}\" selected>{0}</option>", h(metric));
    body += "</select><button type=\"submit\">Show</button></form>\n";
    body += chart;
    body += "<h2>Kernels of the latest run (by GPU time)</h2>\n<ul id=\"top-kernels\">";
    body += fmt::format("<li><a href=\"{}\">the whole run</a></li>", h(make_url("/series", {{"key", s->key}})));
    for (const std::string& k : *top)
        body += fmt::format("<li><a href=\"{}\"><code>{}</code></a></li>", h(make_url("/series", {{"key", s->key}, {"entity", k}})), h(k));
    body += "</ul>\n";
    body += fmt::format("<p><a href=\"{}\">regressions of this series</a> &middot; <a href=\"/run/{}\">latest run</a></p>\n",
                        h(make_url("/regressions", {{"series", s->key}, {"status", "all"}})), s->runs.back().id);
    return html_response(page(series_title(s->key), "Overview", body));
}

}  // namespace perfwatch::web
