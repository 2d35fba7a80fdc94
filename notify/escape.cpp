#include "notify/escape.hpp"

#include "core/text.hpp"

namespace perfwatch {

namespace {

constexpr std::string_view k_word_joiner = "\xE2\x81\xA0";

struct Rules {
    bool neutralise;        // break mentions and links
    bool keep_line_breaks;  // '\n' (and '\t') stay; otherwise they become spaces
};

Rules rules_of(Medium m) {
    switch (m) {
        case Medium::slack:
        case Medium::mattermost:
        case Medium::discord:
        case Medium::teams:
        case Medium::email_text:
        case Medium::email_html: return {true, true};
        case Medium::markdown:
        case Medium::plain_line: return {true, false};
        case Medium::html:
        case Medium::xml:
        case Medium::workflow_message:
        case Medium::workflow_property: return {false, true};
    }
    return {true, false};
}

bool is_word(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Valid UTF-8 with control characters replaced by U+FFFD; line breaks and tabs kept or made
// spaces (a carriage return is never kept).
std::string clean(std::string_view text, bool keep_line_breaks) {
    std::string out;
    out.reserve(text.size());
    for (const char c : to_valid_utf8(text)) {
        const bool line = c == '\n' || c == '\t' || c == '\r';
        if (line && !keep_line_breaks)
            out += ' ';
        else if ((line && c != '\r') || !(static_cast<unsigned char>(c) < 0x20 || c == 0x7f))
            out += c;
        else
            out += k_replacement_character;
    }
    return out;
}

// Mentions and links made inert: a word joiner after '@' before a word, after '<' before '!' or
// '@', between "](" and after "://"; "www." likewise.
std::string neutralise(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 16);
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const char next = i + 1 < text.size() ? text[i + 1] : '\0';
        out += c;
        const bool mention = c == '@' && is_word(next);
        const bool slack_special = c == '<' && (next == '!' || next == '@' || next == '#');
        const bool markdown_link = c == ']' && next == '(';
        const bool scheme = c == ':' && text.substr(i + 1, 2) == "//";
        const bool www = (c == 'w' || c == 'W') && i + 3 < text.size() && (text[i + 1] | 0x20) == 'w' &&
                         (text[i + 2] | 0x20) == 'w' && text[i + 3] == '.' && (i == 0 || !is_word(text[i - 1]));
        if (mention || slack_special || markdown_link || scheme || www) out += k_word_joiner;
    }
    return out;
}

std::string entities(std::string_view text, Medium m) {
    std::string out;
    out.reserve(text.size() + 16);
    for (const char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += m == Medium::slack ? "\"" : "&quot;"; break;
            case '\'': out += m == Medium::xml ? "&apos;" : (m == Medium::slack ? "'" : "&#39;"); break;
            default: out += c;
        }
    }
    return out;
}

// The workflow-command encoding of GitHub's runner (toolkit's escapeData/escapeProperty).
std::string percent_encoded(std::string_view text, bool property) {
    std::string out;
    out.reserve(text.size() + 16);
    for (const char c : text) {
        switch (c) {
            case '%': out += "%25"; break;
            case '\r': out += "%0D"; break;
            case '\n': out += "%0A"; break;
            case ':': out += property ? "%3A" : ":"; break;
            case ',': out += property ? "%2C" : ","; break;
            default: out += c;
        }
    }
    return out;
}

std::string backslashed(std::string_view text, std::string_view specials) {
    std::string out;
    out.reserve(text.size() + 16);
    for (const char c : text) {
        if (specials.find(c) != std::string_view::npos) out += '\\';
        out += c;
    }
    return out;
}

}  // namespace

std::string escape_for(Medium medium, std::string_view text) {
    const Rules r = rules_of(medium);
    std::string out = clean(text, r.keep_line_breaks);
    if (r.neutralise) out = neutralise(out);
    switch (medium) {
        case Medium::slack:
        case Medium::html:
        case Medium::xml:
        case Medium::email_html: return entities(out, medium);
        case Medium::mattermost:
        case Medium::discord:
        case Medium::markdown: return backslashed(out, "\\`*_{}[]()<>#|~!");
        case Medium::workflow_message:
        case Medium::workflow_property: return percent_encoded(out, medium == Medium::workflow_property);
        case Medium::teams:
        case Medium::email_text:
        case Medium::plain_line: return out;
    }
    return out;
}

std::string code_span(Medium medium, std::string_view text) {
    std::string inner = clean(text, false);
    for (char& c : inner)
        if (c == '`') c = '\'';
    inner = neutralise(inner);
    // GitHub's tables split cells at '|' even inside code, unless it is escaped.
    if (medium == Medium::markdown) inner = backslashed(inner, "|");
    if (medium == Medium::slack) inner = entities(inner, medium);
    return "`" + inner + "`";
}

std::string code_block(Medium medium, std::string_view text) {
    std::string out = "```\n";
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t end = text.find('\n', at);
        if (end == std::string_view::npos) end = text.size();
        std::string line = clean(text.substr(at, end - at), false);
        for (char& c : line)
            if (c == '`') c = '\'';
        line = neutralise(line);
        if (medium == Medium::slack) line = entities(line, medium);
        out += line + "\n";
        at = end + 1;
    }
    return out + "```\n";
}

}  // namespace perfwatch
