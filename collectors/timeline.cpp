#include "collectors/timeline.hpp"

#include <algorithm>
#include <cmath>

namespace perfwatch {

namespace {

// The union's total length of `spans` (sorted in place); fills the gaps between merged intervals.
template <typename SpanT>
double merged_length(std::vector<SpanT>& spans, std::vector<double>* gaps) {
    if (spans.empty()) return 0;
    std::sort(spans.begin(), spans.end(), [](const SpanT& a, const SpanT& b) { return a.start < b.start; });
    double total = 0;
    double cur_start = spans.front().start, cur_end = spans.front().end;
    for (std::size_t i = 1; i < spans.size(); ++i) {
        if (spans[i].start <= cur_end) {
            cur_end = std::max(cur_end, spans[i].end);
        } else {
            total += cur_end - cur_start;
            if (gaps) gaps->push_back(spans[i].start - cur_end);
            cur_start = spans[i].start;
            cur_end = spans[i].end;
        }
    }
    return total + (cur_end - cur_start);
}

}  // namespace

Metric plain(std::string name, double value, std::string unit, std::string tool, std::string tool_unit) {
    return Metric{std::move(name), value, std::move(unit), std::move(tool), std::move(tool_unit)};
}

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
    s.has_median = true;
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
    if (s.has_median) e.set(plain("duration_median", s.median, "ns"));
}

void set_aggregate_metrics(Entity& e, std::string_view count_name, double count, double total, double min, double max) {
    e.set(plain(std::string(count_name), count, "count"));
    e.set(plain("duration_total", total, "ns"));
    if (count > 0) {
        e.set(plain("duration_mean", total / count, "ns"));
        if (count_name == "launches") e.set(plain("duration", total / count, "ns"));
    }
    e.set(plain("duration_min", min, "ns"));
    e.set(plain("duration_max", max, "ns"));
}

void TimelineBuilder::add(TimelineEvent e) {
    auto [dit, dfresh] = m_device_of.try_emplace(e.device, m_devices.size());
    if (dfresh) m_devices.push_back(Device{e.device, {}, {}, 0, 0});
    Device& dev = m_devices[dit->second];

    std::string key(1, static_cast<char>('0' + static_cast<int>(e.kind)));
    key += e.name;
    auto [git, gfresh] = m_group_of.try_emplace(std::move(key), m_groups.size());
    if (gfresh) {
        Group g;
        g.kind = e.kind;
        g.name = e.name;
        g.device = e.device;
        m_groups.push_back(std::move(g));
    }
    Group& g = m_groups[git->second];
    if (g.device != e.device) g.one_device = false;
    g.count += 1;

    const bool kernel = e.kind == TimelineEvent::Kind::kernel;
    if (kernel) {
        ++m_kernel_events;
        dev.launches += 1;
    }
    if (e.end_ns >= e.start_ns) {
        const double d = e.end_ns - e.start_ns;
        g.timed += 1;
        g.total += d;
        if (g.timed == 1) g.min = g.max = d;
        g.min = std::min(g.min, d);
        g.max = std::max(g.max, d);
        const double delta = d - g.mean;  // Welford: mean and variance in one pass
        g.mean += delta / g.timed;
        g.m2 += delta * (d - g.mean);
        if (m_options.keep_durations) {
            g.durations.push_back(d);
        } else if (g.reservoir.size() < k_max_samples) {
            g.reservoir.push_back(d);
        } else {
            // Reservoir sampling (Algorithm R) with a fixed-seed LCG: the same trace keeps the same sample.
            g.rng = g.rng * 6364136223846793005ULL + 1442695040888963407ULL;
            const auto j = static_cast<std::size_t>((g.rng >> 11) % static_cast<std::uint64_t>(g.timed));
            if (j < k_max_samples) g.reservoir[j] = d;
        }
        dev.busy.push_back({e.start_ns, e.end_ns});
        if (kernel) {
            dev.kernels.push_back({e.start_ns, e.end_ns});
            dev.kernel_sum += d;
            if (d < k_short_launch_ns) m_short += 1;
        }
    }
    if (m_options.emit_launches && kernel) {
        g.events.push_back(m_events.size());
        m_events.push_back(std::move(e));
    }
}

