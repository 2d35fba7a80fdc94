#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "core/file.hpp"
#include "core/vocabulary.hpp"
#include "engine/diff.hpp"
#include "engine/series_index.hpp"
#include "notify/entity_name.hpp"
#include "web/page.hpp"
#include "web/pages.hpp"

namespace perfwatch::web {

namespace {

constexpr std::size_t k_kernel_rows = 50;
constexpr std::size_t k_diff_rows = 30;
// Report files larger than this are not served (the page names their path instead).
constexpr std::uintmax_t k_max_download = 512u << 20;

std::string time_text(double ns) { return format_metric("duration", ns); }

// `text` as one word of a POSIX shell command line: single-quoted unless it is plainly safe.
std::string shell_quoted(std::string_view text) {
    const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("/._-+=:,@%").find(c) != std::string_view::npos;
    });
    if (plain) return std::string(text);
    std::string out = "'";
    for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

double total_of(const Entity& e) {
    if (auto t = e.value("duration_total")) return *t;
    return e.value("duration").value_or(0) * e.value("launches").value_or(1);
}

std::string diff_table(const RunDiff& d, std::size_t limit) {
    std::string out = fmt::format(
        "<p class=\"note\">{} slower, {} faster, {} added, {} removed, {} with other launch counts, {} unchanged; total {} -> {}.</p>\n",
        d.slower, d.faster, d.added, d.removed, d.count_changed, d.unchanged, time_text(d.total_a), time_text(d.total_b));
    out += "<table class=\"diff\"><thead><tr><th>Kernel</th><th>Change</th><th class=\"num\">Launches</th>"
           "<th class=\"num\">Mean before</th><th class=\"num\">Mean after</th><th class=\"num\">Per launch</th>"
           "<th class=\"num\">Confidence</th></tr></thead><tbody>\n";
    std::size_t shown = 0;
    for (const DiffEntry& e : d.entries) {
        if (shown++ == limit) break;
        out += fmt::format("<tr><td><code>{}</code></td><td>{}</td><td class=\"num\">{:.0f} -> {:.0f}</td><td class=\"num\">{}</td>"
                           "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                           h(e.name), to_string(e.status), e.count_a, e.count_b, e.count_a > 0 ? time_text(e.mean_a) : "",
                           e.count_b > 0 ? time_text(e.mean_b) : "",
                           e.count_a > 0 && e.count_b > 0 ? fmt::format("{:+.1f}%", e.change_pct) : "",
                           e.confidence ? fmt::format("{:.1f}%", 100 * *e.confidence) : "");
    }
    out += "</tbody></table>\n";
    if (d.entries.size() > limit) out += fmt::format("<p class=\"note\">{} more kernels not shown.</p>\n", d.entries.size() - limit);
    return out;
}

}  // namespace

std::string commit_html(const PageContext& ctx, std::string_view commit) {
    const std::string url = commit_link(ctx.commit_url, commit);
    if (url.empty()) return "<span class=\"mono\">" + h(commit) + "</span>";
    return fmt::format("<a class=\"mono commit\" href=\"{}\">{}</a>", h(url), h(commit));
}

HttpResponse report_download(PageContext& ctx, std::int64_t run_id) {
    auto sources = ctx.db.browse().sources({run_id});
    if (!sources) return error_response(500, sources.error().to_string());
    if (sources->empty()) return error_response(404, fmt::format("no run {}", run_id));
    const std::string path = sources->begin()->second;
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) return error_response(404, fmt::format("run {}'s report is no longer at {}", run_id, path));
    if (size > k_max_download) return error_response(413, fmt::format("run {}'s report is {} bytes; read it at {}", run_id, size, path));
    auto text = read_whole_file(path);
    if (!text) return error_response(404, fmt::format("run {}'s report cannot be read at {}", run_id, path));
    std::string name = std::filesystem::path(path).filename().string();
    for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
    HttpResponse r = html_response(std::move(*text));
    r.content_type = "application/octet-stream";
    r.headers.emplace_back("Content-Disposition", fmt::format("attachment; filename=\"{}\"", name));
    return r;
}

std::string token_field() {
    return "<input type=\"password\" name=\"token\" placeholder=\"token\" autocomplete=\"off\" required>";
}

