#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "core/model.hpp"
#include "core/vocabulary.hpp"
#include "engine/expr.hpp"
#include "engine/history.hpp"

// How rules read a run: one entity at a time (EntityScope) or the entities of a kind as rows
// (RunRows), with the same values.
namespace perfwatch {

// A hash index of one entity's metric names (open addressing, positions + 1): rules look up
// the same entity's metrics many times, and a missing metric would otherwise cost a full scan.
class MetricIndex {
public:
    explicit MetricIndex(const Entity& e) {
        std::size_t capacity = 8;
        while (capacity < 2 * e.metrics.size()) capacity *= 2;
        m_mask = capacity - 1;
        m_slots.assign(capacity, 0);
        for (std::size_t i = 0; i < e.metrics.size() && i < 0xffff; ++i) {
            std::size_t at = hash(e.metrics[i].name()) & m_mask;
            while (m_slots[at] != 0) at = (at + 1) & m_mask;
            m_slots[at] = static_cast<std::uint16_t>(i + 1);
        }
    }

    // The metric of `e` (the entity indexed) named `name`, or nullptr.
    const Metric* find(const Entity& e, std::string_view name) const {
        for (std::size_t at = hash(name) & m_mask;; at = (at + 1) & m_mask) {
            const std::uint16_t slot = m_slots[at];
            if (slot == 0) return nullptr;
            const Metric& m = e.metrics[slot - 1u];
            if (m.name() == name) return &m;
        }
    }

private:
    static std::size_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
    std::size_t m_mask = 0;
    std::vector<std::uint16_t> m_slots;
};

// One entity of a run as an expression reads it: its metrics (through `index` when given) and
// attributes, the run's metrics, the run's other entities for aggregates, and the baseline.
class EntityScope final : public EvalScope {
public:
    EntityScope(const Entity& entity, const Entity* run, const RunBatch* batch = nullptr, AggregateMemo* memo = nullptr,
                const RunHistory* history = nullptr, std::int64_t run_id = 0, const MetricIndex* index = nullptr)
        : m_entity(entity), m_run(run), m_batch(batch), m_memo(memo), m_history(history), m_run_id(run_id),
          m_index(index) {}

    std::optional<double> metric(std::string_view name) const override {
        const Metric* m = m_index != nullptr ? m_index->find(m_entity, name) : m_entity.metric(name);
        if (m == nullptr) return std::nullopt;
        return m->value;
    }

    std::optional<double> run_metric(std::string_view name) const override {
        if (m_run == nullptr) return std::nullopt;
        return m_run->value(name);
    }

    std::optional<std::string> attribute(std::string_view name) const override {
        if (name == "name") return m_entity.name;
        if (name == "kind") return std::string(to_string(m_entity.kind));
        auto it = m_entity.attributes.find(std::string(name));
        if (it == m_entity.attributes.end()) return std::nullopt;
        return it->second;
    }

    void for_each_entity(std::string_view kind, const std::function<void(const EvalScope&)>& fn) const override {
        if (m_batch == nullptr) return;
        const auto k = entity_kind_from_string(kind);
        if (!k) return;
        for (const Entity& e : m_batch->entities)
            if (e.kind == *k) fn(EntityScope(e, m_run, m_batch, m_memo, m_history, m_run_id));
    }

    AggregateMemo* memo() const override { return m_memo; }

    std::optional<Comparison> compare(std::string_view metric, bool run_level) const override {
        const Entity* e = subject(run_level);
        if (e == nullptr) return std::nullopt;
        return m_history->compare(*e, metric);
    }

    std::optional<double> latest_baseline(std::string_view metric, bool run_level) const override {
        const Entity* e = subject(run_level);
        if (e == nullptr) return std::nullopt;
        return m_history->latest(*e, metric);
    }

    std::optional<bool> is_new() const override {
        if (m_history == nullptr) return std::nullopt;
        return m_history->is_new(m_entity);
    }

    std::optional<std::vector<std::string>> vanished(std::string_view kind) const override {
        const auto k = entity_kind_from_string(kind);
        if (m_history == nullptr || !k) return std::nullopt;
        return m_history->vanished(*k);
    }

