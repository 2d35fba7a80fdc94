#include "notify/escape.hpp"

namespace perfwatch {

std::string escape_markup(std::string_view text, Markup markup) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += markup == Markup::slack ? "\"" : "&quot;"; break;
            case '\'': out += markup == Markup::xml ? "&apos;" : "'"; break;
            default:
                if (markup == Markup::xml && static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
                    out += ' ';
                else
                    out += c;
        }
    }
    return out;
}

}  // namespace perfwatch
