#include "collectors/readers/timeline.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace perfwatch {

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

void set_aggregate_metrics(Entity& e, std::string_view count_name, double count, double total, std::optional<double> min,
                           std::optional<double> max) {
    e.set(plain(std::string(count_name), count, "count"));
    e.set(plain("duration_total", total, "ns"));
    if (count > 0) {
        e.set(plain("duration_mean", total / count, "ns"));
        if (count_name == "launches") e.set(plain("duration", total / count, "ns"));
    }
    if (min) e.set(plain("duration_min", *min, "ns"));
    if (max) e.set(plain("duration_max", *max, "ns"));
}

std::size_t TimelineBuilder::group_index(TimelineEvent::Kind kind, std::string_view name, std::string_view device) {
    m_key.assign(1, static_cast<char>('0' + static_cast<int>(kind)));
    m_key += name;
    auto git = m_group_of.find(m_key);
    if (git == m_group_of.end()) {
        git = m_group_of.emplace(m_key, m_groups.size()).first;
        Group g;
        g.kind = kind;
        g.name = std::string(name);
        g.device = std::string(device);
        m_groups.push_back(std::move(g));
    }
    return git->second;
}

TimelineBuilder::Group& TimelineBuilder::enter(std::size_t index, std::string_view device, Device*& dev) {
    // An empty device: work on no device of its own (a copy-engine lane shared by several GPUs),
    // counted per name but in no device's busy or idle time.
    dev = nullptr;
    if (!device.empty()) {
        if (m_last_device >= m_devices.size() || m_devices[m_last_device].name != device) {
            m_key.assign(device);
            auto dit = m_device_of.find(m_key);
            if (dit == m_device_of.end()) {
                dit = m_device_of.emplace(m_key, m_devices.size()).first;
                m_devices.emplace_back();
                m_devices.back().name = std::string(device);
            }
            m_last_device = dit->second;
        }
        dev = &m_devices[m_last_device];
    }
    Group& g = m_groups[index];
    if (g.one_device && g.device != device) g.one_device = false;
    g.count += 1;
    if (g.kind == TimelineEvent::Kind::kernel) {
        ++m_kernel_events;
        if (dev != nullptr) dev->launches += 1;
    }
    return g;
}

void TimelineBuilder::sample_from_now_on() {
    // Each name's kept durations are a prefix of its stream: a uniform sample of them continues
    // as the reservoir (Algorithm R picks up from the count seen so far).
    m_sampled = true;
    for (Group& g : m_groups) {
        g.reservoir = evenly_spaced(g.durations, k_max_samples);
        std::vector<double>().swap(g.durations);
    }
}

void TimelineBuilder::time(Group& g, Device* dev, bool kernel, double start_ns, double end_ns) {
    if (end_ns < start_ns) return;
    const double d = end_ns - start_ns;
    g.timed += 1;
    g.total += d;
    if (g.timed == 1 || start_ns < g.first_start) {
        g.first_start = start_ns;
        g.first_duration = d;
    }
    if (g.timed == 1) g.min = g.max = d;
    g.min = std::min(g.min, d);
    g.max = std::max(g.max, d);
    const double delta = d - g.mean;  // Welford: mean and variance in one pass
    g.mean += delta / g.timed;
    g.m2 += delta * (d - g.mean);
    if (m_options.keep_durations && !m_sampled && m_kept_durations >= m_options.max_kept_durations) sample_from_now_on();
    if (m_options.keep_durations && !m_sampled) {
        g.durations.push_back(d);
        ++m_kept_durations;
    } else if (g.reservoir.size() < k_max_samples) {
        g.reservoir.push_back(d);
    } else {
        // Reservoir sampling (Algorithm R) with a fixed-seed LCG: the same trace keeps the same sample.
        g.rng = g.rng * 6364136223846793005ULL + 1442695040888963407ULL;
        const auto j = static_cast<std::size_t>((g.rng >> 11) % static_cast<std::uint64_t>(g.timed));
        if (j < k_max_samples) g.reservoir[j] = d;
    }
    if (kernel && d < k_short_launch_ns) m_short += 1;
    if (dev == nullptr) return;
    dev->busy.add(start_ns, end_ns);
    if (kernel) {
        dev->kernels.add(start_ns, end_ns);
        dev->kernel_sum += d;
    }
}

void TimelineBuilder::add(TimelineEvent::Kind kind, std::string_view name, std::string_view device, double start_ns,
                          double end_ns) {
    add(group_index(kind, name, device), device, start_ns, end_ns);
}

void TimelineBuilder::add(std::size_t group, std::string_view device, double start_ns, double end_ns) {
    Device* dev = nullptr;
    Group& g = enter(group, device, dev);
    const TimelineEvent::Kind kind = g.kind;
    time(g, dev, kind == TimelineEvent::Kind::kernel, start_ns, end_ns);
    if (m_options.emit_launches && kind == TimelineEvent::Kind::kernel &&
        m_events.size() >= m_options.max_launch_entities) {
        ++m_unkept_launches;
    } else if (m_options.emit_launches && kind == TimelineEvent::Kind::kernel) {
        TimelineEvent e;
        e.kind = kind;
        e.name = g.name;
        e.device = std::string(device);
        e.start_ns = start_ns;
        e.end_ns = end_ns;
        g.events.push_back(m_events.size());
        m_events.push_back(std::move(e));
    }
}

