#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "engine/series_index.hpp"
#include "web/chart.hpp"
#include "web/page.hpp"
#include "web/pages.hpp"

namespace perfwatch::web {

namespace {

constexpr std::size_t k_page_size = 50;
constexpr std::size_t k_spark_runs = 30;
constexpr std::size_t k_search_hits = 50;

// "k=v" filters: a series passes when it has every label with that value and is among `found`
// (the search's series) when a search is made.
bool passes(const SeriesEntry& s, const std::vector<std::pair<std::string, std::string>>& filters,
            const std::optional<SearchHits>& found) {
    for (const auto& [k, v] : filters)
        if (label_value(s.labels, k) != v) return false;
    return !found || std::find(found->series.begin(), found->series.end(), &s) != found->series.end();
}

// The kernels and commits a search found, linked to the kernel's history and the commit's page.
std::string search_section(const PageContext& ctx, const SeriesIndex& index, const SearchHits& found, const std::string& text) {
    std::string out = fmt::format("<div class=\"box\" id=\"search\"><h2>Kernels and commits holding <code>{}</code></h2>", h(text));
    if (found.kernels.empty() && found.commits.empty()) return out + "<p class=\"note\">none</p></div>\n";
    if (!found.kernels.empty()) {
        out += "<ul id=\"search-kernels\">";
        for (const auto& [name, run] : found.kernels) {
            const SeriesEntry* s = index.of_run(run);
            const std::string href = s == nullptr ? fmt::format("/run/{}", run) : make_url("/series", {{"key", s->key}, {"entity", name}});
            out += fmt::format("<li>kernel <a href=\"{}\"><code>{}</code></a> <span class=\"note\">newest in <a href=\"/run/{}\">run {}</a>{}</span></li>",
                               h(href), h(name), run, run, s == nullptr ? "" : ", " + h(series_title(s->key)));
        }
        out += "</ul>";
        if (found.kernels.size() == k_search_hits) out += fmt::format("<p class=\"note\">the first {} kernels by name</p>", k_search_hits);
    }
    if (!found.commits.empty()) {
        out += "<ul id=\"search-commits\">";
        for (const auto& [commit, run] : found.commits)
            out += fmt::format("<li>commit <a class=\"mono\" href=\"/commit/{}\">{}</a> <span class=\"note\">newest run {}</span>{}</li>",
                               h(url_encode(commit)), h(commit), run,
                               ctx.commit_url.empty() ? "" : " &middot; on the code host: " + commit_html(ctx, commit));
        out += "</ul>";
    }
    return out + "</div>\n";
}

std::size_t page_of(const Query& q, std::size_t pages) {
    const auto p = q.id("page");
    return std::clamp<std::size_t>(p ? static_cast<std::size_t>(*p) : 1, 1, std::max<std::size_t>(pages, 1));
}

}  // namespace

HttpResponse overview_page(PageContext& ctx, const Query& q) {
    auto indexed = ctx.series_index();
    if (!indexed) return error_response(500, indexed.error().to_string());
    const SeriesIndex& index = **indexed;
    auto open = ctx.db.browse().open_regressions_by_series();
    if (!open) return error_response(500, open.error().to_string());

    std::vector<std::pair<std::string, std::string>> filters;
    for (const std::string& f : q.all("label")) {
        const auto eq = f.find('=');
        if (eq == std::string::npos) return error_response(400, fmt::format("label filter '{}' is not key=value", f));
        filters.emplace_back(f.substr(0, eq), f.substr(eq + 1));
    }
    const std::string text = q.get("q");
    // A search (q) lists the series whose title or key holds it, and the kernels and commits too.
    std::optional<SearchHits> found;
    if (!text.empty()) {
        auto hits = search(ctx, text, k_search_hits);
        if (!hits) return error_response(500, hits.error().to_string());
        found = std::move(*hits);
    }
    std::vector<const SeriesEntry*> shown;
    for (const SeriesEntry* s : index.series())
        if (passes(*s, filters, found)) shown.push_back(s);
    // A distributed job is one row: the series of its ranks (their newest run a rank of a stored
    // job) are folded into the job's own series unless ?ranks=1 asks for them.
    std::size_t folded = 0;
    if (q.get("ranks") != "1") {
        std::vector<std::int64_t> newest;
        for (const SeriesEntry* s : shown) newest.push_back(s->runs.back().id);
        auto ranks = ctx.db.browse().job_ranks_among(newest);
        if (!ranks) return error_response(500, ranks.error().to_string());
        folded = std::erase_if(shown, [&](const SeriesEntry* s) { return ranks->contains(s->runs.back().id); });
    }

    // Default: series with open regressions first (most first), then the latest run first.
    const std::string sort = q.has("sort") ? q.get("sort") : "-regressions";
    const bool desc = sort.starts_with('-');
    const std::string key = desc ? sort.substr(1) : sort;
    auto open_of = [&](const SeriesEntry* s) { auto it = open->find(s->key); return it == open->end() ? 0 : it->second; };
    std::stable_sort(shown.begin(), shown.end(), [&](const SeriesEntry* a, const SeriesEntry* b) {
        auto cmp = [&]() -> int {
            if (key == "runs") return a->runs.size() < b->runs.size() ? -1 : a->runs.size() > b->runs.size();
            if (key == "regressions" && open_of(a) != open_of(b)) return open_of(a) < open_of(b) ? -1 : 1;
            if (key == "regressions") return a->runs.back().id < b->runs.back().id ? -1 : a->runs.back().id > b->runs.back().id;
            if (key == "latest") return a->runs.back().id < b->runs.back().id ? -1 : a->runs.back().id > b->runs.back().id;
            return a->key < b->key ? -1 : a->key > b->key;
        }();
        return desc ? cmp > 0 : cmp < 0;
    });

    const std::size_t pages = (shown.size() + k_page_size - 1) / k_page_size;
    const std::size_t page_no = page_of(q, pages);
    const std::size_t from = (page_no - 1) * k_page_size, to = std::min(shown.size(), from + k_page_size);

    // Three reads for the whole page: the latest runs' findings, and each series' chart metric
    // (GPU time, a job's step time) over its recent runs.
    std::vector<std::int64_t> latest;
    std::map<std::string_view, std::vector<std::int64_t>> spark_runs;
    for (std::size_t i = from; i < to; ++i) {
        latest.push_back(shown[i]->runs.back().id);
        const auto& runs = shown[i]->runs;
        for (std::size_t r = runs.size() > k_spark_runs ? runs.size() - k_spark_runs : 0; r < runs.size(); ++r)
            spark_runs[run_metric_of(*shown[i])].push_back(runs[r].id);
    }
    auto counts = ctx.db.browse().finding_counts(latest);
    if (!counts) return error_response(500, counts.error().to_string());
    // Where each series' open regressions begin: their runs are marked on its sparkline.
    auto open_list = ctx.db.regressions().list(true);
    if (!open_list) return error_response(500, open_list.error().to_string());
    std::map<std::string, std::int64_t> first_bad;
    for (const RegressionState& r : *open_list) {
        const std::int64_t at = r.first_bad_run.value_or(r.opened_run);
        auto [it, fresh] = first_bad.try_emplace(r.series, at);
        if (!fresh) it->second = std::min(it->second, at);
    }
    std::map<std::string_view, std::map<std::int64_t, RunValue>> spark_values;
    for (const auto& [metric, ids] : spark_runs) {
        auto values = ctx.db.browse().metric_values(EntityKind::run, std::nullopt, std::string(metric), ids);
        if (!values) return error_response(500, values.error().to_string());
        spark_values[metric] = std::move(*values);
    }

    std::vector<std::pair<std::string, std::string>> params;
    for (const std::string& f : q.all("label")) params.emplace_back("label", f);
    if (!text.empty()) params.emplace_back("q", text);
    if (q.has("sort")) params.emplace_back("sort", sort);

    std::string body = fmt::format("<h1>Series</h1>\n<p class=\"note\">{} series, {} runs in {}.{}</p>\n",
                                   index.series().size(), index.runs(), h(ctx.db.name()),
                                   folded == 0 ? std::string()
                                               : fmt::format(" {} series of distributed jobs' ranks are shown as their jobs "
                                                             "(<a id=\"show-ranks\" href=\"/?ranks=1\">show them</a>).",
                                                             folded));
    body += "<form class=\"filters\" method=\"get\" action=\"/\">";
    for (const auto& [k, v] : filters)
        body += fmt::format("<input type=\"hidden\" name=\"label\" value=\"{}\"><span class=\"mono\">{}={}</span>",
                            h(k + "=" + v), h(k), h(v));
    body += fmt::format("<input name=\"label\" placeholder=\"label=value\" size=\"18\">"
                        "<input name=\"q\" placeholder=\"search series, kernels, commits\" value=\"{}\" size=\"28\">"
                        "<button type=\"submit\">Search</button>{}</form>\n",
                        h(text), filters.empty() && text.empty() ? "" : " <a href=\"/\">clear</a>");
    if (found) body += search_section(ctx, index, *found, text);
    body += fmt::format("<table id=\"series-list\"><thead><tr><th>{}</th><th>Format</th><th class=\"num\">{}</th>"
                        "<th>{}</th><th class=\"num\">{}</th><th>Findings (latest run)</th><th>GPU time, last {} runs</th>"
                        "</tr></thead><tbody>\n",
                        sort_header("Series", "name", "/", params, sort), sort_header("Runs", "runs", "/", params, sort),
                        sort_header("Latest run", "latest", "/", params, sort),
                        sort_header("Open regressions", "regressions", "/", params, sort), k_spark_runs);
    for (std::size_t i = from; i < to; ++i) {
        const SeriesEntry& s = *shown[i];
        const SeriesRun& last = s.runs.back();
        std::string findings = "none";
        if (auto it = counts->find(last.id); it != counts->end()) {
            const auto& c = it->second;
            // A severity is coloured only when it has findings: "0 error" is not an alarm.
            const auto count = [](auto n, std::string_view severity) {
                return n == 0 ? fmt::format("0 {}", severity) : fmt::format("<span class=\"sev-{0}\">{1} {0}</span>", severity, n);
            };
            findings = fmt::format("{}, {}, {}", count(c[2], "error"), count(c[1], "warning"), count(c[0], "info"));
        }
        std::vector<double> spark;
        std::vector<bool> marked;
        const auto& values = spark_values[run_metric_of(s)];
        const auto bad_from = first_bad.find(s.key);
        for (std::size_t r = s.runs.size() > k_spark_runs ? s.runs.size() - k_spark_runs : 0; r < s.runs.size(); ++r)
            if (auto it = values.find(s.runs[r].id); it != values.end()) {
                spark.push_back(it->second.value);
                marked.push_back(bad_from != first_bad.end() && s.runs[r].id >= bad_from->second);
            }
        const std::int64_t regressions = open_of(&s);
        body += fmt::format(
            "<tr data-series=\"{}\"><td><a href=\"{}\">{}</a></td><td>{}</td><td class=\"num\">{}</td>"
            "<td><a href=\"/run/{}\">run {}</a>{} <span class=\"note\">{}</span></td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>\n",
            h(s.key), h(make_url("/series", {{"key", s.key}})), h(series_title(s.key)), h(s.format), s.runs.size(),
            last.id, last.id, last.commit.empty() ? "" : " " + h(last.commit), h(last.ingested_at),
            regressions == 0 ? "0"
                             : fmt::format("<a class=\"state-open\" href=\"{}\">{}</a>",
                                           h(make_url("/regressions", {{"series", s.key}})), regressions),
            findings, sparkline(spark, run_metric_of(s), marked));
    }
    body += "</tbody></table>\n" + pager("/", params, page_no, pages);
    return html_response(page("Overview", "Overview", body));
}

}  // namespace perfwatch::web
