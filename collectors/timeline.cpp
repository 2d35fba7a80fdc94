#include "collectors/timeline.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace perfwatch {

namespace {

struct Span {
    double start, end;
};

// Merges intervals; returns their union's total length and fills the gaps between them.
double merged_length(std::vector<Span> spans, std::vector<double>* gaps) {
    if (spans.empty()) return 0;
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
    double total = 0;
    Span cur = spans.front();
    for (std::size_t i = 1; i < spans.size(); ++i) {
        if (spans[i].start <= cur.end) {
            cur.end = std::max(cur.end, spans[i].end);
        } else {
            total += cur.end - cur.start;
            if (gaps) gaps->push_back(spans[i].start - cur.end);
            cur = spans[i];
        }
    }
    return total + (cur.end - cur.start);
}

Metric plain(std::string name, double value, std::string unit) {
    return Metric{std::move(name), value, std::move(unit), "", ""};
}

}  // namespace

DurationStats duration_stats(std::vector<double> d) {
    DurationStats s;
    if (d.empty()) return s;
    s.count = static_cast<double>(d.size());
    std::sort(d.begin(), d.end());
    s.min = d.front();
    s.max = d.back();
    for (double x : d) s.total += x;
    s.mean = s.total / s.count;
    double sq = 0;
    for (double x : d) sq += (x - s.mean) * (x - s.mean);
    s.std = std::sqrt(sq / s.count);
    const std::size_t n = d.size();
    s.median = n % 2 == 1 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
    return s;
}

void set_duration_metrics(Entity& e, const DurationStats& s, std::string_view count_name) {
    e.set(plain(std::string(count_name), s.count, "count"));
    e.set(plain("duration_total", s.total, "ns"));
    e.set(plain("duration_mean", s.mean, "ns"));
    if (count_name == "launches") e.set(plain("duration", s.mean, "ns"));
    e.set(plain("duration_min", s.min, "ns"));
    e.set(plain("duration_max", s.max, "ns"));
    e.set(plain("duration_std", s.std, "ns"));
    e.set(plain("duration_median", s.median, "ns"));
}

