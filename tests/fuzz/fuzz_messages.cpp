// libFuzzer target for everything perfwatch renders for people: every sink's body (Slack, Teams,
// Mattermost, Discord, the webhook document, ...), the email Subject, text and HTML, the Markdown comment, JUnit XML
// and the HTML report, fed a run whose names, labels and messages are the fuzz input. Each JSON
// body must parse, every output must be valid UTF-8 without control characters (but line
// breaks and tabs), and no chat or mail output may carry a mention or a link the input planted.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "notify/alerts.hpp"
#include "notify/escape.hpp"
#include "notify/format.hpp"
#include "notify/html_report.hpp"
#include "notify/sinks.hpp"
#include "core/text.hpp"

namespace {

using perfwatch::Medium;

void require(bool ok) {
    if (!ok) std::abort();
}

void require_clean(std::string_view text) {
    require(perfwatch::is_valid_utf8(text));
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        require(!(u < 0x20 && c != '\n' && c != '\t' && c != '\r') && u != 0x7f);
    }
}

void require_inert(std::string text) {
    require_clean(text);
    // The one link of our own in a body (Teams' card schema).
    constexpr std::string_view k_schema = "http://adaptivecards.io/schemas/adaptive-card.json";
    for (auto at = text.find(k_schema); at != std::string::npos; at = text.find(k_schema)) text.erase(at, k_schema.size());
    for (const std::string_view bad : {"@channel", "@here", "@all", "<!channel>", "<!here>", "](", "://"})
        require(text.find(bad) == std::string::npos);
}

void require_json_inert(const nlohmann::json& doc) {
    if (doc.is_string()) require_inert(doc.get<std::string>());
    if (doc.is_object() || doc.is_array())
        for (const auto& item : doc) require_json_inert(item);
}

void require_json(const std::string& body) {
    require(nlohmann::json::accept(body));
    require_json_inert(nlohmann::json::parse(body));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string input(reinterpret_cast<const char*>(data), size);
    // Up to four pieces, split at NUL bytes: kernel name, message, label value, source.
    std::string piece[4];
    std::size_t start = 0;
    for (int i = 0; i < 4; ++i) {
        const std::size_t end = i == 3 ? std::string::npos : input.find('\0', start);
        piece[i] = start <= input.size() ? input.substr(start, end == std::string::npos ? std::string::npos : end - start)
                                         : std::string();
        start = end == std::string::npos ? input.size() + 1 : end + 1;
    }

    // The escaping layer's contract, medium by medium.
    for (const Medium m : {Medium::slack, Medium::mattermost, Medium::discord, Medium::teams, Medium::markdown, Medium::email_text,
                           Medium::email_html, Medium::plain_line, Medium::html, Medium::xml}) {
        const std::string out = perfwatch::escape_for(m, piece[0]);
        require_clean(out);
        if (m == Medium::html || m == Medium::xml || m == Medium::email_html || m == Medium::slack)
            require(out.find('<') == std::string::npos && out.find('>') == std::string::npos);
        if (m == Medium::plain_line || m == Medium::markdown) require(out.find('\n') == std::string::npos);
        if (m != Medium::html && m != Medium::xml) require_inert(out);
    }

    perfwatch::AlertGroup g;
    g.receiver = "r";
    g.run_id = 1;
    g.source = piece[3];
    g.run_labels = {{"project", piece[2]}, {piece[2].substr(0, 16), "x"}};
    perfwatch::AlertItem a;
    a.rule = "top-kernel";
    a.title = piece[1].substr(0, 40);
    a.severity = perfwatch::Severity::warning;
    a.entity_kind = "kernel";
    a.entity_name = piece[0];
    a.message = piece[1];
    g.alerts.push_back(a);
    // Every row of the sink table: the machine documents (webhook, jsonl) must be one JSON line;
    // what people read, a JSON body or text, must be inert.
    for (const perfwatch::Sink* sink : perfwatch::sinks()) {
        const std::string body = sink->body(g, "key");
        if (sink->type() == "webhook" || sink->type() == "jsonl") {
            require(nlohmann::json::accept(body) && body.find('\n') == std::string::npos);
        } else if (nlohmann::json::accept(body)) {
            require_json(body);
        } else {
            require_inert(body);
        }
    }
    const std::string subject = perfwatch::email_subject(g);
    require_inert(subject);
    require(subject.find('\n') == std::string::npos && subject.find('\r') == std::string::npos);
    require_inert(perfwatch::email_text(g));
    require_inert(perfwatch::email_html(g));

    perfwatch::CheckReport report;
    report.runs.push_back({1, piece[3], "kineto", {{"project", piece[2]}}, {piece[1]}, {}, {}, {}});
    perfwatch::Finding f;
    f.rule = "top-kernel";
    f.title = piece[1].substr(0, 40);
    f.severity = perfwatch::Severity::warning;
    f.run_id = 1;
    f.entity_name = piece[0];
    f.message = piece[1];
    report.findings.push_back(f);
    report.cases.push_back({1, "top-kernel", perfwatch::EntityKind::kernel, piece[0]});
    require_inert(perfwatch::format_check_markdown(report));
    require_clean(perfwatch::format_check_junit(report, perfwatch::Severity::warning));
    require(nlohmann::json::accept(perfwatch::format_check_json(report)));

    perfwatch::HtmlReport html;
    html.run = report.runs[0];
    html.top_kernels.push_back({piece[0], 1000, piece[1]});
    html.findings = report.findings;
    require_clean(perfwatch::render_html_report(html));
    return 0;
}
