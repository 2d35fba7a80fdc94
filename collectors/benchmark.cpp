#include "collectors/benchmark.hpp"

#include <array>
#include <regex>
#include <vector>

namespace perfwatch {

namespace {

// Longest first: ".pt.trace.json" before ".json".
constexpr auto k_compression = std::to_array<std::string_view>({".gz", ".bz2", ".xz", ".zst", ".zip"});
constexpr auto k_formats = std::to_array<std::string_view>({
    ".pt.trace.json", ".trace.json", ".ncu-rep", ".nsys-rep", ".qdrep", ".sqlite", ".json", ".csv", ".txt",
    ".log", ".mon", ".out", ".db", ".yaml", ".yml",
});

bool strip_suffix(std::string& text, std::string_view suffix) {
    if (text.size() <= suffix.size()) return false;
    const std::string_view tail(text.data() + text.size() - suffix.size(), suffix.size());
    for (std::size_t i = 0; i < suffix.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(tail[i])) != suffix[i]) return false;
    text.resize(text.size() - suffix.size());
    return true;
}

void strip_extensions(std::string& stem) {
    for (std::string_view c : k_compression)
        if (strip_suffix(stem, c)) break;
    for (std::string_view f : k_formats)
        if (strip_suffix(stem, f)) break;
}

// Separators left at either end, or doubled, once a part is cut out.
std::string tidy(std::string text) {
    static const std::regex doubled("([._-])[._-]+");
    text = std::regex_replace(text, doubled, "$1");
    const auto first = text.find_first_not_of("._- ");
    if (first == std::string::npos) return {};
    const auto last = text.find_last_not_of("._- ");
    return text.substr(first, last - first + 1);
}

}  // namespace

BenchmarkName benchmark_from_path(std::string_view relative) {
    std::vector<std::string> segments;
    std::string current;
    for (char c : relative) {
        if (c == '/') {
            if (!current.empty() && current != ".") segments.push_back(current);
            current.clear();
        } else {
            current += c;
        }
    }
    if (!current.empty()) segments.push_back(current);
    BenchmarkName out;
    if (segments.empty()) return out;

    std::string& file = segments.back();
    strip_extensions(file);
    // PyTorch names a trace <worker>.<ms or ns timestamp>; its default worker name is <host>_<pid>.
    static const std::regex pytorch(R"(^(.*)\.(\d{12,14}|\d{18,19})$)");
    static const std::regex host_pid(R"(^[^.]*_\d+$)");
    std::smatch m;
    if (std::regex_match(file, m, pytorch)) {
        std::string worker = m[1].str();
        file = std::regex_match(worker, host_pid) ? std::string() : worker;
    }
    static const std::regex rank(R"((^|[._-])rank[_-]?(\d+)(?=$|[._-]))", std::regex::icase);
    for (std::string& s : segments) {
        if (std::regex_search(s, m, rank)) {
            if (out.rank.empty()) out.rank = m[2].str();
            s = m.prefix().str() + m[1].str() + m.suffix().str();
        }
        // Dates and times (2026-11-24, 20261124T105700, 2026-11-24_10-57-00) and epoch seconds, ms or ns.
        static const std::regex volatile_parts(
            R"((^|[._-])(\d{4}-\d{2}-\d{2}([T_ ]?\d{2}[-:]?\d{2}([-:]?\d{2})?)?|\d{8}[T_-]?\d{4,6}|\d{10,14}|\d{18,19})(?=$|[._-]))");
        s = std::regex_replace(s, volatile_parts, "$1");
        s = tidy(std::move(s));
    }
    std::string name;
    for (const std::string& s : segments) {
        if (s.empty()) continue;
        if (!name.empty()) name += '/';
        name += s;
    }
    out.name = std::move(name);
    return out;
}

}  // namespace perfwatch
