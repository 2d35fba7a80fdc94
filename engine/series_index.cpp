#include "engine/series_index.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <tuple>

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

std::size_t SeriesEntry::position_from(std::int64_t run) const {
    return static_cast<std::size_t>(
        std::lower_bound(runs.begin(), runs.end(), run, [](const SeriesRun& a, std::int64_t v) { return a.id < v; }) -
        runs.begin());
}

SeriesIndex::SeriesIndex(const std::vector<RunIndexRow>& rows, const BaselineSpec& spec) : m_spec(spec) { add(rows); }

void SeriesIndex::add(const std::vector<RunIndexRow>& rows) {
    for (const RunIndexRow& row : rows) {
        const Labels labels = parse_labels_key(row.labels_key);
        std::string key = series_key(labels, m_spec);
        auto it = m_series.find(key);
        if (it == m_series.end()) {
            SeriesEntry e;
            e.key = key;
            for (const auto& [k, v] : labels)
                if (!is_identity_label(k) || k == "branch") e.labels.emplace(k, v);
            if (!e.labels.contains("branch")) e.labels.emplace("branch", m_spec.branch);
            e.format = row.format;
            it = m_series.emplace(std::move(key), std::move(e)).first;
        }
        SeriesRun run{row.id, label_value(labels, "commit"), row.ingested_at, {}};
        for (const auto& [k, v] : labels)
            if (is_environment_label(k)) run.environment += (run.environment.empty() ? "" : " ") + k + "=" + v;
        SeriesEntry& entry = it->second;
        m_runs[row.id] = {&entry, entry.runs.size()};
        entry.runs.push_back(std::move(run));
        m_newest = std::max(m_newest, row.id);
    }
}

std::vector<const SeriesEntry*> SeriesIndex::series() const {
    std::vector<const SeriesEntry*> out;
    out.reserve(m_series.size());
    for (const auto& [key, entry] : m_series) out.push_back(&entry);
    return out;
}

const SeriesEntry* SeriesIndex::find(std::string_view key) const {
    auto it = m_series.find(key);
    return it == m_series.end() ? nullptr : &it->second;
}

const SeriesEntry* SeriesIndex::of_run(std::int64_t run) const {
    auto it = m_runs.find(run);
    return it == m_runs.end() ? nullptr : it->second.first;
}

std::size_t SeriesIndex::position(std::int64_t run) const {
    auto it = m_runs.find(run);
    return it == m_runs.end() ? std::string::npos : it->second.second;
}

Result<std::vector<BisectEnds>> bisect_ends(const Db& db, const SeriesIndex& index,
                                            const std::vector<const RegressionState*>& regressions) {
    std::vector<BisectEnds> out(regressions.size());
    // Runs whose values are needed, per entity and metric.
    std::map<std::tuple<EntityKind, std::string, std::string>, std::vector<std::int64_t>> wanted;
    for (std::size_t i = 0; i < regressions.size(); ++i) {
        const RegressionState& r = *regressions[i];
        BisectEnds& e = out[i];
        e.first_bad_run = r.first_bad_run.value_or(r.opened_run);
        const SeriesEntry* s = index.find(r.series);
        if (s != nullptr) {
            const auto it = s->runs.begin() + static_cast<std::ptrdiff_t>(s->position_from(e.first_bad_run));
            if (it != s->runs.end() && it->id == e.first_bad_run) e.first_bad_commit = it->commit;
            if (it != s->runs.begin()) {
                e.last_good_run = std::prev(it)->id;
                e.last_good_commit = std::prev(it)->commit;
            }
        } else if (const SeriesEntry* of = index.of_run(e.first_bad_run); of != nullptr) {
            e.first_bad_commit = of->runs[index.position(e.first_bad_run)].commit;
        }
        auto& runs = wanted[{r.entity_kind, r.entity_kind == EntityKind::run ? std::string() : r.entity_name, r.metric}];
        runs.push_back(e.first_bad_run);
        if (e.last_good_run) runs.push_back(*e.last_good_run);
    }
    std::map<std::tuple<EntityKind, std::string, std::string>, std::map<std::int64_t, RunValue>> values;
    for (auto& [key, runs] : wanted) {
        std::sort(runs.begin(), runs.end());
        runs.erase(std::unique(runs.begin(), runs.end()), runs.end());
        const auto& [kind, name, metric] = key;
        auto v = db.browse().metric_values(kind, kind == EntityKind::run ? std::nullopt : std::optional(name), metric, runs);
        if (!v) return std::unexpected(v.error());
        values[key] = std::move(*v);
    }
    for (std::size_t i = 0; i < regressions.size(); ++i) {
        const RegressionState& r = *regressions[i];
        const auto& v = values[{r.entity_kind, r.entity_kind == EntityKind::run ? std::string() : r.entity_name, r.metric}];
        BisectEnds& e = out[i];
        if (auto it = v.find(e.first_bad_run); it != v.end()) e.first_bad_value = it->second.value;
        if (e.last_good_run)
            if (auto it = v.find(*e.last_good_run); it != v.end()) e.last_good_value = it->second.value;
    }
    return out;
}

}  // namespace perfwatch
