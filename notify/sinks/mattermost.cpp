#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "notify/entity_name.hpp"
#include "notify/escape.hpp"
#include "notify/sinks/parts.hpp"
#include "core/text.hpp"

namespace perfwatch {

using namespace sink_parts;
using json = nlohmann::json;

std::string mattermost_message(const AlertGroup& g) {
    const auto esc = [](std::string_view t) { return escape_for(Medium::mattermost, t); };
    std::string text = fmt::format("#### {}\n", esc(g.title()));
    for (const AlertItem& a : g.alerts) {
        const auto [kind, name] = shown_entity(a.entity_kind, a.entity_name, source_of(g, a));
        text += fmt::format("- **[{}] {}** {} {}{}{}: {}{}\n", severity_text(a.severity), esc(a.title), esc(kind),
                            code_span(Medium::mattermost, name), esc(origin_text(g, a)), impact_text(a), esc(a.message),
                            a.url.empty() ? "" : fmt::format(" [regression page]({})", a.url));
    }
    text += "_" + esc(footer(g)) + "_";
    if (!g.report_url.empty()) text += fmt::format(" [HTML report]({})", g.report_url);
    if (!g.commit_url.empty()) text += fmt::format(" [commit]({})", g.commit_url);
    return json{{"username", "perfwatch"}, {"text", text}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

const Sink& mattermost_sink() {
    static const JsonPostSink sink{"mattermost", [](const AlertGroup& g, const std::string&) { return mattermost_message(g); }};
    return sink;
}

}  // namespace perfwatch
