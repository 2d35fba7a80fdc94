#include "engine/series_index.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace perfwatch {

namespace {

constexpr auto k_environment_labels = std::to_array<std::string_view>({
    "tool_version", "driver", "cuda_driver", "cuda_runtime", "cupti", "rocm", "clocks", "sm_clock", "memory_clock",
    "power_limit",
});

}  // namespace

bool is_environment_label(std::string_view key) {
    return std::find(k_environment_labels.begin(), k_environment_labels.end(), key) != k_environment_labels.end();
}

Labels parse_labels_key(std::string_view text) {
    Labels out;
    std::size_t at = 0;
    while (at < text.size()) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        const std::string_view line = text.substr(at, end - at);
        if (const auto eq = line.find('='); eq != std::string_view::npos)
            out.emplace(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
        at = end + 1;
    }
    return out;
}

std::string series_title(std::string_view key) {
    std::map<std::string, std::string> parts;
    std::size_t at = 0;
    while (at < key.size()) {
        const std::size_t end = std::min(key.find(';', at), key.size());
        const std::string_view item = key.substr(at, end - at);
        if (const auto eq = item.find('='); eq != std::string_view::npos)
            parts[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
        at = end + 1;
    }
    std::string out = parts.contains("benchmark") ? parts["benchmark"] : "(no benchmark)";
    if (!parts["gpu"].empty()) out += " on " + parts["gpu"];
    if (!parts["branch"].empty()) out += ", " + parts["branch"];
    for (const auto& [k, v] : parts)
        if (k != "benchmark" && k != "gpu" && k != "branch") out += fmt::format(", {}={}", k, v);
    return out;
}

SeriesIndex::SeriesIndex(const std::vector<RunIndexRow>& rows, const BaselineSpec& spec) {
    std::map<std::string, std::size_t> by_key;
    for (const RunIndexRow& row : rows) {
        const Labels labels = parse_labels_key(row.labels_key);
        const std::string key = series_key(labels, spec);
        auto [it, added] = by_key.emplace(key, m_series.size());
        if (added) {
            SeriesEntry e;
            e.key = key;
            for (const auto& [k, v] : labels)
                if (!is_identity_label(k) || k == "branch") e.labels.emplace(k, v);
            if (!e.labels.contains("branch")) e.labels.emplace("branch", spec.branch);
            e.format = row.format;
            m_series.push_back(std::move(e));
        }
        SeriesRun run{row.id, label_value(labels, "commit"), row.ingested_at, {}};
        for (const auto& [k, v] : labels)
            if (is_environment_label(k)) run.environment += (run.environment.empty() ? "" : " ") + k + "=" + v;
        m_series[it->second].runs.push_back(std::move(run));
    }
    // By key, so lists are stable; then the run map.
    std::sort(m_series.begin(), m_series.end(), [](const SeriesEntry& a, const SeriesEntry& b) { return a.key < b.key; });
    for (std::size_t s = 0; s < m_series.size(); ++s)
        for (std::size_t i = 0; i < m_series[s].runs.size(); ++i) m_runs.emplace(m_series[s].runs[i].id, std::pair{s, i});
}

const SeriesEntry* SeriesIndex::find(std::string_view key) const {
    auto it = std::lower_bound(m_series.begin(), m_series.end(), key,
                               [](const SeriesEntry& e, std::string_view k) { return e.key < k; });
    return it != m_series.end() && it->key == key ? &*it : nullptr;
}

const SeriesEntry* SeriesIndex::of_run(std::int64_t run) const {
    auto it = m_runs.find(run);
    return it == m_runs.end() ? nullptr : &m_series[it->second.first];
}

std::size_t SeriesIndex::position(std::int64_t run) const {
    auto it = m_runs.find(run);
    return it == m_runs.end() ? std::string::npos : it->second.second;
}

}  // namespace perfwatch