void TimelineBuilder::add(TimelineEvent e) {
    Device* dev = nullptr;
    Group& g = enter(group_index(e.kind, e.name, e.device), e.device, dev);
    const bool kernel = e.kind == TimelineEvent::Kind::kernel;
    time(g, dev, kernel, e.start_ns, e.end_ns);
    if (m_options.emit_launches && kernel && m_events.size() >= m_options.max_launch_entities) {
        ++m_unkept_launches;
    } else if (m_options.emit_launches && kernel) {
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
    SpanSet all_busy;  // the devices' merged intervals, when there are several
    for (std::size_t d = 0; d < m_devices.size(); ++d) {
        Device& dv = m_devices[d];
        Entity dev;
        dev.kind = EntityKind::device;
        dev.name = dv.name;
        dev.parent = static_cast<std::int64_t>(run_index);
        dev.set(plain("launches", dv.launches, "count"));
        if (!dv.busy.empty()) {
            const UnionStats busy = union_stats(dv.busy, m_devices.size() > 1 ? &all_busy : nullptr);
            const UnionStats kernels = union_stats(dv.kernels);
            const double busy_time = busy.length;
            const double span = busy.last - busy.first;
            const double overlap = dv.kernel_sum - kernels.length;
            const double gap = busy.longest_gap;
            const double lo = busy.first, hi = busy.last;
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
        dv.busy = SpanSet();
        dv.kernels = SpanSet();
        device_entity[d] = batch.entities.size();
        batch.entities.push_back(std::move(dev));
    }

    // With several devices the run is busy while any device is: the union of their intervals.
    if (m_devices.size() > 1 && any_timed) {
        const UnionStats all = union_stats(all_busy);
        run_busy = all.length;
        run_span_sum = last - first;
        run_idle = run_span_sum - all.length;
        longest_gap = all.longest_gap;
    }

    double gpu_time = 0, memory_time = 0;
    std::size_t kernel_count = 0;
    for (Group& g : m_groups) {
        DurationStats s;
        std::vector<double> samples;
        if (m_options.keep_durations && !m_sampled) {
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
            if (m_options.keep_durations) {
                std::vector<double> sorted = samples;
                std::sort(sorted.begin(), sorted.end());
                const std::size_t n = sorted.size();
                s.median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
                s.has_median = true;
            }
        }
        Entity ent;
        ent.name = g.name;
        if (g.one_device && !g.device.empty()) {
            ent.parent = static_cast<std::int64_t>(device_entity[m_device_of.at(g.device)]);
            ent.attributes["device"] = g.device;
        } else {
            ent.parent = static_cast<std::int64_t>(run_index);
        }
        const bool kernel = g.kind == TimelineEvent::Kind::kernel;
        // An operation the report never timed has no duration, rather than one of 0.
        if (kernel) {
            ent.kind = EntityKind::kernel;
            if (g.timed > 0) set_duration_metrics(ent, s, "launches");
            // The first execution against the mean of the others: a one-time cost paid inside the
            // kernel (first touch of unified or managed memory, a cold start).
            if (g.timed >= 2) {
                ent.set(plain("first_launch_duration", g.first_duration, "ns"));
                ent.set(plain("first_launch_excess", g.first_duration - (g.total - g.first_duration) / (g.timed - 1), "ns"));
            }
            ++kernel_count;
            gpu_time += s.total;
        } else {
            ent.kind = g.kind == TimelineEvent::Kind::memory ? EntityKind::memcpy : EntityKind::api_call;
            if (g.timed > 0) set_duration_metrics(ent, s, "count");
            // Host calls (a HIP API trace) and device operations that move no data (an FPGA's
            // reprogramming) are no memory time.
            if (g.kind == TimelineEvent::Kind::memory) memory_time += s.total;
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

    if (m_unkept_launches > 0)
        batch.notes.push_back(fmt::format("launch entities are kept for the first {} of {} kernel executions "
                                          "(bounded memory); every execution counts in its kernel's figures",
                                          m_events.size(), m_events.size() + m_unkept_launches));
    if (m_sampled)
        batch.notes.push_back(fmt::format("duration medians are estimated from a uniform sample of {} executions per "
                                          "name: the report holds over {} timed executions",
                                          k_max_samples, m_options.max_kept_durations));
    const double launches = static_cast<double>(m_kernel_events);
    Entity& run = batch.entities[run_index];
    if (any_timed || launches == 0) {
        run.set(plain("gpu_time", gpu_time, "ns"));
        run.set(plain("memory_time", memory_time, "ns"));
    }
    run.set(plain("launches", launches, "count"));
    run.set(plain("kernels", static_cast<double>(kernel_count), "count"));
    run.set(plain("devices", static_cast<double>(m_devices.size()), "count"));
    if (launches > 0 && any_timed) {
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