void TimelineBuilder::finish(RunBatch& batch) {
    const std::size_t run_index = batch.run_entity();
    double run_busy = 0, run_idle = 0, run_span_sum = 0, run_overlap = 0, longest_gap = 0;
    double first = 0, last = 0;
    bool any_timed = false;
    std::vector<std::size_t> device_entity(m_devices.size());
    for (std::size_t d = 0; d < m_devices.size(); ++d) {
        Device& dv = m_devices[d];
        Entity dev;
        dev.kind = EntityKind::device;
        dev.name = dv.name;
        dev.parent = static_cast<std::int64_t>(run_index);
        dev.set(plain("launches", dv.launches, "count"));
        if (!dv.busy.empty()) {
            double lo = dv.busy.front().start, hi = dv.busy.front().end;
            for (const Span& s : dv.busy) {
                lo = std::min(lo, s.start);
                hi = std::max(hi, s.end);
            }
            std::vector<double> gaps;
            const double busy_time = merged_length(dv.busy, &gaps);
            const double span = hi - lo;
            const double overlap = dv.kernel_sum - merged_length(dv.kernels, nullptr);
            const double gap = gaps.empty() ? 0 : *std::max_element(gaps.begin(), gaps.end());
            dev.set(plain("busy_time", busy_time, "ns"));
            dev.set(plain("span", span, "ns"));
            dev.set(plain("idle_time", span - busy_time, "ns"));
            if (span > 0) dev.set(plain("idle_pct", 100.0 * (span - busy_time) / span, "percent"));
            dev.set(plain("kernel_overlap_time", overlap, "ns"));
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
        std::vector<Span>().swap(dv.busy);
        std::vector<Span>().swap(dv.kernels);
        device_entity[d] = batch.entities.size();
        batch.entities.push_back(std::move(dev));
    }

    double gpu_time = 0, memory_time = 0;
    std::size_t kernel_count = 0;
    for (Group& g : m_groups) {
        DurationStats s;
        std::vector<double> samples;
        if (m_options.keep_durations) {
            samples = evenly_spaced(g.durations);
            s = duration_stats(std::move(g.durations));
        } else if (g.timed > 0) {
            samples = std::move(g.reservoir);
            s.count = g.timed;
            s.total = g.total;
            s.mean = g.mean;
            s.min = g.min;
            s.max = g.max;
            s.std = std::sqrt(g.m2 / g.timed);
        }
        Entity ent;
        ent.name = g.name;
        if (g.one_device) {
            ent.parent = static_cast<std::int64_t>(device_entity[m_device_of.at(g.device)]);
            ent.attributes["device"] = g.device;
        } else {
            ent.parent = static_cast<std::int64_t>(run_index);
        }
        const bool kernel = g.kind == TimelineEvent::Kind::kernel;
        if (kernel) {
            ent.kind = EntityKind::kernel;
            set_duration_metrics(ent, s, "launches");
            ++kernel_count;
            gpu_time += s.total;
        } else {
            ent.kind = g.kind == TimelineEvent::Kind::memory ? EntityKind::memcpy : EntityKind::api_call;
            set_duration_metrics(ent, s, "count");
            memory_time += s.total;
        }
        ent.set(plain(kernel ? "launches" : "count", g.count, "count"));
        if (samples.size() >= 2) ent.samples["duration"] = std::move(samples);
        if (g.timed < g.count)
            ent.attributes["untimed_executions"] = std::to_string(static_cast<long long>(g.count - g.timed));
        const std::size_t index = batch.entities.size();
        batch.entities.push_back(std::move(ent));
        std::size_t n = 0;
        for (std::size_t i : g.events) {
            TimelineEvent& e = m_events[i];
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

    const double launches = static_cast<double>(m_kernel_events);
    Entity& run = batch.entities[run_index];
    run.set(plain("gpu_time", gpu_time, "ns"));
    run.set(plain("launches", launches, "count"));
    run.set(plain("kernels", static_cast<double>(kernel_count), "count"));
    run.set(plain("memory_time", memory_time, "ns"));
    run.set(plain("devices", static_cast<double>(m_devices.size()), "count"));
    if (launches > 0) {
        run.set(plain("short_launches", m_short, "count"));
        run.set(plain("short_launch_pct", 100.0 * m_short / launches, "percent"));
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

void build_timeline_entities(RunBatch& batch, std::vector<TimelineEvent> events, const TimelineOptions& options) {
    std::stable_sort(events.begin(), events.end(),
                     [](const TimelineEvent& a, const TimelineEvent& b) { return a.start_ns < b.start_ns; });
    TimelineBuilder builder(options);
    for (TimelineEvent& e : events) builder.add(std::move(e));
    builder.finish(batch);
}

}  // namespace perfwatch
