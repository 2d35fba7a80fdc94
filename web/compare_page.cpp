#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>

#include "core/vocabulary.hpp"
#include "engine/range_compare.hpp"
#include "engine/series_index.hpp"
#include "web/page.hpp"
#include "web/pages.hpp"

namespace perfwatch::web {

namespace {

// Kernels compared: the top ones by GPU time of each side's newest run.
constexpr std::size_t k_compared_kernels = 25;
// A side without a range takes this many of its series' newest runs.
constexpr std::size_t k_default_side_runs = 10;

// At most this many series keys are offered by the form's picker.
constexpr std::size_t k_picked_series = 2000;

// One side of a range comparison: the runs of a series between two run ids and two dates.
struct Side {
    const SeriesEntry* series = nullptr;
    std::vector<std::int64_t> runs;
};

// A UTC date or time as runs' ingestion times are written ("2026-12-01", "2026-12-01T10:00:00Z"
// or a prefix of it down to the year).
bool is_utc_time(std::string_view t) {
    constexpr std::string_view shape = "0000-00-00T00:00:00Z";
    if (t.size() < 4 || t.size() > shape.size()) return false;
    for (std::size_t i = 0; i < t.size(); ++i)
        if (shape[i] == '0' ? !std::isdigit(static_cast<unsigned char>(t[i])) : t[i] != shape[i]) return false;
    return true;
}

Result<Side> side_of(const SeriesIndex& index, const Query& q, const std::string& prefix) {
    Side side;
    const std::string key = q.get(prefix + "_series");
    side.series = index.find(key);
    if (side.series == nullptr) return fail(prefix + "_series", 0, "no series '" + key + "'");
    const auto from = q.id(prefix + "_from"), to = q.id(prefix + "_to");
    if ((q.has(prefix + "_from") && !q.get(prefix + "_from").empty() && !from) ||
        (q.has(prefix + "_to") && !q.get(prefix + "_to").empty() && !to))
        return fail(prefix, 0, prefix + "_from and " + prefix + "_to must be run ids");
    // Dates: since is inclusive from its start, until inclusive to its end ("2026-12-01" holds the whole day).
    const std::string since = q.get(prefix + "_since"), until = q.get(prefix + "_until");
    if ((!since.empty() && !is_utc_time(since)) || (!until.empty() && !is_utc_time(until)))
        return fail(prefix, 0, prefix + "_since and " + prefix + "_until must be UTC dates or times (2026-12-01, 2026-12-01T10:00:00Z)");
    for (const SeriesRun& r : side.series->runs) {
        if ((from && r.id < *from) || (to && r.id > *to)) continue;
        if (!since.empty() && r.ingested_at < since) continue;
        if (!until.empty() && r.ingested_at.substr(0, until.size()) > until) continue;
        side.runs.push_back(r.id);
    }
    if (!from && !to && since.empty() && until.empty() && side.runs.size() > k_default_side_runs)
        side.runs.erase(side.runs.begin(), side.runs.end() - static_cast<std::ptrdiff_t>(k_default_side_runs));
    return side;
}

// Each run's value of the side, in run order.
std::vector<double> values_of(const std::vector<std::int64_t>& runs, const std::map<std::int64_t, RunValue>& values) {
    std::vector<double> out;
    for (const std::int64_t id : runs)
        if (auto it = values.find(id); it != values.end()) out.push_back(it->second.value);
    return out;
}

struct RangeReport {
    Side a, b;
    std::string run_metric, kernel_metric;
    RangeComparison run;
    std::vector<RangeComparison> kernels;  // changed first (largest change), then the rest
};

Result<RangeReport> range_report(PageContext& ctx, const Query& q) {
    auto indexed = ctx.series_index();
    if (!indexed) return std::unexpected(indexed.error());
    auto a = side_of(**indexed, q, "a");
    if (!a) return std::unexpected(a.error());
    auto b = side_of(**indexed, q, "b");
    if (!b) return std::unexpected(b.error());
    RangeReport r{*a, *b, q.has("metric") ? q.get("metric") : std::string(run_metric_of(*a->series)),
                  q.has("kernel_metric") ? q.get("kernel_metric") : "duration", {}, {}};
    std::vector<std::int64_t> all = r.a.runs;
    all.insert(all.end(), r.b.runs.begin(), r.b.runs.end());
    auto run_values = ctx.db.browse().metric_values(EntityKind::run, std::nullopt, r.run_metric, all);
    if (!run_values) return std::unexpected(run_values.error());
    r.run = compare_ranges({"", values_of(r.a.runs, *run_values), values_of(r.b.runs, *run_values)});

    std::vector<std::string> names;
    std::set<std::string> seen;
    for (const auto* side : {&r.b, &r.a}) {
        if (side->runs.empty()) continue;
        auto top = ctx.db.browse().top_kernels(side->runs.back(), k_compared_kernels);
        if (!top) return std::unexpected(top.error());
        for (const std::string& k : *top)
            if (seen.insert(k).second) names.push_back(k);
    }
    for (const std::string& name : names) {
        auto values = ctx.db.browse().metric_values(EntityKind::kernel, name, r.kernel_metric, all);
        if (!values) return std::unexpected(values.error());
        r.kernels.push_back(compare_ranges({name, values_of(r.a.runs, *values), values_of(r.b.runs, *values)}));
    }
    std::stable_sort(r.kernels.begin(), r.kernels.end(), [](const RangeComparison& x, const RangeComparison& y) {
        const bool cx = x.verdict == RangeComparison::Verdict::slower || x.verdict == RangeComparison::Verdict::faster;
        const bool cy = y.verdict == RangeComparison::Verdict::slower || y.verdict == RangeComparison::Verdict::faster;
        if (cx != cy) return cx;
        return std::abs(x.change_pct) > std::abs(y.change_pct);
    });
    return r;
}

std::string_view verdict_class(RangeComparison::Verdict v) {
    switch (v) {
        case RangeComparison::Verdict::slower: return "slower";
        case RangeComparison::Verdict::faster: return "faster";
        case RangeComparison::Verdict::unchanged: return "unchanged";
        case RangeComparison::Verdict::too_few_runs: return "few";
        case RangeComparison::Verdict::only_in_a:
        case RangeComparison::Verdict::only_in_b: return "only";
    }
    return "unchanged";
}

// The parameters of a range comparison, as links repeat them.
std::vector<std::pair<std::string, std::string>> range_params(const Query& q) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const char* key : {"a_series", "a_from", "a_to", "a_since", "a_until", "b_series", "b_from", "b_to", "b_since", "b_until",
                            "metric", "kernel_metric"})
        if (q.has(key)) out.emplace_back(key, q.get(key));
    return out;
}