HttpResponse run_page(PageContext& ctx, std::int64_t run_id) {
    auto run = ctx.db.load(run_id);
    if (!run) return error_response(500, run.error().to_string());
    if (!*run) return error_response(404, fmt::format("no run {}", run_id));
    const StoredRun& r = **run;
    auto findings = ctx.db.load_findings(run_id);
    if (!findings) return error_response(500, findings.error().to_string());
    auto indexed = ctx.series_index();
    if (!indexed) return error_response(500, indexed.error().to_string());
    const SeriesIndex& index = **indexed;
    const SeriesEntry* series = index.of_run(run_id);
    std::optional<std::int64_t> previous;
    if (series != nullptr) {
        const std::size_t at = index.position(run_id);
        if (at > 0 && at != std::string::npos) previous = series->runs[at - 1].id;
    }

    std::string body = fmt::format("<h1>Run {}</h1>\n<table class=\"facts\" id=\"run-facts\"><tbody>\n", run_id);
    body += fmt::format("<tr><th>Report</th><td class=\"mono\">{}</td></tr>\n", h(r.batch.source));
    body += fmt::format("<tr><th>Format</th><td>{}{}</td></tr>\n", h(r.batch.format),
                        r.batch.tool_version.empty() ? "" : " (" + h(r.batch.tool_version) + ")");
    body += fmt::format("<tr><th>Stored</th><td>{}</td></tr>\n", h(r.ingested_at));
    std::string labels;
    for (const auto& [k, v] : r.batch.labels)
        labels += fmt::format("<a class=\"mono\" href=\"{}\">{}={}</a> ", h(make_url("/", {{"label", k + "=" + v}})), h(k), h(v));
    body += fmt::format("<tr><th>Labels</th><td id=\"run-labels\">{}</td></tr>\n", labels.empty() ? "none" : labels);
    // The evidence: the commit on the code host, the daemon's HTML report, the report file itself.
    std::string evidence;
    if (const std::string commit = label_value(r.batch.labels, "commit"); !commit.empty()) {
        evidence += fmt::format("<a id=\"commit-summary\" href=\"{}\">everything this commit moved</a> &middot; ",
                                h("/commit/" + url_encode(commit)));
        if (!ctx.commit_url.empty()) evidence += "commit " + commit_html(ctx, commit) + " &middot; ";
    }
    if (!ctx.reports_base_url.empty())
        evidence += fmt::format("<a href=\"{}\">HTML report</a> &middot; ", h(fmt::format("{}run-{}.html", ctx.reports_base_url, run_id)));
    if (ctx.writable)
        evidence += fmt::format("<form class=\"inline\" method=\"post\" action=\"/run/{}/report\">{}<button type=\"submit\">"
                                "Download the report file</button></form>",
                                run_id, token_field());
    else
        evidence += fmt::format("<a id=\"report-file\" href=\"/run/{}/report\">the report file</a>", run_id);
    body += fmt::format("<tr><th>Evidence</th><td id=\"run-evidence\">{}</td></tr>\n", evidence);
    if (series != nullptr)
        body += fmt::format("<tr><th>Series</th><td><a href=\"{}\">{}</a> ({} runs)</td></tr>\n",
                            h(make_url("/series", {{"key", series->key}})), h(series_title(series->key)), series->runs.size());
    if (r.content_run) body += fmt::format("<tr><th>Content</th><td>the same report as <a href=\"/run/{}\">run {}</a></td></tr>\n", *r.content_run, *r.content_run);
    body += "</tbody></table>\n";

    // Findings, the largest impact first.
    std::vector<const Finding*> ranked;
    for (const Finding& f : *findings) ranked.push_back(&f);
    std::stable_sort(ranked.begin(), ranked.end(), [](const Finding* a, const Finding* b) {
        if (a->severity != b->severity) return a->severity > b->severity;
        return a->impact.value_or(-1) > b->impact.value_or(-1);
    });
    body += fmt::format("<h2>Findings ({})</h2>\n", ranked.size());
    if (ranked.empty()) body += "<p class=\"note\">No rule fired on this run.</p>\n";
    else {
        body += "<table id=\"findings\"><thead><tr><th>Severity</th><th>Rule</th><th>On</th><th class=\"num\">Impact</th>"
                "<th>Message</th></tr></thead><tbody>\n";
        for (const Finding* f : ranked) {
            const auto [kind, name] = shown_entity(to_string(f->entity_kind), f->entity_name, r.batch.source);
            body += fmt::format("<tr><td class=\"sev-{0}\">{0}</td><td>{1}</td><td>{2} <code>{3}</code></td>"
                                "<td class=\"num\">{4}</td><td>{5}</td></tr>\n",
                                to_string(f->severity), h(f->rule), h(kind), h(name),
                                f->impact ? fmt::format("{:.1f}%", *f->impact) : "", h(f->message));
        }
        body += "</tbody></table>\n";
    }

    // A distributed job's own run: its ranks, each with its figures and a link to its own run.
    if (r.batch.format == "job") {
        body += "<h2>Ranks</h2>\n<table id=\"ranks\"><thead><tr><th>Rank</th><th>Run</th><th class=\"num\">Step</th>"
                "<th class=\"num\">Waits in collectives</th><th class=\"num\">Arrived last</th><th class=\"num\">Wait caused</th>"
                "<th class=\"num\">Computation over the median</th></tr></thead><tbody>\n";
        auto cell = [](const Entity& e, const char* metric) {
            const auto v = e.value(metric);
            return v ? h(format_metric(metric, *v)) : std::string();
        };
        for (const Entity& e : r.batch.entities) {
            if (e.kind != EntityKind::rank) continue;
            const auto member = e.attributes.find("run");
            body += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                                "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                                h(e.name), member == e.attributes.end() ? "" : fmt::format("<a href=\"/run/{0}\">run {0}</a>", h(member->second)),
                                cell(e, "step_time"), cell(e, "collective_wait_time"), cell(e, "last_arrival_pct"),
                                cell(e, "wait_caused"), cell(e, "compute_excess_pct"));
        }
        body += "</tbody></table>\n";
    }

    // Kernels by GPU time.
    std::vector<const Entity*> kernels;
    double total = 0;
    for (const Entity& e : r.batch.entities)
        if (e.kind == EntityKind::kernel) {
            kernels.push_back(&e);
            total += total_of(e);
        }
    std::sort(kernels.begin(), kernels.end(), [](const Entity* a, const Entity* b) { return total_of(*a) > total_of(*b); });
    body += fmt::format("<h2>Kernels ({})</h2>\n", kernels.size());
    if (!kernels.empty()) {
        body += "<table id=\"kernels\"><thead><tr><th>Kernel</th><th class=\"num\">Launches</th><th class=\"num\">Mean</th>"
                "<th class=\"num\">Total</th><th class=\"num\">Share</th></tr></thead><tbody>\n";
        for (std::size_t i = 0; i < kernels.size() && i < k_kernel_rows; ++i) {
            const Entity& e = *kernels[i];
            const std::string series_link = series != nullptr
                                                ? fmt::format(" <a class=\"note\" href=\"{}\">history</a>",
                                                              h(make_url("/series", {{"key", series->key}, {"entity", e.name}})))
                                                : "";
            body += fmt::format("<tr><td><code>{}</code>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                                "<td class=\"num\">{}</td><td class=\"num\">{:.1f}%</td></tr>\n",
                                h(e.name), series_link, e.value("launches") ? fmt::format("{:.0f}", *e.value("launches")) : "",
                                e.value("duration") ? time_text(*e.value("duration")) : "", time_text(total_of(e)),
                                total > 0 ? 100 * total_of(e) / total : 0.0);
        }
        body += "</tbody></table>\n";
        if (kernels.size() > k_kernel_rows)
            body += fmt::format("<p class=\"note\">{} more kernels (see <code>perfwatch show {}</code>).</p>\n",
                                kernels.size() - k_kernel_rows, run_id);
    }

    // Against the run before it in its series.
    body += "<h2>Compared with the previous run of its series</h2>\n";
    if (previous) {
        auto before = ctx.db.load(*previous);
        if (!before) return error_response(500, before.error().to_string());
        if (*before) {
            body += fmt::format("<p>Against <a href=\"/run/{0}\">run {0}</a> (<a href=\"/compare?a={0}&amp;b={1}\">side by side</a>):</p>\n",
                                *previous, run_id);
            body += diff_table(diff_runs(std::move((*before)->batch), r.batch), k_diff_rows);
        }
    } else {
        body += "<p class=\"note\">The first run of its series.</p>\n";
    }

    body += "<h2>Reproduce</h2>\n<pre class=\"box mono\" id=\"commands\">";
    body += h(fmt::format("perfwatch show {} --db {}\n", run_id, ctx.db.name()));
    if (previous) body += h(fmt::format("perfwatch diff {} {} --db {}\n", *previous, run_id, ctx.db.name()));
    // A job is checked from its ranks' reports (check judges the ranks it is given as one job).
    std::vector<std::string> reports{r.batch.source};
    if (r.batch.format == "job") {
        std::vector<std::int64_t> ranks;
        if (auto job = ctx.db.jobs().get(run_id))
            for (const JobRank& rank : job->ranks) ranks.push_back(rank.run_id);
        auto sources = ctx.db.browse().sources(ranks);
        if (!sources) return error_response(500, sources.error().to_string());
        if (!sources->empty()) reports.clear();
        for (const std::int64_t id : ranks)
            if (auto it = sources->find(id); it != sources->end()) reports.push_back(it->second);
    }
    std::string check = "perfwatch check";
    for (const std::string& report : reports) check += " " + shell_quoted(report);
    body += h(check + "\n");
    body += "</pre>\n";
    auto pins = ctx.db.pins().list();
    if (!pins) return error_response(500, pins.error().to_string());
    const auto pin = std::find_if(pins->begin(), pins->end(), [&](const BaselinePin& p) { return p.run_id == run_id; });
    if (pin != pins->end()) {
        body += fmt::format("<div class=\"box\" id=\"pinned\">Pinned as the baseline of its series since {}{}.", h(pin->pinned_at),
                            pin->comment.empty() ? "" : ": " + h(pin->comment));
        if (ctx.writable)
            body += fmt::format(" <form class=\"inline\" method=\"post\" action=\"/run/{}/unpin\">{}<button type=\"submit\">"
                                "Unpin</button></form>",
                                run_id, token_field());
        body += "</div>\n";
    } else if (ctx.writable) {
        body += fmt::format("<form class=\"box\" method=\"post\" action=\"/run/{}/pin\">Pin as the baseline of its series: "
                            "<input name=\"comment\" placeholder=\"why\" size=\"30\">{}<button type=\"submit\">Pin</button></form>\n",
                            run_id, token_field());
    }
    return html_response(page(fmt::format("Run {}", run_id), "", body));
}