    std::optional<std::string> first_bad(std::string_view metric, bool run_level) const override {
        const Entity* e = subject(run_level);
        if (e == nullptr || m_batch == nullptr) return std::nullopt;
        const auto run = m_history->first_bad_run(*e, metric, m_run_id);
        if (!run) return std::nullopt;
        return m_history->describe_run(*run, m_batch->labels);
    }

    std::optional<std::string> last_good(std::string_view metric, bool run_level) const override {
        const Entity* e = subject(run_level);
        if (e == nullptr || m_batch == nullptr || m_history == nullptr) return std::nullopt;
        const auto run = m_history->last_good_run(*e, metric, m_run_id);
        if (!run) return std::nullopt;
        return fmt::format("{} at {}", m_history->describe_run(run->first, m_batch->labels),
                           format_metric(metric.starts_with("run.") ? metric.substr(4) : metric, run->second));
    }

    std::optional<UniformChange> uniform_change(std::string_view metric) const override {
        if (m_history == nullptr) return std::nullopt;
        return m_history->uniform_change(metric);
    }

    std::optional<std::string> changed_labels() const override {
        if (m_history == nullptr) return std::nullopt;
        return m_history->changed_labels();
    }

private:
    // The entity history functions read: this one, or the run for run.METRIC; nullptr without history.
    const Entity* subject(bool run_level) const {
        if (m_history == nullptr) return nullptr;
        return run_level ? m_run : &m_entity;
    }

    const Entity& m_entity;
    const Entity* m_run;
    const RunBatch* m_batch;
    AggregateMemo* m_memo;
    const RunHistory* m_history;
    std::int64_t m_run_id;
    const MetricIndex* m_index;
};

// The entities of one kind in a run as rows. The metrics its rules read are gathered into columns
// in one pass, shared by every rule of the kind. Entities whose metric names stand in the same
// places (those one reader writes) share a layout, so a column costs a load per row, not a lookup.
class RunRows final : public RowScope {
public:
    // Fewer rows than twice this are gathered on the calling thread alone.
    static constexpr std::size_t k_rows_per_thread = 20000;

    RunRows(const RunBatch& batch, EntityKind kind, const Entity* run, AggregateMemo* memo, std::int64_t run_id)
        : m_batch(batch), m_run(run), m_memo(memo), m_run_id(run_id), m_kind_name(to_string(kind)) {
        for (std::size_t i = 0; i < batch.entities.size(); ++i)
            if (batch.entities[i].kind == kind) m_entities.push_back(i);
    }

    // The baseline history functions read for the rule being evaluated (nullptr: none).
    void set_history(const RunHistory* history) { m_history = history; }
    // The index into the batch's entities of row `row`.
    std::size_t entity(std::size_t row) const { return m_entities[row]; }

    // Gathers the columns of `names` (run.METRIC names left out) in one pass over the rows, each
    // entity's metrics read once while they are in cache.
    void gather(const std::set<std::string>& names) {
        std::vector<const std::string*> wanted;
        for (const std::string& n : names)
            if (!n.starts_with("run.") && !m_columns.contains(n)) wanted.push_back(&n);
        if (wanted.empty() || m_entities.empty()) return;
        const std::size_t k = wanted.size();
        std::vector<MetricColumn*> out(k);
        for (std::size_t j = 0; j < k; ++j) {
            MetricColumn& c = m_columns[*wanted[j]];
            c.values = std::make_unique_for_overwrite<double[]>(m_entities.size());
            c.has.assign(m_entities.size(), 0);
            out[j] = &c;
        }
        // Another entity shares `example`'s layout when its metric keys (so their names) are the same,
        // in order: one compare of interned keys per metric.
        const auto same_places = [](const Entity& example, const Entity& e) {
            return std::equal(example.metrics.begin(), example.metrics.end(), e.metrics.begin(), e.metrics.end(),
                              [](const Metric& a, const Metric& b) { return a.key == b.key; });
        };
        // Rows [begin, end): the rows split in two are gathered on two threads (the work waits on
        // memory: each entity's metrics sit apart on the heap).
        const auto gather_rows = [&](std::size_t begin, std::size_t end) {
            const Entity* example = nullptr;
            std::vector<std::int64_t> at(k, -1);  // each wanted name's place in the example's layout
            for (std::size_t r = begin; r < end; ++r) {
                const Entity& e = m_batch.entities[m_entities[r]];
                if (example == nullptr || !same_places(*example, e)) {
                    example = &e;
                    std::unordered_map<std::string_view, std::int64_t> place;
                    for (std::size_t q = 0; q < e.metrics.size(); ++q)
                        place.emplace(e.metrics[q].name(), static_cast<std::int64_t>(q));
                    for (std::size_t j = 0; j < k; ++j) {
                        const auto it = place.find(*wanted[j]);
                        at[j] = it == place.end() ? -1 : it->second;
                    }
                }
                const Metric* metrics = e.metrics.data();
                for (std::size_t j = 0; j < k; ++j) {
                    if (at[j] < 0) continue;
                    out[j]->values[r] = metrics[at[j]].value;
                    out[j]->has[r] = 1;
                }
            }
        };
        const std::size_t n = m_entities.size();
        if (n >= k_rows_per_thread * 2 && std::thread::hardware_concurrency() >= 2) {
            std::jthread half(gather_rows, n / 2, n);
            gather_rows(0, n / 2);
        } else {
            gather_rows(0, n);
        }
    }

