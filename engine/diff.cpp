#include "engine/diff.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/history.hpp"

namespace perfwatch {

std::string_view to_string(DiffEntry::Status status) {
    switch (status) {
        case DiffEntry::Status::added: return "added";
        case DiffEntry::Status::removed: return "removed";
        case DiffEntry::Status::slower: return "slower";
        case DiffEntry::Status::faster: return "faster";
        case DiffEntry::Status::unchanged: return "unchanged";
    }
    return "unchanged";
}

namespace {

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

RunDiff diff_runs(const RunBatch& a, const RunBatch& b, const DiffOptions& options) {
    RunDiff out;
    std::map<std::string, const Entity*> before, after;
    for (const Entity& e : a.entities)
        if (e.kind == options.kind) before.emplace(e.name, &e);
    for (const Entity& e : b.entities)
        if (e.kind == options.kind) after.emplace(e.name, &e);

    Baseline baseline;
    baseline.runs.push_back(StoredRun{0, "", a});
    const RunHistory history(std::move(baseline), b);
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
            const std::string_view metric = e->value("duration_mean") ? "duration_mean" : "duration";
            const auto cmp = history.compare(*e, metric);
            d.change_pct = cmp ? cmp->change_pct : (sa.mean > 0 ? 100 * (sb.mean - sa.mean) / sa.mean : 0);
            const bool tested = cmp && cmp->rank_test;
            if (tested) d.confidence = d.change_pct >= 0 ? cmp->confidence_up : cmp->confidence_down;
            const bool confident = !tested || *d.confidence >= options.confidence;
            if (std::fabs(d.change_pct) >= options.min_change_pct && confident)
                d.status = d.change_pct > 0 ? DiffEntry::Status::slower : DiffEntry::Status::faster;
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
        switch (d.status) {
            case DiffEntry::Status::added: ++out.added; break;
            case DiffEntry::Status::removed: ++out.removed; break;
            case DiffEntry::Status::slower: ++out.slower; break;
            case DiffEntry::Status::faster: ++out.faster; break;
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