std::string pct(const std::optional<double>& v) { return v ? fmt::format("{:.1f}%", *v) : std::string(); }

std::string row_html(const RangeComparison& c, const std::string& metric, const std::string& entity) {
    const bool both = c.runs_a > 0 && c.runs_b > 0;
    return fmt::format("<tr data-entity=\"{}\"><td>{}</td><td class=\"verdict-{}\">{}</td><td class=\"num\">{} / {}</td>"
                       "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                       "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                       h(c.name), entity, verdict_class(c.verdict), h(std::string(to_string(c.verdict))), c.runs_a, c.runs_b, c.runs_a > 0 ? h(format_metric(metric, c.median_a)) : "",
                       c.runs_b > 0 ? h(format_metric(metric, c.median_b)) : "", both ? fmt::format("{:+.1f}%", c.change_pct) : "",
                       c.confidence ? fmt::format("{:.1f}%", 100 * *c.confidence) : "", pct(c.noise_pct), pct(c.detectable_pct));
}

nlohmann::json row_json(const RangeComparison& c) {
    auto optional = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
    return {{"name", c.name},
            {"verdict", std::string(to_string(c.verdict))},
            {"runs_a", c.runs_a},
            {"runs_b", c.runs_b},
            {"median_a", c.median_a},
            {"median_b", c.median_b},
            {"change_pct", c.change_pct},
            {"confidence", optional(c.confidence)},
            {"noise_pct", optional(c.noise_pct)},
            {"detectable_pct", optional(c.detectable_pct)}};
}

std::string side_text(const PageContext& ctx, const Side& s) {
    if (s.runs.empty()) return "no runs";
    const auto commit = [&](std::int64_t run) {
        const std::string& c = s.series->runs[s.series->position_from(run)].commit;
        return c.empty() ? std::string() : " (commit " + commit_html(ctx, c) + ")";
    };
    return fmt::format("{} runs, <a href=\"/run/{}\">run {}</a>{} .. <a href=\"/run/{}\">run {}</a>{}", s.runs.size(), s.runs.front(),
                       s.runs.front(), commit(s.runs.front()), s.runs.back(), s.runs.back(), commit(s.runs.back()));
}

