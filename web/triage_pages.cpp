#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/vocabulary.hpp"
#include "engine/series_index.hpp"
#include "engine/stats.hpp"
#include "web/page.hpp"
#include "web/pages.hpp"

namespace perfwatch::web {

namespace {

constexpr std::size_t k_page_size = 50;
constexpr std::size_t k_max_alert_pages = 20;
// Runs before a regression's first bad one whose spread says how sharp its series is.
constexpr std::size_t k_judged_runs = 10;
// compare_to_baseline's default floor of the spread, as a share of the median.
constexpr double k_min_cv = 0.005;

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string ms_text(std::int64_t ms) {
    const std::time_t t = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// "commit abc, run 7 (1.2 ms)" linking to the run.
std::string run_ref(const PageContext& ctx, std::int64_t run, const std::string& commit, const std::optional<double>& value,
                    const std::string& metric) {
    return fmt::format("{1}<a href=\"/run/{0}\">run {0}</a>{2}", run, commit.empty() ? "" : "commit " + commit_html(ctx, commit) + ", ",
                       value ? " (" + h(format_metric(metric, *value)) + ")" : "");
}

std::string bisect_text(const PageContext& ctx, const BisectEnds& e, const std::string& metric) {
    return fmt::format("{} .. {}",
                       e.last_good_run ? run_ref(ctx, *e.last_good_run, e.last_good_commit, e.last_good_value, metric) : "none before",
                       run_ref(ctx, e.first_bad_run, e.first_bad_commit, e.first_bad_value, metric));
}

std::string change_text(const RegressionState& r) {
    std::string out = r.change_pct ? fmt::format("{:+.1f}% ", *r.change_pct) : "";
    out += r.current ? fmt::format("({} -> {})", format_metric(r.metric, r.baseline), format_metric(r.metric, *r.current))
                     : fmt::format("(baseline {})", format_metric(r.metric, r.baseline));
    return out;
}

std::string entity_text(const RegressionState& r) {
    return r.entity_kind == EntityKind::run ? "the run" : fmt::format("{} <code>{}</code>", to_string(r.entity_kind), h(r.entity_name));
}

std::string accept_form(const RegressionState& r) {
    return fmt::format("<form class=\"inline\" method=\"post\" action=\"/regression/{}/accept\">"
                       "<input name=\"comment\" placeholder=\"why it is intended\" size=\"22\">{}"
                       "<button type=\"submit\">Accept</button></form>",
                       r.id, token_field());
}

// The triage form of a regression: state, assignee, bug URL and a note.
std::string triage_form(const RegressionState& r) {
    std::string states;
    for (const TriageState t : k_triage_states)
        states += fmt::format("<option value=\"{0}\"{1}>{0}</option>", to_string(t), t == r.triage ? " selected" : "");
    return fmt::format("<form class=\"box filters\" id=\"triage-form\" method=\"post\" action=\"/regression/{}/triage\">"
                       "<select name=\"state\">{}</select><input name=\"assignee\" placeholder=\"assignee\" size=\"14\" value=\"{}\">"
                       "<input name=\"bug_url\" placeholder=\"https://bugs/123\" size=\"28\" value=\"{}\">"
                       "<input name=\"note\" placeholder=\"note\" size=\"30\">{}<button type=\"submit\">Save</button></form>\n",
                       r.id, states, h(r.assignee), h(r.bug_url), token_field());
}

// "investigating, alice, bug" for lists.
std::string triage_text(const RegressionState& r) {
    std::string out = fmt::format("<span class=\"triage-{0}\">{0}</span>", to_string(r.triage));
    if (!r.assignee.empty()) out += ", " + h(r.assignee);
    if (!r.bug_url.empty()) out += fmt::format(", <a href=\"{}\">bug</a>", h(r.bug_url));
    return out;
}

}  // namespace

Result<Sharpness> sharpness_of(PageContext& ctx, const SeriesIndex& index, const RegressionState& r) {
    Sharpness out;
    auto findings = ctx.db.load_findings(r.opened_run);
    if (!findings) return std::unexpected(findings.error());
    for (const Finding& f : *findings)
        if (f.rule == r.rule && f.entity_kind == r.entity_kind && (r.entity_kind == EntityKind::run || f.entity_name == r.entity_name) &&
            f.comparison && f.comparison->confidence_pct)
            out.confidence_pct = *f.comparison->confidence_pct;
    const SeriesEntry* s = index.find(r.series);
    if (s == nullptr) return out;
    const std::int64_t first = r.first_bad_run.value_or(r.opened_run);
    const std::size_t at = s->position_from(first);
    std::vector<std::int64_t> ids;
    for (std::size_t i = at > k_judged_runs ? at - k_judged_runs : 0; i <= at && i < s->runs.size(); ++i) ids.push_back(s->runs[i].id);
    auto values = ctx.db.browse().metric_values(r.entity_kind, r.entity_kind == EntityKind::run ? std::nullopt : std::optional(r.entity_name),
                                                r.metric, ids);
    if (!values) return std::unexpected(values.error());
    std::vector<double> before;
    for (const std::int64_t run : ids)
        if (auto v = values->find(run); v != values->end() && run != first) before.push_back(v->second.value);
    out.runs_before = before.size();
    const auto bad = values->find(first);
    if (bad == values->end() || before.size() < k_min_runs_tested) return out;
    const Comparison c = compare_to_baseline(bad->second.value, {}, before, {}, k_min_cv);
    if (c.baseline > 0) {
        out.noise_pct = 100 * c.spread / c.baseline;
        out.noise_floored = *out.noise_pct < 100 * k_min_cv;
    }
    if (c.detectable_pct > 0) out.detectable_pct = c.detectable_pct;
    return out;
}

std::string sharpness_text(const Sharpness& s) {
    std::string out = s.confidence_pct ? fmt::format("confidence {:.1f}%", *s.confidence_pct) : "confidence not recorded";
    if (s.noise_pct) {
        out += fmt::format("; noise (run-to-run spread of the {} runs before) {:.2f}%", s.runs_before, *s.noise_pct);
        if (s.noise_floored) out += fmt::format(" (tested as {:.2f}%, the floor)", 100 * k_min_cv);
    }
    if (s.detectable_pct) out += fmt::format("; smallest change these runs could show: {:.2f}%", *s.detectable_pct);
    return out;
}

HttpResponse regressions_page(PageContext& ctx, const Query& q) {
    const std::string status = q.has("status") ? q.get("status") : "open";
    if (status != "all" && !regression_status_from_string(status))
        return error_response(400, fmt::format("status '{}' is not open, resolved, accepted, invalid or all", status));
    auto all = ctx.db.regressions().list(status == "open");
    if (!all) return error_response(500, all.error().to_string());
    auto indexed = ctx.series_index();
    if (!indexed) return error_response(500, indexed.error().to_string());
    const SeriesIndex& index = **indexed;
    const std::string series = q.get("series"), rule = q.get("rule");
    std::vector<const RegressionState*> shown;
    for (const RegressionState& r : *all) {
        if (status != "all" && to_string(r.status) != status) continue;
        if (!series.empty() && r.series != series) continue;
        if (!rule.empty() && r.rule != rule) continue;
        shown.push_back(&r);
    }
    // Grouped by series, then by first bad run, newest first.
    std::stable_sort(shown.begin(), shown.end(), [](const RegressionState* a, const RegressionState* b) {
        if (a->series != b->series) return a->series < b->series;
        return a->first_bad_run.value_or(a->opened_run) > b->first_bad_run.value_or(b->opened_run);
    });
    const std::size_t pages = (shown.size() + k_page_size - 1) / k_page_size;
    const auto p = q.id("page");
    const std::size_t page_no = std::clamp<std::size_t>(p ? static_cast<std::size_t>(*p) : 1, 1, std::max<std::size_t>(pages, 1));

    std::vector<std::pair<std::string, std::string>> params{{"status", status}, {"series", series}, {"rule", rule}};
    std::string body = "<h1>Regressions</h1>\n<div class=\"filters\">";
    for (const char* s : {"open", "resolved", "accepted", "invalid", "all"}) {
        auto with_status = params;
        with_status[0].second = s;
        body += fmt::format("<a href=\"{}\"{}>{}</a>", h(make_url("/regressions", with_status)),
                            status == s ? " class=\"active\"" : "", s);
    }
    if (!series.empty()) body += fmt::format("<span>series: {}</span> <a href=\"{}\">all series</a>", h(series_title(series)),
                                             h(make_url("/regressions", {{"status", status}})));
    body += "</div>\n";
    if (shown.empty()) {
        body += fmt::format("<p class=\"note\">No {} regressions.</p>\n", status == "all" ? "" : status);
        return html_response(page("Regressions", "Regressions", body));
    }
    body += "<table id=\"regressions\"><thead><tr><th>#</th><th>State</th><th>Triage</th><th>Series</th><th>On</th><th>Rule, metric</th>"
            "<th>Change</th><th>Sharpness</th><th>Last good .. first bad</th><th>Since</th><th></th></tr></thead><tbody>\n";
    std::vector<const RegressionState*> on_page(shown.begin() + static_cast<std::ptrdiff_t>((page_no - 1) * k_page_size),
                                                shown.begin() + static_cast<std::ptrdiff_t>(std::min(shown.size(), page_no * k_page_size)));
    auto ends = bisect_ends(ctx.db, index, on_page);
    if (!ends) return error_response(500, ends.error().to_string());
    for (std::size_t i = 0; i < on_page.size(); ++i) {
        const RegressionState& r = *on_page[i];
        std::string action = r.status == RegressionStatus::open && ctx.writable ? accept_form(r) : h(r.comment);
        if (r.status != RegressionStatus::open)
            action = h(r.resolution) + (r.resolved_run ? fmt::format(" at <a href=\"/run/{0}\">run {0}</a>", *r.resolved_run) : "") +
                     (r.comment.empty() ? "" : ": " + h(r.comment));
        auto sharp = sharpness_of(ctx, index, r);
        if (!sharp) return error_response(500, sharp.error().to_string());
        body += fmt::format("<tr data-regression=\"{0}\"><td><a href=\"/regression/{0}\">#{0}</a></td><td class=\"state-{1}\">{1}</td>"
                            "<td>{11}</td><td><a href=\"{2}\">{3}</a></td><td>{4}</td><td>{5}<br><span class=\"note\">{6}</span></td>"
                            "<td>{7}</td><td class=\"sharpness note\">{12}</td><td>{8}</td><td>{9}</td><td>{10}</td></tr>\n",
                            r.id, to_string(r.status), h(make_url("/series", {{"key", r.series}})),
                            h(series_title(r.series)), entity_text(r), h(r.rule), h(r.metric),
                            h(change_text(r)), bisect_text(ctx, (*ends)[i], r.metric), h(r.since), action, triage_text(r),
                            h(sharpness_text(*sharp)));
    }
    body += "</tbody></table>\n" + pager("/regressions", params, page_no, pages);
    return html_response(page("Regressions", "Regressions", body));
}

HttpResponse regression_page(PageContext& ctx, std::int64_t id) {
    auto found = ctx.db.regressions().find(id);
    if (!found) return error_response(500, found.error().to_string());
    if (!*found) return error_response(404, fmt::format("no regression #{}", id));
    const RegressionState& r = **found;
    auto indexed = ctx.series_index();
    if (!indexed) return error_response(500, indexed.error().to_string());
    const SeriesIndex& index = **indexed;
    auto ends = bisect_ends(ctx.db, index, {&r});
    if (!ends) return error_response(500, ends.error().to_string());
    const std::int64_t first = r.first_bad_run.value_or(r.opened_run);

    std::string body = fmt::format("<h1>Regression #{} <span class=\"state-{}\">{}</span></h1>\n", r.id, to_string(r.status),
                                   to_string(r.status));
    body += "<table class=\"facts\" id=\"regression-facts\"><tbody>\n";
    body += fmt::format("<tr><th>Series</th><td><a href=\"{}\">{}</a></td></tr>\n", h(make_url("/series", {{"key", r.series}})),
                        h(series_title(r.series)));
    body += fmt::format("<tr><th>On</th><td>{}</td></tr>\n<tr><th>Rule</th><td>{} ({})</td></tr>\n", entity_text(r), h(r.rule), h(r.metric));
    body += fmt::format("<tr><th>Change</th><td>{}{}</td></tr>\n", h(change_text(r)),
                        r.entity_kind != EntityKind::run && r.metric == "duration"
                            ? " <span class=\"note statistic\">median per launch (the chart's points are means)</span>"
                            : "");
    body += fmt::format("<tr><th>Bisect</th><td>last good .. first bad: {}{}</td></tr>\n", bisect_text(ctx, ends->front(), r.metric),
                        r.entity_kind != EntityKind::run && r.metric == "duration"
                            ? " <span class=\"note statistic\">(each run's mean per launch, as the chart's points)</span>"
                            : "");
    body += fmt::format("<tr><th>Opened</th><td>at <a href=\"/run/{0}\">run {0}</a> {1}; last bad run {2}</td></tr>\n", r.opened_run,
                        h(r.since), r.last_bad_run);
    if (r.status != RegressionStatus::open)
        body += fmt::format("<tr><th>Ended</th><td>{}{}{}</td></tr>\n", h(r.resolution),
                            r.resolved_run ? fmt::format(" at run {}", *r.resolved_run) : "", r.comment.empty() ? "" : ": " + h(r.comment));
    // How sure, and how sharp: the opening finding's confidence, the series' run-to-run noise over
    // the 10 runs before the first bad one and the smallest change those runs let the engine see.
    auto sharp = sharpness_of(ctx, index, r);
    if (!sharp) return error_response(500, sharp.error().to_string());
    body += fmt::format("<tr><th>Sharpness</th><td id=\"sharpness\">{}</td></tr>\n", h(sharpness_text(*sharp)));
    body += fmt::format("<tr><th>Triage</th><td id=\"triage\">{}</td></tr>\n", triage_text(r));
    body += "</tbody></table>\n";
    if (r.status == RegressionStatus::open && ctx.writable) body += "<div class=\"box\">" + accept_form(r) + "</div>\n";
    if (ctx.writable) body += triage_form(r);
    auto events = ctx.db.regressions().events(r.id);
    if (!events) return error_response(500, events.error().to_string());
    if (!events->empty()) {
        body += "<h2>Triage history</h2>\n<table id=\"triage-history\"><thead><tr><th>When</th><th>Who</th><th>What</th></tr></thead><tbody>\n";
        for (const TriageEvent& e : *events)
            body += fmt::format("<tr><td>{}</td><td>{}</td><td>{}: {}</td></tr>\n", h(e.at), h(e.author), h(e.field), h(e.value));
        body += "</tbody></table>\n";
    }
    if (const SeriesEntry* s = index.find(r.series); s != nullptr) {
        // The series around the change: 30 runs before the first bad one to 10 after the last.
        const std::size_t at = s->position_from(first);
        const std::size_t last_at = std::min(s->runs.size() - 1, index.position(r.last_bad_run) == std::string::npos
                                                                       ? at
                                                                       : index.position(r.last_bad_run));
        std::string target = make_url("", {{"key", r.series},
                                           {"entity", r.entity_kind == EntityKind::run ? "" : r.entity_name},
                                           {"kind", std::string(to_string(r.entity_kind))},
                                           {"metric", r.metric},
                                           {"from", std::to_string(s->runs[at > 30 ? at - 30 : 0].id)},
                                           {"to", std::to_string(s->runs[std::min(s->runs.size() - 1, last_at + 10)].id)}});
        // The last good runs against the bad ones, with the engine's test.
        if (at > 0) {
            const bool kernel = r.entity_kind != EntityKind::run;
            const std::string compare = make_url(
                "/compare", {{"a_series", r.series},
                             {"a_from", std::to_string(s->runs[at > 10 ? at - 10 : 0].id)},
                             {"a_to", std::to_string(s->runs[at - 1].id)},
                             {"b_series", r.series},
                             {"b_from", std::to_string(s->runs[at].id)},
                             {"b_to", std::to_string(s->runs[std::max(at, last_at)].id)},
                             {kernel ? "kernel_metric" : "metric", r.metric}});
            body += fmt::format("<p><a id=\"compare-range\" href=\"{}\">compare the last good runs with the bad ones</a></p>\n", h(compare));
        }
        auto q = Query::parse(std::string_view(target).substr(1));
        if (q) {
            std::string error;
            body += "<h2>The series around the change</h2>\n" + series_chart_section(ctx, *s, *q, error);
            if (!error.empty()) body += "<p class=\"note\">" + h(error) + "</p>\n";
        }
    }
    std::string commands = fmt::format("perfwatch regressions show {0} --db {1}", r.id, ctx.db.name());
    if (r.status == RegressionStatus::open)
        commands += fmt::format("\nperfwatch regressions accept {0} --db {1} --comment '...'", r.id, ctx.db.name());
    body += fmt::format("<pre class=\"box mono\">{}</pre>\n", h(commands));
    return html_response(page(fmt::format("Regression #{}", r.id), "Regressions", body));
}

HttpResponse alerts_page(PageContext& ctx, const Query& q) {
    const auto p = q.id("page");
    const std::size_t page_no = std::clamp<std::size_t>(p ? static_cast<std::size_t>(*p) : 1, 1, k_max_alert_pages);
    auto messages = ctx.db.outbox().newest(page_no * k_page_size + 1);
    if (!messages) return error_response(500, messages.error().to_string());
    auto silences = ctx.db.silences().list(std::nullopt);
    if (!silences) return error_response(500, silences.error().to_string());
    auto quarantined = ctx.db.file_marks().list(ReadState::quarantined);
    if (!quarantined) return error_response(500, quarantined.error().to_string());
    const std::int64_t now = now_ms();

    std::string body = "<h1>Alerts</h1>\n";
    // Files whose reading ended the reader: never read again by the daemon until retried.
    if (!quarantined->empty()) {
        body += fmt::format("<h2>Quarantined files ({})</h2>\n<p class=\"note\">Reading each of these ended the "
                            "reader; the daemon does not read them again until retried (or changed).</p>\n",
                            quarantined->size());
        body += "<table id=\"quarantined\"><thead><tr><th>File</th><th>Since</th><th>Reason</th><th></th></tr></thead><tbody>\n";
        for (std::size_t i = 0; i < quarantined->size() && i < k_page_size; ++i) {
            const FileMark& f = (*quarantined)[i];
            body += fmt::format("<tr><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", h(f.path),
                                h(f.quarantined_at), h(f.error),
                                ctx.writable ? fmt::format("<form class=\"inline\" method=\"post\" action=\"/files/retry\">"
                                                           "<input type=\"hidden\" name=\"path\" value=\"{}\">{}"
                                                           "<button type=\"submit\">Retry</button></form>",
                                                           h(f.path), token_field())
                                             : "");
        }
        body += "</tbody></table>\n";
        if (quarantined->size() > k_page_size)
            body += fmt::format("<p class=\"note\">{} more: <code>perfwatch files --quarantined</code></p>\n",
                                quarantined->size() - k_page_size);
    }
    body += "<h2>Outbox: what was sent where</h2>\n";
    if (messages->empty()) body += "<p class=\"note\">No alert message yet.</p>\n";
    else {
        body += "<table id=\"outbox\"><thead><tr><th>#</th><th>Receiver</th><th>Run</th><th>State</th><th class=\"num\">Attempts</th>"
                "<th>Created</th><th>Last error</th></tr></thead><tbody>\n";
        for (std::size_t i = (page_no - 1) * k_page_size; i < messages->size() && i < page_no * k_page_size; ++i) {
            const OutboxMessage& m = (*messages)[i];
            // A message with no run tells of a quarantined file.
            const std::string run = m.run_id > 0 ? fmt::format("<a href=\"/run/{0}\">run {0}</a>", m.run_id) : "file";
            body += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>"
                                "<td>{}</td><td>{}</td></tr>\n",
                                m.id, h(m.receiver), run, to_string(m.state), m.attempts, ms_text(m.created_ms),
                                h(m.last_error));
        }
        body += "</tbody></table>\n";
        const std::size_t pages = messages->size() > page_no * k_page_size ? page_no + 1 : page_no;
        body += pager("/alerts", {}, page_no, pages);
    }
    body += "<h2>Silences</h2>\n";
    if (silences->empty()) body += "<p class=\"note\">No silence.</p>\n";
    else {
        body += "<table id=\"silences\"><thead><tr><th>#</th><th>Matchers</th><th>Until</th><th>Comment</th><th></th></tr></thead><tbody>\n";
        for (const Silence& s : *silences) {
            std::string matchers;
            for (const auto& [k, v] : s.matchers) matchers += fmt::format("<code>{}={}</code> ", h(k), h(v));
            const bool active = s.until_ms > now;
            body += fmt::format("<tr><td>{}</td><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td></tr>\n", s.id, matchers,
                                ms_text(s.until_ms), active ? "" : " (expired)", h(s.comment),
                                active && ctx.writable
                                    ? fmt::format("<form class=\"inline\" method=\"post\" action=\"/silence/{}/expire\">{}"
                                                  "<button type=\"submit\">Expire</button></form>",
                                                  s.id, token_field())
                                    : "");
        }
        body += "</tbody></table>\n";
    }
    if (ctx.writable)
        body += "<form class=\"box\" method=\"post\" action=\"/silences\">New silence: matchers <input name=\"matchers\" "
                "placeholder=\"rule=ncu-small-grid benchmark=bert*\" size=\"36\" required> for <input name=\"hours\" value=\"24\" size=\"4\"> "
                "hours, <input name=\"comment\" placeholder=\"why\" size=\"24\">" + token_field() +
                "<button type=\"submit\">Silence</button></form>\n";
    return html_response(page("Alerts", "Alerts", body));
}

std::expected<RegressionState, std::pair<unsigned, std::string>> apply_triage(PageContext& ctx, std::int64_t id, const Query& form) {
    using Failure = std::pair<unsigned, std::string>;
    TriageChange change;
    if (form.has("state")) {
        change.state = triage_state_from_string(form.get("state"));
        if (!change.state) return std::unexpected(Failure{400, fmt::format("'{}' is not a triage state", form.get("state"))});
    }
    if (form.has("assignee")) change.assignee = form.get("assignee");
    if (form.has("bug_url")) {
        const std::string url = form.get("bug_url");
        if (!url.empty() && !url.starts_with("https://") && !url.starts_with("http://"))
            return std::unexpected(Failure{400, "the bug URL must start with http:// or https://"});
        change.bug_url = url;
    }
    change.note = form.get("note");
    change.author = std::string(ctx.token_name);
    change.at = ms_text(now_ms());
    auto changed = ctx.db.regressions().triage(id, change);
    if (!changed) return std::unexpected(Failure{500, changed.error().to_string()});
    if (!*changed) return std::unexpected(Failure{404, fmt::format("no regression #{}", id)});
    return std::move(**changed);
}

HttpResponse triage_action(PageContext& ctx, std::int64_t id, const Query& form) {
    auto changed = apply_triage(ctx, id, form);
    if (!changed) return error_response(changed.error().first, changed.error().second);
    return redirect(fmt::format("/regression/{}", id));
}

HttpResponse accept_action(PageContext& ctx, std::int64_t id, const Query& form) {
    auto accepted = ctx.db.regressions().accept(id, form.get("comment"));
    if (!accepted) return error_response(500, accepted.error().to_string());
    if (!*accepted) return error_response(404, fmt::format("no open regression #{}", id));
    return redirect(fmt::format("/regression/{}", id));
}

HttpResponse silence_add_action(PageContext& ctx, const Query& form) {
    Silence s;
    const std::string text = form.get("matchers");
    std::size_t at = 0;
    while (at < text.size()) {
        const std::size_t end = std::min(text.find(' ', at), text.size());
        const std::string item = text.substr(at, end - at);
        at = end + 1;
        if (item.empty()) continue;
        const auto eq = item.find('=');
        if (eq == std::string::npos || eq == 0) return error_response(400, fmt::format("matcher '{}' is not label=value", item));
        s.matchers[item.substr(0, eq)] = item.substr(eq + 1);
    }
    if (s.matchers.empty()) return error_response(400, "a silence needs at least one matcher");
    double hours = 0;
    try {
        hours = std::stod(form.get("hours"));
    } catch (const std::exception&) {
        return error_response(400, "hours is not a number");
    }
    if (!(hours > 0 && hours <= 24 * 365)) return error_response(400, "hours must be above 0 and at most a year");
    s.created_ms = now_ms();
    s.until_ms = s.created_ms + static_cast<std::int64_t>(hours * 3600e3);
    s.comment = form.get("comment");
    auto added = ctx.db.silences().add(s);
    if (!added) return error_response(500, added.error().to_string());
    return redirect("/alerts");
}

HttpResponse file_retry_action(PageContext& ctx, const Query& form) {
    auto was = ctx.db.file_marks().request_retry(form.get("path"));
    if (!was) return error_response(409, was.error().to_string());
    return redirect("/alerts");
}

HttpResponse silence_expire_action(PageContext& ctx, std::int64_t id) {
    auto expired = ctx.db.silences().expire(id, now_ms());
    if (!expired) return error_response(500, expired.error().to_string());
    if (!*expired) return error_response(404, fmt::format("no silence #{}", id));
    return redirect("/alerts");
}

}  // namespace perfwatch::web
