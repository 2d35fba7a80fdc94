#include "notify/sinks/code_host.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/text.hpp"
#include "notify/entity_name.hpp"
#include "notify/escape.hpp"

namespace perfwatch::sink_parts {

namespace {

using json = nlohmann::json;

// GitHub refuses comments over 65,536 characters; room is left for the closing lines.
constexpr std::size_t k_max_comment = 60000;
// At most this many pages of comments are searched for the marker (100 each).
constexpr int k_max_comment_pages = 50;

std::string label(const AlertGroup& g, const std::string& name) { return label_value(g.run_labels, name); }

// `reply` as the delivery's outcome, its error saying which step it was.
Delivery failed(const HttpReply& reply, std::string_view step) {
    Delivery d = reply.delivery;
    d.error = fmt::format("{}: {}", step, d.error);
    return d;
}

// The marker that finds this receiver's comment again: its name and the run's benchmark,
// percent-encoded so that no label can end the HTML comment.
std::string marker(const AlertGroup& g) {
    return fmt::format("<!-- perfwatch:{}:{} -->", url_encoded(g.receiver), url_encoded(label(g, "benchmark")));
}

CommitStatus commit_status(const AlertGroup& g) {
    CommitStatus s;
    const std::string benchmark = label(g, "benchmark");
    s.context = benchmark.empty() ? "perfwatch" : "perfwatch/" + std::string(utf8_prefix(benchmark, 100));
    for (const AlertItem& a : g.alerts)
        if (a.severity == Severity::error && g.status == "firing") s.failing = true;
    std::string text;
    if (g.alerts.empty() && g.omitted == 0) {
        text = "nothing to act on: no finding";
    } else if (g.alerts.empty()) {
        text = g.title();
    } else {
        const AlertItem& first = g.alerts.front();
        const auto [kind, name] = shown_entity(first.entity_kind, first.entity_name, source_of(g, first));
        text = fmt::format("{}: {} ({} {})", to_string(first.severity), first.title, kind, name);
        if (g.alerts.size() + g.omitted > 1) text = fmt::format("{} more; ", g.alerts.size() + g.omitted - 1) + text;
    }
    text = escape_for(Medium::plain_line, text);
    s.description = std::string(utf8_prefix(text, 140));
    s.target_url = g.report_url;
    return s;
}

json parse(const std::string& text) { return json::parse(text, nullptr, false); }

}  // namespace

std::string code_host_comment(const AlertGroup& g) {
    const auto md = [](std::string_view t) { return escape_for(Medium::markdown, t); };
    std::string out = marker(g) + "\n";
    out += fmt::format("### {}\n\n", md(g.title()));
    std::string tail = "\n";
    if (!g.report_url.empty()) tail += fmt::format("[Run page]({})\n\n", g.report_url);
    if (!g.commit_url.empty()) tail += fmt::format("[Commit]({})\n\n", g.commit_url);
    tail += fmt::format("<sub>{}{}. perfwatch edits this comment on each run.</sub>\n", md(footer(g)),
                        label(g, "commit").empty() ? "" : fmt::format(" at commit {}", code_span(Medium::markdown, label(g, "commit"))));
    std::size_t shown = 0;
    for (const AlertItem& a : g.alerts) {
        const auto [kind, name] = shown_entity(a.entity_kind, a.entity_name, source_of(g, a));
        std::string item = fmt::format("{}. **[{}] {}**: {} {}{}{}<br>\n   {}\n", shown + 1, severity_text(a.severity),
                                       md(a.title), md(kind), code_span(Medium::markdown, name), md(origin_text(g, a)),
                                       impact_text(a), md(a.message));
        if (!a.url.empty()) item += fmt::format("   [regression page]({})\n", a.url);
        if (out.size() + item.size() + tail.size() + 200 > k_max_comment) break;
        out += item;
        ++shown;
    }
    if (g.alerts.empty() && g.omitted == 0) out += "Nothing to act on: this run has no finding.\n";
    if (shown < g.alerts.size() || g.omitted > 0)
        out += fmt::format("\n_{} more not shown._\n", g.alerts.size() - shown + g.omitted);
    return out + tail;
}

std::vector<std::string> CodeHostSink::missing(const Receiver& r, bool) const {
    std::vector<std::string> lacks;
    if (r.repository.empty())
        lacks.push_back(fmt::format("needs repository ({})", m_api.repository_hint));
    if (r.token_source.empty()) lacks.push_back("needs token_file or token_env (the API token)");
    return lacks;
}

Delivery CodeHostSink::deliver(const Receiver& r, const AlertGroup& g, const std::string&) const {
    if (r.token.empty()) return {Delivery::Outcome::permanent, 0, {}, "no API token configured"};
    const std::string api = r.api_url.empty() ? std::string(m_api.default_api_url) : r.api_url;
    const std::string project = api + "/" + m_api.project_path(r.repository);
    const std::vector<std::string> headers = m_api.headers(r.token);
    auto call = [&](HttpCall c) {
        c.headers.insert(c.headers.end(), headers.begin(), headers.end());
        return http_call(r, c);
    };

    // The commit status, where the run names its commit.
    const std::string sha = label(g, "commit");
    if (!sha.empty()) {
        const HttpReply status = call(m_api.status_call(project, sha, commit_status(g)));
        if (status.delivery.outcome != Delivery::Outcome::sent) return failed(status, "commit status");
    }

    // The pull request: the `pr` label, else the open one of the run's branch.
    std::string number = label(g, "pr");
    if (number.empty() && !label(g, "branch").empty()) {
        const HttpReply pulls = call({"GET", m_api.pulls_url(project, r, label(g, "branch")), {}, {}});
        if (pulls.delivery.outcome != Delivery::Outcome::sent) return failed(pulls, "finding the pull request");
        const json list = parse(pulls.body);
        if (list.is_array() && !list.empty() && list.front().is_object()) {
            const json& n = list.front().value(std::string(m_api.number_field), json());
            if (n.is_number_integer()) number = std::to_string(n.get<long long>());
        }
    }
    if (number.empty()) return {};
    for (const char c : number)
        if (c < '0' || c > '9') return {Delivery::Outcome::permanent, 0, {}, "label pr is not a pull request number"};

    // This receiver's comment, found by its marker, is edited; otherwise one is created.
    const std::string body = json{{"body", code_host_comment(g)}}.dump(-1, ' ', false, json::error_handler_t::replace);
    const std::string mark = marker(g);
    std::string page = m_api.comments_url(project, number) + "?per_page=100";
    std::string found;
    for (int pages = 0; !page.empty() && found.empty() && pages < k_max_comment_pages; ++pages) {
        const HttpReply comments = call({"GET", page, {}, {}});
        if (comments.delivery.outcome != Delivery::Outcome::sent) return failed(comments, "listing comments");
        const json list = parse(comments.body);
        if (!list.is_array()) return {Delivery::Outcome::retry, comments.delivery.http_status, {}, "listing comments: not a JSON array"};
        for (const json& c : list) {
            if (!c.is_object()) continue;
            const json& text = c.value("body", json());
            const json& id = c.value("id", json());
            if (text.is_string() && id.is_number_integer() && text.get<std::string>().starts_with(mark)) {
                found = std::to_string(id.get<long long>());
                break;
            }
        }
        page = comments.next_page;
        // A next page elsewhere than the API would carry the token away.
        if (!page.starts_with(api + "/")) page.clear();
    }
    const HttpReply posted = found.empty() ? call({"POST", m_api.comments_url(project, number), {}, body})
                                           : call({std::string(m_api.edit_method), m_api.comment_url(project, number, found), {}, body});
    if (posted.delivery.outcome != Delivery::Outcome::sent) return failed(posted, found.empty() ? "creating the comment" : "editing the comment");
    return posted.delivery;
}

}  // namespace perfwatch::sink_parts
