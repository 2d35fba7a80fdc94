#include "core/model.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace perfwatch {

namespace {
constexpr std::array<std::pair<EntityKind, std::string_view>, 10> k_entity_kinds{{
    {EntityKind::run, "run"},
    {EntityKind::device, "device"},
    {EntityKind::kernel, "kernel"},
    {EntityKind::launch, "launch"},
    {EntityKind::nvtx_range, "nvtx_range"},
    {EntityKind::api_call, "api_call"},
    {EntityKind::memcpy, "memcpy"},
    {EntityKind::collective, "collective"},
    {EntityKind::rank, "rank"},
    {EntityKind::op, "op"},
}};
}  // namespace

std::string_view to_string(EntityKind kind) {
    for (const auto& [k, name] : k_entity_kinds)
        if (k == kind) return name;
    return "unknown";
}

std::optional<EntityKind> entity_kind_from_string(std::string_view text) {
    for (const auto& [k, name] : k_entity_kinds)
        if (name == text) return k;
    return std::nullopt;
}

namespace {

// A key's four names by identity.
using NamesId = std::array<std::uintptr_t, 4>;

struct NamesIdHash {
    std::size_t operator()(const NamesId& id) const noexcept {
        std::size_t h = 0;
        for (std::uintptr_t part : id) h = (h ^ part) * 0x100000001b3ULL;
        return h ^ (h >> 32);  // the high bits into the low ones, which addresses leave at zero
    }
};

using KeyTable = detail::InternTable<MetricNames, NamesId, NamesIdHash>;

NamesId names_id(const MetricNames& n) {
    return {n.name.identity(), n.unit.identity(), n.tool_name.identity(), n.tool_unit.identity()};
}

// The interned keys, costed in keys.
KeyTable& key_table() {
    static KeyTable* t = new KeyTable(k_max_metric_keys);  // never destroyed, as Symbol's table
    return *t;
}

}  // namespace

MetricKey::MetricKey(Symbol name, Symbol unit, Symbol tool_name, Symbol tool_unit) {
    MetricNames names{std::move(name), std::move(unit), std::move(tool_name), std::move(tool_unit)};
    if (names == MetricNames{}) return;
    // A counted name has no lasting identity: its key is counted too.
    if (!names.name.interned() || !names.unit.interned() || !names.tool_name.interned() || !names.tool_unit.interned()) {
        adopt(new Node(std::move(names)), true);
        return;
    }
    intern(
        key_table(), names_id(names), 1, [&] { return new Node(names); }, names_id);
}

const MetricNames& MetricKey::no_names() noexcept {
    static const MetricNames k_none;
    return k_none;
}

std::size_t MetricKey::interned_count() { return key_table().cost(); }

const Metric* Entity::metric(std::string_view metric_name) const {
    // Size, last and first characters before the full compare: most names differ there.
    const std::size_t n = metric_name.size();
    if (n == 0) return nullptr;
    for (const Metric& m : metrics) {
        const std::string_view text = m.name();
        if (text.size() == n && text[n - 1] == metric_name[n - 1] && text[0] == metric_name[0] && text == metric_name)
            return &m;
    }
    return nullptr;
}

std::optional<double> Entity::value(std::string_view metric_name) const {
    const Metric* m = metric(metric_name);
    if (m == nullptr) return std::nullopt;
    return m->value;
}

void Entity::set(Metric m) {
    auto it = std::find_if(metrics.begin(), metrics.end(), [&](const Metric& x) { return x.name() == m.name(); });
    if (it == metrics.end())
        metrics.push_back(std::move(m));
    else
        *it = std::move(m);
}

void Entity::shrink_to_fit() {
    metrics.shrink_to_fit();
    attributes.shrink_to_fit();
}

std::size_t RunBatch::run_entity() {
    for (std::size_t i = 0; i < entities.size(); ++i)
        if (entities[i].kind == EntityKind::run) return i;
    Entity e;
    e.kind = EntityKind::run;
    e.name = "run";
    entities.push_back(std::move(e));
    return entities.size() - 1;
}

}  // namespace perfwatch

namespace perfwatch {

std::string_view to_string(Severity severity) {
    switch (severity) {
        case Severity::info: return "info";
        case Severity::warning: return "warning";
        case Severity::error: return "error";
    }
    return "info";
}

std::optional<Severity> severity_from_string(std::string_view text) {
    if (text == "info") return Severity::info;
    if (text == "warning") return Severity::warning;
    if (text == "error") return Severity::error;
    return std::nullopt;
}

std::vector<double> evenly_spaced(const std::vector<double>& values, std::size_t max) {
    if (values.size() <= max || max == 0) return values;
    std::vector<double> out;
    out.reserve(max);
    const double step = static_cast<double>(values.size()) / static_cast<double>(max);
    for (std::size_t i = 0; i < max; ++i) out.push_back(values[static_cast<std::size_t>(static_cast<double>(i) * step)]);
    return out;
}

std::string label_value(const std::map<std::string, std::string>& labels, const std::string& key) {
    const auto it = labels.find(key);
    return it == labels.end() ? std::string() : it->second;
}

std::string labels_text(const std::map<std::string, std::string>& labels) {
    std::string out;
    for (const auto& [k, v] : labels) out += (out.empty() ? "" : " ") + k + "=" + v;
    return out;
}

std::string labels_key(const std::map<std::string, std::string>& labels) {
    std::string out;
    for (const auto& [k, v] : labels) out += k + "=" + v + "\n";
    return out;
}

}  // namespace perfwatch
