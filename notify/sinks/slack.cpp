#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "notify/entity_name.hpp"
#include "notify/escape.hpp"
#include "notify/sinks/parts.hpp"
#include "core/text.hpp"

namespace perfwatch {

using namespace sink_parts;
using json = nlohmann::json;

std::string slack_escape(std::string_view text) { return escape_for(Medium::slack, text); }

std::string slack_message(const AlertGroup& g) {
    const auto esc = [](std::string_view t) { return escape_for(Medium::slack, t); };
    json blocks = json::array();
    blocks.push_back({{"type", "header"},
                      {"text", {{"type", "plain_text"}, {"text", std::string(utf8_prefix(escape_for(Medium::plain_line, g.title()), 150))}}}});
    std::string fallback = esc(g.title());
    // Slack allows 50 blocks and 3000 characters of text per section.
    std::size_t shown = 0;
    for (const AlertItem& a : g.alerts) {
        if (blocks.size() >= 48) break;
        const auto [kind, name] = shown_entity(a.entity_kind, a.entity_name, source_of(g, a));
        std::string text = fmt::format("*[{}] {}* {} {}{}{}\n{}", severity_text(a.severity), esc(a.title), esc(kind),
                                       code_span(Medium::slack, name), esc(origin_text(g, a)), impact_text(a),
                                       esc(a.message));
        if (text.size() > 2900) text = std::string(utf8_prefix(text, 2900)) + "...";
        if (!a.url.empty()) text += fmt::format("\n<{}|regression page>", a.url);
        blocks.push_back({{"type", "section"}, {"text", {{"type", "mrkdwn"}, {"text", text}}}});
        fallback += fmt::format("\n[{}] {} {}", severity_text(a.severity), esc(a.title), esc(name));
        ++shown;
    }
    AlertGroup rest = g;
    rest.omitted += g.alerts.size() - shown;
    std::string context = esc(footer(rest));
    if (!g.report_url.empty()) context += fmt::format(" | <{}|HTML report>", g.report_url);
    if (!g.commit_url.empty()) context += fmt::format(" | <{}|commit>", g.commit_url);
    blocks.push_back({{"type", "context"}, {"elements", json::array({{{"type", "mrkdwn"}, {"text", context}}})}});
    if (!g.report_url.empty()) fallback += fmt::format("\nReport: {}", g.report_url);
    if (!g.commit_url.empty()) fallback += fmt::format("\nCommit: {}", g.commit_url);
    return json{{"text", fallback}, {"blocks", blocks}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

const Sink& slack_sink() {
    static const JsonPostSink sink{"slack", [](const AlertGroup& g, const std::string&) { return slack_message(g); }, std::chrono::seconds(1)};
    return sink;
}

}  // namespace perfwatch
