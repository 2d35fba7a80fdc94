#include "engine/diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "engine/expr.hpp"
#include "engine/history.hpp"

namespace perfwatch {

std::string_view to_string(DiffEntry::Status status) {
    switch (status) {
        case DiffEntry::Status::added: return "added";
        case DiffEntry::Status::removed: return "removed";
        case DiffEntry::Status::slower: return "slower";
        case DiffEntry::Status::faster: return "faster";
        case DiffEntry::Status::count_changed: return "count changed";
        case DiffEntry::Status::unchanged: return "unchanged";
    }
    return "unchanged";
}

bool is_deterministic_metric(std::string_view metric) {
    static constexpr std::array<std::string_view, 14> k_metrics{
        "registers_per_thread", "grid_size",       "block_size",          "shared_mem_per_block",
        "active_blocks_per_sm", "block_limit_sm",  "block_limit_registers", "block_limit_shared_mem",
        "block_limit_warps",    "block_limit_barriers", "instructions_executed", "occupancy_theoretical",
        "vgpr_count",           "sgpr_count"};
    return std::find(k_metrics.begin(), k_metrics.end(), metric) != k_metrics.end();
}

namespace {

std::vector<std::string> property_changes(const Entity& a, const Entity& b) {
    std::map<std::string, std::pair<std::optional<double>, std::optional<double>>> props;
    for (const Metric& m : a.metrics)
        if (is_deterministic_metric(m.name())) props[m.name()].first = m.value;
    for (const Metric& m : b.metrics)
        if (is_deterministic_metric(m.name())) props[m.name()].second = m.value;
    std::vector<std::string> out;
    for (const auto& [name, v] : props) {
        if (v.first && v.second && *v.first == *v.second) continue;
        out.push_back(fmt::format("{} {} -> {}", name, v.first ? format_value(*v.first) : "absent",
                                  v.second ? format_value(*v.second) : "absent"));
    }
    for (const char* attr : {"occupancy_limiter"}) {
        auto x = a.attributes.find(attr), y = b.attributes.find(attr);
        const std::string before = x == a.attributes.end() ? "absent" : x->second;
        const std::string after = y == b.attributes.end() ? "absent" : y->second;
        if (before != after) out.push_back(fmt::format("{} {} -> {}", attr, before, after));
    }
    return out;
}

struct Side {
    double count = 0, total = 0, mean = 0;
};

Side side_of(const Entity& e) {
    Side s;
    s.count = e.value("launches").value_or(e.value("count").value_or(1));
    s.total = e.value("duration_total").value_or(e.value("duration").value_or(0) * s.count);
    s.mean = e.value("duration_mean").value_or(s.count > 0 ? s.total / s.count : 0);
    return s;
}

}  // namespace

RunDiff diff_runs(RunBatch a, const RunBatch& b, const DiffOptions& options) {
    RunDiff out;
    Baseline baseline;
    baseline.runs.push_back(std::make_shared<const StoredRun>(StoredRun{0, "", std::move(a), std::nullopt}));
    baseline.given = true;
    const RunHistory history(std::move(baseline), b);
    std::map<std::string, const Entity*> before, after;
    for (const Entity& e : history.baseline().runs.front()->batch.entities)
        if (e.kind == options.kind) before.emplace(e.name, &e);
    for (const Entity& e : b.entities)
        if (e.kind == options.kind) after.emplace(e.name, &e);
    for (const auto& [name, e] : after) {
        DiffEntry d;
        d.name = name;
        const Side sb = side_of(*e);
        d.count_b = sb.count;
        d.total_b = sb.total;
        d.mean_b = sb.mean;
        auto it = before.find(name);
        if (it == before.end()) {
            d.status = DiffEntry::Status::added;
        } else {
            const Side sa = side_of(*it->second);
            d.count_a = sa.count;
            d.total_a = sa.total;
            d.mean_a = sa.mean;
            d.property_changes = property_changes(*it->second, *e);
            const std::string_view metric = e->value("duration_mean") ? "duration_mean" : "duration";
            const auto cmp = history.compare(*e, metric);
            d.change_pct = cmp ? cmp->change_pct : (sa.mean > 0 ? 100 * (sb.mean - sa.mean) / sa.mean : 0);
            const bool tested = cmp && cmp->rank_test;
            if (tested) d.confidence = d.change_pct >= 0 ? cmp->confidence_up : cmp->confidence_down;
            const bool confident = !tested || *d.confidence >= options.confidence;
            if (std::fabs(d.change_pct) >= options.min_change_pct && confident)
                d.status = d.change_pct > 0 ? DiffEntry::Status::slower : DiffEntry::Status::faster;
            else if (sa.count != sb.count)
                d.status = DiffEntry::Status::count_changed;
        }
        out.entries.push_back(std::move(d));
    }
    for (const auto& [name, e] : before) {
        if (after.contains(name)) continue;
        DiffEntry d;
        d.name = name;
        d.status = DiffEntry::Status::removed;
        const Side sa = side_of(*e);
        d.count_a = sa.count;
        d.total_a = sa.total;
        d.mean_a = sa.mean;
        out.entries.push_back(std::move(d));
    }
    for (const DiffEntry& d : out.entries) {
        out.total_a += d.total_a;
        out.total_b += d.total_b;
        out.count_a += d.count_a;
        out.count_b += d.count_b;
        switch (d.status) {
            case DiffEntry::Status::added: ++out.added; break;
            case DiffEntry::Status::removed: ++out.removed; break;
            case DiffEntry::Status::slower: ++out.slower; break;
            case DiffEntry::Status::faster: ++out.faster; break;
            case DiffEntry::Status::count_changed: ++out.count_changed; break;
            case DiffEntry::Status::unchanged: ++out.unchanged; break;
        }
    }
    std::stable_sort(out.entries.begin(), out.entries.end(), [](const DiffEntry& x, const DiffEntry& y) {
        const double dx = std::fabs(x.total_b - x.total_a), dy = std::fabs(y.total_b - y.total_a);
        if (dx != dy) return dx > dy;
        return x.name < y.name;
    });
    return out;
}

}  // namespace perfwatch
