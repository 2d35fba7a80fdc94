#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "notify/entity_name.hpp"
#include "notify/escape.hpp"
#include "notify/sinks/parts.hpp"
#include "core/text.hpp"

namespace perfwatch {

using namespace sink_parts;

namespace {

// Discord refuses a message whose content is over 2,000 characters.
constexpr std::size_t k_discord_content_bytes = 1900;

// A Discord webhook message: Markdown content, every report value through Medium::discord, and
// `allowed_mentions` empty so that Discord itself would ping nobody even if a mention got through.
std::string discord_message(const AlertGroup& g, const std::string&) {
    const auto esc = [](std::string_view t) { return escape_for(Medium::discord, t); };
    std::string text = fmt::format("**{}**\n", esc(g.title()));
    std::size_t shown = 0;
    for (const AlertItem& a : g.alerts) {
        const auto [kind, name] = shown_entity(a.entity_kind, a.entity_name, source_of(g, a));
        std::string line = fmt::format("- **[{}] {}** {} {}{}{}: {}{}\n", severity_text(a.severity), esc(a.title),
                                       esc(kind), code_span(Medium::discord, name), esc(origin_text(g, a)),
                                       impact_text(a), esc(a.message),
                                       a.url.empty() ? "" : fmt::format(" [regression page](<{}>)", a.url));
        if (text.size() + line.size() > k_discord_content_bytes - 200) break;
        text += line;
        ++shown;
    }
    AlertGroup rest = g;
    rest.omitted += g.alerts.size() - shown;
    text += "_" + esc(footer(rest)) + "_";
    if (!g.report_url.empty()) text += fmt::format(" [HTML report]({})", g.report_url);
    if (!g.commit_url.empty()) text += fmt::format(" [commit]({})", g.commit_url);
    text = std::string(utf8_prefix(text, k_discord_content_bytes));
    nlohmann::json doc = {{"username", "perfwatch"},
                          {"content", text},
                          {"allowed_mentions", {{"parse", nlohmann::json::array()}}}};
    return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

const Sink& discord_sink() {
    static const JsonPostSink sink{"discord", &discord_message, std::chrono::seconds(1)};
    return sink;
}

}  // namespace perfwatch
