#include "engine/history.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>

namespace perfwatch {

namespace {

constexpr auto k_identity_labels = std::to_array<std::string_view>({
    "commit", "branch", "build", "build_id", "pipeline", "job", "job_id", "time", "date", "timestamp",
    "tool_version", "host", "hostname",
});

std::string branch_of(const Labels& labels, const std::string& default_branch) {
    auto it = labels.find("branch");
    return it == labels.end() ? default_branch : it->second;
}

}  // namespace

bool is_identity_label(std::string_view key) {
    return std::find(k_identity_labels.begin(), k_identity_labels.end(), key) != k_identity_labels.end();
}

std::string gpu_of(const Labels& labels) { return label_value(labels, "gpu"); }

bool comparable(const Labels& a, const Labels& b, const std::vector<std::string>& match) {
    if (gpu_of(a) != gpu_of(b) || label_value(a, "benchmark") != label_value(b, "benchmark")) return false;
    if (!match.empty()) {
        for (const std::string& k : match)
            if (label_value(a, k) != label_value(b, k)) return false;
        return true;
    }
    auto config = [](const Labels& l) {
        Labels out;
        for (const auto& [k, v] : l)
            if (!is_identity_label(k)) out.emplace(k, v);
        return out;
    };
    return config(a) == config(b);
}

std::string series_key(const Labels& labels, const BaselineSpec& spec) {
    std::string key;
    for (const auto& [k, v] : labels) {
        if (k == "gpu" || is_identity_label(k)) continue;
        if (k != "benchmark" && !spec.match.empty() && std::find(spec.match.begin(), spec.match.end(), k) == spec.match.end()) continue;
        key += fmt::format("{}={};", k, v);
    }
    return key + fmt::format("gpu={};branch={}", gpu_of(labels), branch_of(labels, spec.branch));
}

namespace {

// Comparable runs stored before `before`, newest first, at most `limit`, on `branch` when given.
Result<std::vector<std::int64_t>> comparable_runs(const Db& db, const Labels& labels, const BaselineSpec& spec,
                                                  std::int64_t before, const std::string* branch) {
    // The labels a comparable run must carry go to the query; the rest (labels it must not have,
    // a missing branch counting as the baseline branch) is checked here, a page at a time.
    Labels must;
    for (const auto& [k, v] : labels) {
        const bool config = spec.match.empty() ? !is_identity_label(k)
                                               : std::find(spec.match.begin(), spec.match.end(), k) != spec.match.end();
        if (config || k == "gpu" || k == "benchmark") must.emplace(k, v);
    }
    const std::size_t page = std::max<std::size_t>(4 * spec.runs, 32);
    std::vector<std::int64_t> out;
    while (out.size() < spec.runs) {
        auto candidates = db.find_runs(must, before, page);
        if (!candidates) return std::unexpected(candidates.error());
        for (const RunLabels& r : *candidates) {
            if (out.size() >= spec.runs) break;
            if (branch != nullptr && branch_of(r.labels, spec.branch) != *branch) continue;
            if (comparable(labels, r.labels, spec.match)) out.push_back(r.id);
        }
        if (candidates->size() < page) break;
        before = candidates->back().id;
    }
    return out;
}

Result<void> load_runs(const Db& db, const std::vector<std::int64_t>& newest_first, Baseline& out, RunCache* cache) {
    for (auto it = newest_first.rbegin(); it != newest_first.rend(); ++it) {
        if (cache != nullptr) {
            auto run = cache->get(db, *it);
            if (!run) return std::unexpected(run.error());
            if (*run) out.runs.push_back(std::move(*run));
            continue;
        }
        auto run = db.load(*it);
        if (!run) return std::unexpected(run.error());
        if (*run) out.runs.push_back(std::make_shared<const StoredRun>(std::move(**run)));
    }
    return {};
}

// A rough size in memory of a stored run, for the cache's bound.
std::size_t approx_bytes(const StoredRun& run) {
    std::size_t bytes = sizeof(StoredRun) + run.batch.source.size();
    for (const Entity& e : run.batch.entities) {
        bytes += sizeof(Entity) + e.name.size() + e.metrics.size() * (sizeof(Metric) + 24);
        for (const auto& [k, v] : e.attributes) bytes += 64 + k.size() + v.size();
        for (const auto& [k, v] : e.samples) bytes += 64 + k.size() + v.size() * sizeof(double);
        for (const ToolFinding& f : e.tool_findings) bytes += sizeof(ToolFinding) + f.text.size();
    }
    return bytes;
}

}  // namespace

Result<std::shared_ptr<const StoredRun>> RunCache::get(const Db& db, std::int64_t id) {
    if (auto it = m_slots.find(id); it != m_slots.end()) {
        m_ages.splice(m_ages.begin(), m_ages, it->second.age);
        return it->second.run;
    }
    auto loaded = db.load(id);
    if (!loaded) return std::unexpected(loaded.error());
    if (!*loaded) return std::shared_ptr<const StoredRun>{};
    auto run = std::make_shared<const StoredRun>(std::move(**loaded));
    const std::size_t bytes = approx_bytes(*run);
    m_ages.push_front(id);
    m_slots.emplace(id, Slot{run, bytes, m_ages.begin()});
    m_bytes += bytes;
    while (m_bytes > m_max_bytes && m_ages.size() > 1) {
        auto old = m_slots.find(m_ages.back());
        m_bytes -= old->second.bytes;
        m_slots.erase(old);
        m_ages.pop_back();
    }
    return run;
}

Result<Baseline> select_baseline(const Db& db, const StoredRun& current, const BaselineSpec& spec, RunCache* cache) {
    Baseline out;
    const Labels& labels = current.batch.labels;
    auto pins = db.baseline_pins();
    if (!pins) return std::unexpected(pins.error());
    for (const BaselinePin& pin : *pins) {
        if (pin.run_id >= current.id) continue;
        auto pinned = db.find_runs({}, pin.run_id + 1, 1);
        if (!pinned) return std::unexpected(pinned.error());
        if (pinned->empty() || pinned->front().id != pin.run_id) continue;
        const Labels& pl = pinned->front().labels;
        if (!comparable(labels, pl, spec.match)) continue;
        const std::string branch = branch_of(pl, spec.branch);
        BaselineSpec earlier = spec;
        earlier.runs = spec.runs - 1;
        auto ids = comparable_runs(db, pl, earlier, pin.run_id, &branch);
        if (!ids) return std::unexpected(ids.error());
        ids->insert(ids->begin(), pin.run_id);
        if (auto r = load_runs(db, *ids, out, cache); !r) return std::unexpected(r.error());
        out.description = fmt::format("pinned run {} and {} earlier comparable run(s) on {}", pin.run_id,
                                      ids->size() - 1, branch);
        return out;
    }
    const std::string branch = spec.branch;
    auto ids = comparable_runs(db, labels, spec, current.id, &branch);
    if (!ids) return std::unexpected(ids.error());
    if (auto r = load_runs(db, *ids, out, cache); !r) return std::unexpected(r.error());
    out.description = out.runs.empty() ? fmt::format("no comparable run on {} yet", spec.branch)
                                       : fmt::format("last {} comparable run(s) on {}", out.runs.size(), spec.branch);
    return out;
}

Result<Baseline> explicit_baseline(const Db& db, const StoredRun& current, std::int64_t baseline_run) {
    auto run = db.load(baseline_run);
    if (!run) return std::unexpected(run.error());
    if (!*run) return fail("", 0, fmt::format("no run {} to compare with", baseline_run));
    const std::string a = gpu_of(current.batch.labels), b = gpu_of((*run)->batch.labels);
    if (a != b)
        return fail((*run)->batch.source, 0,
                    fmt::format("baseline run {} ran on {}, run {} on {}: runs on different GPU models are not compared",
                                baseline_run, b.empty() ? "an unknown GPU" : b, current.id,
                                a.empty() ? "an unknown GPU" : a));
    Baseline out;
    out.runs.push_back(std::make_shared<const StoredRun>(std::move(**run)));
    out.given = true;
    out.description = fmt::format("run {} (given)", baseline_run);
    return out;
}

bool uses_duration_samples(std::string_view metric) {
    return metric == "duration" || metric == "duration_mean" || metric == "duration_median";
}

RunHistory::RunHistory(Baseline baseline, const RunBatch& current) : m_baseline(std::move(baseline)), m_current(current) {
    for (const auto& run_ptr : m_baseline.runs) {
        const StoredRun& run = *run_ptr;
        auto& index = m_index.emplace_back();
        for (const Entity& e : run.batch.entities) {
            if (e.kind == EntityKind::launch) continue;
            index.emplace(std::make_pair(e.kind, e.kind == EntityKind::run ? std::string() : e.name), &e);
        }
        index_launches(run.batch);
    }
    index_launches(current);
}

void RunHistory::index_launches(const RunBatch& batch) {
    for (const Entity& e : batch.entities)
        if (e.kind == EntityKind::launch && e.parent >= 0 && static_cast<std::size_t>(e.parent) < batch.entities.size())
            m_launches[&batch.entities[static_cast<std::size_t>(e.parent)]].push_back(&e);
}

const std::vector<const Entity*>& RunHistory::matches(const Entity& entity) const {
    auto [it, fresh] = m_matches.try_emplace(&entity);
    if (fresh) {
        const auto key = std::make_pair(entity.kind, entity.kind == EntityKind::run ? std::string() : entity.name);
        for (const auto& index : m_index) {
            auto found = index.find(key);
            it->second.push_back(found == index.end() ? nullptr : found->second);
        }
    }
    return it->second;
}

std::vector<double> RunHistory::samples_of(const Entity& entity, std::string_view metric) const {
    if (!uses_duration_samples(metric)) return {};
    if (auto it = entity.samples.find("duration"); it != entity.samples.end()) return it->second;
    std::vector<double> out;
    if (auto it = m_launches.find(&entity); it != m_launches.end())
        for (const Entity* l : it->second)
            if (auto v = l->value("duration")) out.push_back(*v);
    return evenly_spaced(out);
}

std::optional<Comparison> RunHistory::compare(const Entity& entity, std::string_view metric) const {
    const auto key = std::make_pair(&entity, std::string(metric));
    if (auto it = m_memo.find(key); it != m_memo.end()) return it->second;
    std::optional<Comparison> result;
    if (const auto current = entity.value(metric)) {
        // Where every run has per-launch samples, the run-to-run test compares their medians: one
        // slow launch (a warm-up, a spike) moves a mean, not a median.
        const std::vector<double> current_samples = samples_of(entity, metric);
        std::vector<double> values, medians, pooled;
        bool all_sampled = current_samples.size() >= 3;
        for (const Entity* e : matches(entity)) {
            if (e == nullptr) continue;
            const auto v = e->value(metric);
            if (!v) continue;
            values.push_back(*v);
            const std::vector<double> s = samples_of(*e, metric);
            all_sampled = all_sampled && s.size() >= 3;
            if (s.size() >= 3) medians.push_back(median(s));
            pooled.insert(pooled.end(), s.begin(), s.end());
        }
        if (!m_baseline.given && values.size() < k_min_history_runs) {
            // Too little history: report the change, test nothing.
            if (!values.empty()) result = compare_to_baseline(*current, {}, values, {}, 0.005, k_min_history_runs);
        } else if (!values.empty()) {
            if (all_sampled) {
                result = compare_to_baseline(median(current_samples), current_samples, medians, pooled);
                result->current = *current;
            } else {
                result = compare_to_baseline(*current, current_samples, values, pooled);
            }
        }
    }
    m_memo.emplace(key, result);
    return result;
}

std::optional<double> RunHistory::level(const Entity& entity, std::string_view metric) const {
    const std::vector<double> s = samples_of(entity, metric);
    if (s.size() >= 3) return median(s);
    return entity.value(metric);
}

std::optional<double> RunHistory::latest(const Entity& entity, std::string_view metric) const {
    const auto& m = matches(entity);
    for (auto it = m.rbegin(); it != m.rend(); ++it)
        if (*it != nullptr)
            if (auto v = (*it)->value(metric)) return v;
    return std::nullopt;
}

std::optional<bool> RunHistory::is_new(const Entity& entity) const {
    if (m_baseline.runs.empty()) return std::nullopt;
    const auto& m = matches(entity);
    return std::all_of(m.begin(), m.end(), [](const Entity* e) { return e == nullptr; });
}

std::optional<std::vector<std::string>> RunHistory::vanished(EntityKind kind) const {
    if (m_baseline.runs.empty()) return std::nullopt;
    std::set<std::string> present;
    for (const Entity& e : m_current.entities)
        if (e.kind == kind) present.insert(e.name);
    std::vector<std::string> out;
    for (const Entity& e : m_baseline.runs.back()->batch.entities)
        if (e.kind == kind && !present.contains(e.name)) out.push_back(e.name);
    return out;
}

std::optional<std::int64_t> RunHistory::first_bad_run(const Entity& entity, std::string_view metric,
                                                      std::int64_t current_run) const {
    const auto current = entity.value(metric);
    if (!current) return std::nullopt;
    std::vector<double> series;
    std::vector<std::int64_t> runs;
    const auto& m = matches(entity);
    for (std::size_t i = 0; i < m.size(); ++i) {
        if (m[i] == nullptr) continue;
        if (auto v = m[i]->value(metric)) {
            series.push_back(*v);
            runs.push_back(m_baseline.runs[i]->id);
        }
    }
    if (series.empty()) return std::nullopt;
    series.push_back(*current);
    runs.push_back(current_run);
    ChangePointOptions o;
    o.min_segment = 2;
    o.min_last = 1;
    o.significance = 0.05;
    const Split s = best_split(series, o);
    if (s.index == 0 || s.p_value > o.significance) return current_run;
    return runs[s.index];
}

std::string RunHistory::describe_run(std::int64_t run_id, const Labels& current_labels) const {
    const Labels* labels = nullptr;
    for (const auto& r : m_baseline.runs)
        if (r->id == run_id) labels = &r->batch.labels;
    if (labels == nullptr) labels = &current_labels;
    const std::string commit = label_value(*labels, "commit");
    return commit.empty() ? fmt::format("run {}", run_id) : fmt::format("commit {} (run {})", commit, run_id);
}

}  // namespace perfwatch