void build_timeline_entities(RunBatch& batch, std::vector<TimelineEvent> events, const TimelineOptions& options) {
    const std::size_t run_index = batch.run_entity();
    std::stable_sort(events.begin(), events.end(),
                     [](const TimelineEvent& a, const TimelineEvent& b) { return a.start_ns < b.start_ns; });

    // Devices in order of first appearance.
    std::vector<std::string> devices;
    std::unordered_map<std::string, std::size_t> device_of;
    for (const TimelineEvent& e : events)
        if (device_of.try_emplace(e.device, devices.size()).second) devices.push_back(e.device);

    double run_busy = 0, run_idle = 0, run_span_sum = 0, run_overlap = 0, longest_gap = 0;
    double first = 0, last = 0;
    bool any_timed = false;
    std::vector<std::size_t> device_entity(devices.size());
    for (std::size_t d = 0; d < devices.size(); ++d) {
        std::vector<Span> busy, kernels;
        double kernel_sum = 0;
        double launches = 0;
        for (const TimelineEvent& e : events) {
            if (e.device != devices[d]) continue;
            if (e.kind == TimelineEvent::Kind::kernel) ++launches;
            if (e.end_ns < e.start_ns) continue;
            busy.push_back({e.start_ns, e.end_ns});
            if (e.kind == TimelineEvent::Kind::kernel) {
                kernels.push_back({e.start_ns, e.end_ns});
                kernel_sum += e.end_ns - e.start_ns;
            }
        }
        Entity dev;
        dev.kind = EntityKind::device;
        dev.name = devices[d];
        dev.parent = static_cast<std::int64_t>(run_index);
        dev.set(plain("launches", launches, "count"));
        if (!busy.empty()) {
            std::vector<double> gaps;
            const double busy_time = merged_length(busy, &gaps);
            double lo = busy.front().start, hi = busy.front().end;
            for (const Span& s : busy) {
                lo = std::min(lo, s.start);
                hi = std::max(hi, s.end);
            }
            const double span = hi - lo;
            const double overlap = kernel_sum - merged_length(kernels, nullptr);
            dev.set(plain("busy_time", busy_time, "ns"));
            dev.set(plain("span", span, "ns"));
            dev.set(plain("idle_time", span - busy_time, "ns"));
            if (span > 0) dev.set(plain("idle_pct", 100.0 * (span - busy_time) / span, "percent"));
            dev.set(plain("kernel_overlap_time", overlap, "ns"));
            const double gap = gaps.empty() ? 0 : *std::max_element(gaps.begin(), gaps.end());
            dev.set(plain("longest_idle_gap", gap, "ns"));
            run_busy += busy_time;
            run_idle += span - busy_time;
            run_span_sum += span;
            run_overlap += overlap;
            longest_gap = std::max(longest_gap, gap);
            if (!any_timed || lo < first) first = lo;
            if (!any_timed || hi > last) last = hi;
            any_timed = true;
        }
        device_entity[d] = batch.entities.size();
        batch.entities.push_back(std::move(dev));
    }

    // Kernels and memory operations per name, across devices (launches keep their device).
    struct Group {
        std::size_t first_event;
        std::vector<std::size_t> members;
    };
    std::vector<std::pair<std::string, Group>> groups;
    std::unordered_map<std::string, std::size_t> group_of;
    for (std::size_t i = 0; i < events.size(); ++i) {
        const TimelineEvent& e = events[i];
        const std::string key = std::to_string(static_cast<int>(e.kind)) + '\n' + e.name;
        auto [it, fresh] = group_of.try_emplace(key, groups.size());
        if (fresh) groups.push_back({key, Group{i, {}}});
        groups[it->second].second.members.push_back(i);
    }

    double gpu_time = 0, memory_time = 0, kernel_launches = 0, short_launches = 0;
    std::size_t kernel_count = 0;
    for (auto& [key, g] : groups) {
        const TimelineEvent& e0 = events[g.first_event];
        std::vector<double> durations;
        for (std::size_t i : g.members)
            if (events[i].end_ns >= events[i].start_ns) durations.push_back(events[i].end_ns - events[i].start_ns);
        const DurationStats s = duration_stats(durations);
        Entity ent;
        ent.name = e0.name;
        const bool one_device = std::all_of(g.members.begin(), g.members.end(),
                                            [&](std::size_t i) { return events[i].device == e0.device; });
        if (one_device) {
            ent.parent = static_cast<std::int64_t>(device_entity[device_of.at(e0.device)]);
            ent.attributes["device"] = e0.device;
        } else {
            ent.parent = static_cast<std::int64_t>(run_index);
        }
        if (e0.kind == TimelineEvent::Kind::kernel) {
            ent.kind = EntityKind::kernel;
            set_duration_metrics(ent, s);
            ent.set(plain("launches", static_cast<double>(g.members.size()), "count"));
            gpu_time += s.total;
            kernel_launches += static_cast<double>(g.members.size());
            for (double d : durations)
                if (d < k_short_launch_ns) ++short_launches;
            ++kernel_count;
        } else {
            ent.kind = e0.kind == TimelineEvent::Kind::memory ? EntityKind::memcpy : EntityKind::api_call;
            set_duration_metrics(ent, s, "count");
            ent.set(plain("count", static_cast<double>(g.members.size()), "count"));
            memory_time += s.total;
        }
        if (durations.size() < g.members.size())
            ent.attributes["untimed_executions"] = std::to_string(g.members.size() - durations.size());
        const std::size_t index = batch.entities.size();
        const bool launches = options.emit_launches && e0.kind == TimelineEvent::Kind::kernel;
        batch.entities.push_back(std::move(ent));
        if (!launches) continue;
        std::size_t n = 0;
        for (std::size_t i : g.members) {
            TimelineEvent& e = events[i];
            Entity l;
            l.kind = EntityKind::launch;
            l.name = e.name + " #" + std::to_string(n++);
            l.parent = static_cast<std::int64_t>(index);
            l.set(plain("start", e.start_ns, "ns"));
            if (e.end_ns >= e.start_ns) {
                l.set(plain("end", e.end_ns, "ns"));
                l.set(plain("duration", e.end_ns - e.start_ns, "ns"));
            }
            l.attributes = std::move(e.attributes);
            l.attributes["device"] = e.device;
            if (!e.queue.empty()) l.attributes["queue"] = e.queue;
            batch.entities.push_back(std::move(l));
        }
    }

    Entity& run = batch.entities[run_index];
    run.set(plain("gpu_time", gpu_time, "ns"));
    run.set(plain("launches", kernel_launches, "count"));
    run.set(plain("kernels", static_cast<double>(kernel_count), "count"));
    run.set(plain("memory_time", memory_time, "ns"));
    run.set(plain("devices", static_cast<double>(devices.size()), "count"));
    if (kernel_launches > 0) {
        run.set(plain("short_launches", short_launches, "count"));
        run.set(plain("short_launch_pct", 100.0 * short_launches / kernel_launches, "percent"));
    }
    if (any_timed) {
        run.set(plain("span", last - first, "ns"));
        run.set(plain("busy_time", run_busy, "ns"));
        run.set(plain("idle_time", run_idle, "ns"));
        if (run_span_sum > 0) run.set(plain("idle_pct", 100.0 * run_idle / run_span_sum, "percent"));
        run.set(plain("kernel_overlap_time", run_overlap, "ns"));
        run.set(plain("longest_idle_gap", longest_gap, "ns"));
    }
}

}  // namespace perfwatch