// The form: for each side a series (picked from the stored ones), a run id range and a date range.
Result<std::string> range_form(PageContext& ctx, const Query& q) {
    auto indexed = ctx.series_index();
    if (!indexed) return std::unexpected(indexed.error());
    std::string out = "<form class=\"filters\" id=\"range-form\" method=\"get\" action=\"/compare\">";
    for (const char* side : {"a", "b"}) {
        const std::string p(side);
        out += fmt::format("<span>{0}: series <input name=\"{1}_series\" list=\"series-keys\" size=\"40\" value=\"{2}\"> runs "
                           "<input name=\"{1}_from\" size=\"6\" value=\"{3}\"> .. <input name=\"{1}_to\" size=\"6\" value=\"{4}\"> "
                           "dates <input name=\"{1}_since\" size=\"10\" placeholder=\"2026-12-01\" value=\"{5}\"> .. "
                           "<input name=\"{1}_until\" size=\"10\" value=\"{6}\"></span>",
                           p == "a" ? "A (before)" : "B (after)", p, h(q.get(p + "_series")), h(q.get(p + "_from")), h(q.get(p + "_to")),
                           h(q.get(p + "_since")), h(q.get(p + "_until")));
    }
    out += "<button type=\"submit\">Compare</button><datalist id=\"series-keys\">";
    std::size_t offered = 0;
    for (const SeriesEntry* s : (*indexed)->series()) {
        if (offered++ == k_picked_series) break;
        out += fmt::format("<option value=\"{}\">{}</option>", h(s->key), h(series_title(s->key)));
    }
    return out + "</datalist></form>\n";
}

}  // namespace

HttpResponse range_compare_page(PageContext& ctx, const Query& q) {
    auto form = range_form(ctx, q);
    if (!form) return error_response(500, form.error().to_string());
    std::string body = "<h1>Compare runs against runs</h1>\n" + *form;
    if (q.get("a_series").empty() && q.get("b_series").empty()) {
        body += "<p class=\"note\">Pick a series for each side (the same one twice compares two ranges of it; a branch's "
                "series against main's compares the branch), and runs or dates; without them a side takes its newest 10 runs.</p>\n";
        return html_response(page("Compare", "Compare", body));
    }
    auto r = range_report(ctx, q);
    if (!r) return error_response(r.error().file.ends_with("_series") ? 404 : 400, r.error().message);
    body += fmt::format("<p>A: <a href=\"{}\">{}</a>, {}<br>B: <a href=\"{}\">{}</a>, {}</p>\n",
                        h(make_url("/series", {{"key", r->a.series->key}})), h(series_title(r->a.series->key)), side_text(ctx, r->a),
                        h(make_url("/series", {{"key", r->b.series->key}})), h(series_title(r->b.series->key)), side_text(ctx, r->b));
    body += fmt::format("<p class=\"note\">Each run's value against each run's value: the change is the Hodges-Lehmann shift of B "
                        "against A in % of A's median, the confidence a two-sided Mann-Whitney test of the per-run values (the "
                        "engine's test), the noise the run-to-run spread (robust sigma) and the smallest change these runs could "
                        "tell at 99%. A change needs 99% confidence and 1%; fewer than 3 runs a side cannot tell. Kernels: {} "
                        "(per launch), the top {} of each side's newest run.</p>\n",
                        h(r->kernel_metric), k_compared_kernels);
    const std::string head = "<thead><tr><th>Entity</th><th>Verdict</th><th class=\"num\">Runs A / B</th><th class=\"num\">Median A</th>"
                             "<th class=\"num\">Median B</th><th class=\"num\">Change</th><th class=\"num\">Confidence</th>"
                             "<th class=\"num\">Noise</th><th class=\"num\">Smallest visible</th></tr></thead>";
    body += fmt::format("<h2>The run: {}</h2>\n<table id=\"range-run\">{}<tbody>{}</tbody></table>\n", h(r->run_metric), head,
                        row_html(r->run, r->run_metric, "the run"));
    body += fmt::format("<h2>Kernels: {}</h2>\n<table id=\"range-kernels\">{}<tbody>", h(r->kernel_metric), head);
    for (const RangeComparison& c : r->kernels) body += row_html(c, r->kernel_metric, "<code>" + h(c.name) + "</code>");
    body += "</tbody></table>\n";
    body += fmt::format("<p><a href=\"{}\">as JSON</a></p>\n", h(make_url("/api/v1/compare", range_params(q))));
    return html_response(page("Compare", "Compare", body));
}

HttpResponse range_compare_api(PageContext& ctx, const Query& q) {
    auto r = range_report(ctx, q);
    if (!r) return json_error(r.error().file.ends_with("_series") ? 404 : 400, r.error().message);
    nlohmann::json kernels = nlohmann::json::array();
    for (const RangeComparison& c : r->kernels) kernels.push_back(row_json(c));
    nlohmann::json run = row_json(r->run);
    run["metric"] = r->run_metric;
    const nlohmann::json doc = {{"a", {{"series", r->a.series->key}, {"runs", r->a.runs}}},
                                {"b", {{"series", r->b.series->key}, {"runs", r->b.runs}}},
                                {"run", run},
                                {"kernel_metric", r->kernel_metric},
                                {"kernels", kernels}};
    return json_response(doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace perfwatch::web