HttpResponse compare_page(PageContext& ctx, const Query& q) {
    const auto a = q.id("a"), b = q.id("b");
    if ((q.has("a") && !q.get("a").empty() && !a) || (q.has("b") && !q.get("b").empty() && !b))
        return error_response(400, "a and b must be run ids (positive integers)");
    std::string body = "<h1>Compare two runs</h1>\n<form class=\"filters\" method=\"get\" action=\"/compare\">"
                       "before <input name=\"a\" size=\"8\" value=\"" + (a ? std::to_string(*a) : std::string()) +
                       "\"> after <input name=\"b\" size=\"8\" value=\"" + (b ? std::to_string(*b) : std::string()) +
                       "\"><button type=\"submit\">Compare</button></form>\n";
    if (!a || !b) {
        body += "<p class=\"note\">Give two run ids (a run page links to its comparison with the run before it), or "
                "<a id=\"to-ranges\" href=\"/compare?a_series=&amp;b_series=\">compare ranges of runs</a> (branches, commit ranges, dates).</p>\n";
        return html_response(page("Compare", "Compare", body));
    }
    auto before = ctx.db.load(*a);
    auto after = ctx.db.load(*b);
    if (!before) return error_response(500, before.error().to_string());
    if (!after) return error_response(500, after.error().to_string());
    if (!*before || !*after) return error_response(404, fmt::format("no run {}", !*before ? *a : *b));
    const auto commit_of = [&](const Labels& labels) {
        const std::string c = label_value(labels, "commit");
        return c.empty() ? std::string() : " commit " + commit_html(ctx, c);
    };
    body += fmt::format("<p><a href=\"/run/{0}\">run {0}</a> ({1}){4} &rarr; <a href=\"/run/{2}\">run {2}</a> ({3}){5}</p>\n", *a,
                        h(labels_text((*before)->batch.labels)), *b, h(labels_text((*after)->batch.labels)),
                        commit_of((*before)->batch.labels), commit_of((*after)->batch.labels));
    body += diff_table(diff_runs(std::move((*before)->batch), (*after)->batch), 200);
    body += fmt::format("<pre class=\"box mono\">{}</pre>\n", h(fmt::format("perfwatch diff {} {} --db {}", *a, *b, ctx.db.name())));
    return html_response(page("Compare", "Compare", body));
}

HttpResponse unpin_action(PageContext& ctx, std::int64_t run_id) {
    auto unpinned = ctx.db.pins().unpin(run_id);
    if (!unpinned) return error_response(500, unpinned.error().to_string());
    if (!*unpinned) return error_response(404, fmt::format("run {} is not pinned", run_id));
    return redirect(fmt::format("/run/{}", run_id));
}

HttpResponse pin_action(PageContext& ctx, std::int64_t run_id, const Query& form) {
    auto pinned = ctx.db.pins().pin(run_id, form.get("comment"));
    if (!pinned) return error_response(500, pinned.error().to_string());
    if (!*pinned) return error_response(404, fmt::format("no run {}", run_id));
    return redirect(fmt::format("/run/{}", run_id));
}

}  // namespace perfwatch::web
