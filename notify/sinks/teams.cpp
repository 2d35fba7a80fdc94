#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "notify/entity_name.hpp"
#include "notify/escape.hpp"
#include "notify/sinks/parts.hpp"
#include "core/text.hpp"

namespace perfwatch {

using namespace sink_parts;
using json = nlohmann::json;

std::string teams_message(const AlertGroup& g) {
    const auto esc = [](std::string_view t) { return escape_for(Medium::teams, t); };
    json body = json::array();
    body.push_back({{"type", "TextBlock"}, {"text", esc(g.title())}, {"weight", "Bolder"}, {"size", "Medium"}, {"wrap", true}});
    json facts = json::array();
    for (const auto& [k, v] : g.run_labels) facts.push_back({{"title", esc(k)}, {"value", esc(v)}});
    if (!facts.empty()) body.push_back({{"type", "FactSet"}, {"facts", facts}});
    for (const AlertItem& a : g.alerts) {
        const auto [kind, name] = shown_entity(a.entity_kind, a.entity_name, source_of(g, a));
        body.push_back({{"type", "TextBlock"},
                        {"text", fmt::format("[{}] {}: {} {}{}{}", severity_text(a.severity), esc(a.title), esc(kind),
                                             esc(name), esc(origin_text(g, a)), impact_text(a))},
                        {"weight", "Bolder"},
                        {"wrap", true},
                        {"color", a.severity == Severity::error ? "Attention" : "Default"}});
        body.push_back({{"type", "TextBlock"}, {"text", esc(a.message)}, {"wrap", true}, {"isSubtle", true}});
        if (!a.url.empty())
            body.push_back({{"type", "TextBlock"}, {"text", fmt::format("[regression page]({})", a.url)}, {"wrap", true}});
    }
    body.push_back({{"type", "TextBlock"}, {"text", esc(footer(g))}, {"wrap", true}, {"size", "Small"}});
    json card = {{"$schema", "http://adaptivecards.io/schemas/adaptive-card.json"},
                 {"type", "AdaptiveCard"},
                 {"version", "1.4"},
                 {"body", body}};
    json actions = json::array();
    if (!g.report_url.empty()) actions.push_back({{"type", "Action.OpenUrl"}, {"title", "HTML report"}, {"url", g.report_url}});
    if (!g.commit_url.empty()) actions.push_back({{"type", "Action.OpenUrl"}, {"title", "Commit"}, {"url", g.commit_url}});
    if (!actions.empty()) card["actions"] = std::move(actions);
    return json{{"type", "message"},
                {"attachments", json::array({{{"contentType", "application/vnd.microsoft.card.adaptive"},
                                              {"contentUrl", nullptr},
                                              {"content", card}}})}}
        .dump(-1, ' ', false, json::error_handler_t::replace);
}

const Sink& teams_sink() {
    static const JsonPostSink sink{"teams", [](const AlertGroup& g, const std::string&) { return teams_message(g); }};
    return sink;
}

}  // namespace perfwatch