    std::size_t rows() const override { return m_entities.size(); }

    Column metric_column(std::string_view name) const override {
        const MetricColumn& c = column(name);
        return {c.values.get(), c.has.data()};
    }

    // The metric on one row, from its column.
    std::optional<double> metric(std::size_t row, std::string_view name) const {
        const MetricColumn& c = column(name);
        if (!c.has[row]) return std::nullopt;
        return c.values[row];
    }

    std::optional<double> run_metric(std::string_view name) const override {
        if (m_run == nullptr) return std::nullopt;
        return m_run->value(name);
    }

    const std::string* attribute(std::size_t row, std::string_view name) const override {
        const Entity& e = m_batch.entities[m_entities[row]];
        if (name == "name") return &e.name;
        if (name == "kind") return &m_kind_name;
        auto it = m_attributes.find(name);
        if (it == m_attributes.end()) {
            std::vector<const std::string*> column(m_entities.size(), nullptr);
            const std::string key(name);
            for (std::size_t r = 0; r < m_entities.size(); ++r) {
                const auto& attributes = m_batch.entities[m_entities[r]].attributes;
                if (auto a = attributes.find(key); a != attributes.end()) column[r] = &a->second;
            }
            it = m_attributes.emplace(key, std::move(column)).first;
        }
        return it->second[row];
    }

    void with_row(std::size_t row, const std::function<void(const EvalScope&)>& fn) const override {
        fn(EntityScope(m_batch.entities[m_entities[row]], m_run, &m_batch, m_memo, m_history, m_run_id));
    }

    bool has_history() const override { return m_history != nullptr; }

    std::vector<std::int8_t>* shared_column(const void* key) const override {
        auto& c = m_shared[key];
        if (c.empty()) c.assign(m_entities.size(), -1);
        return &c;
    }

private:
    struct MetricColumn {
        // Written only where `has` is 1 (pages of a metric the rows lack are never touched).
        std::unique_ptr<double[]> values;
        std::vector<std::uint8_t> has;
    };

    // A column gather() did not make (a metric only metric("...") names): looked up row by row.
    const MetricColumn& column(std::string_view name) const {
        auto it = m_columns.find(name);
        if (it != m_columns.end()) return it->second;
        MetricColumn c;
        c.values = std::make_unique_for_overwrite<double[]>(m_entities.size());
        c.has.assign(m_entities.size(), 0);
        for (std::size_t r = 0; r < m_entities.size(); ++r)
            if (const Metric* m = m_batch.entities[m_entities[r]].metric(name)) {
                c.values[r] = m->value;
                c.has[r] = 1;
            }
        return m_columns.emplace(std::string(name), std::move(c)).first->second;
    }

    const RunBatch& m_batch;
    const Entity* m_run;
    AggregateMemo* m_memo;
    std::int64_t m_run_id;
    const std::string m_kind_name;  // every row's kind, for the `kind` attribute
    const RunHistory* m_history = nullptr;
    std::vector<std::size_t> m_entities;  // row -> index into the batch's entities
    mutable std::map<std::string, MetricColumn, std::less<>> m_columns;
    mutable std::map<std::string, std::vector<const std::string*>, std::less<>> m_attributes;
    mutable std::map<const void*, std::vector<std::int8_t>> m_shared;
};

}  // namespace perfwatch
