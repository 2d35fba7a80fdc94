#include "engine/job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "engine/stats.hpp"

namespace perfwatch {

namespace {

Metric job_metric(std::string name, double value, std::string unit) {
    return Metric{std::move(name), value, std::move(unit)};
}

const Entity* run_entity(const RunBatch& b) {
    for (const Entity& e : b.entities)
        if (e.kind == EntityKind::run) return &e;
    return nullptr;
}

double metric_or(const Entity* e, std::string_view name, double fallback = 0) {
    if (e == nullptr) return fallback;
    return e->value(name).value_or(fallback);
}

// A trace's time base ("1694128201421058.250", microseconds) as whole and fractional parts, so
// differences between ranks keep nanoseconds.
struct TimeBase {
    std::int64_t whole = 0;
    double fraction = 0;
    bool known = false;
};

TimeBase time_base(const Entity* run) {
    TimeBase t;
    if (run == nullptr) return t;
    auto it = run->attributes.find("time_base_us");
    if (it == run->attributes.end()) return t;
    const std::string& text = it->second;
    const std::size_t dot = text.find('.');
    const std::string_view whole = std::string_view(text).substr(0, dot);
    if (std::from_chars(whole.data(), whole.data() + whole.size(), t.whole).ec != std::errc()) return t;
    if (dot != std::string::npos) {
        const std::string frac = "0" + text.substr(dot);
        std::from_chars(frac.data(), frac.data() + frac.size(), t.fraction);
    }
    t.known = true;
    return t;
}

std::string milliseconds(double ns) { return fmt::format("{:.2f} ms", ns / 1e6); }

struct RankFigures {
    const JobMember* member = nullptr;
    const Entity* run = nullptr;
    double offset_ns = 0;  // this trace's clock minus the earliest trace's, in ns
    double compute = 0, comm = 0, memory = 0, step = 0, iterations = 0;
    double wait = 0, wait_caused = 0, last_arrivals = 0, arrivals = 0;
    std::map<std::string, double> kernel_time;
};

// One collective as each rank ran it: (rank index, arrival on the common clock).
using Arrivals = std::vector<std::pair<std::size_t, double>>;

}  // namespace

std::optional<JobKey> job_key(const std::map<std::string, std::string>& labels) {
    auto rank = labels.find(std::string(k_rank_label));
    auto world = labels.find("world_size");
    if (rank == labels.end() || world == labels.end()) return std::nullopt;
    JobKey key;
    const std::string& r = rank->second;
    const std::string& w = world->second;
    if (std::from_chars(r.data(), r.data() + r.size(), key.rank).ec != std::errc() ||
        std::from_chars(w.data(), w.data() + w.size(), key.world_size).ec != std::errc())
        return std::nullopt;
    if (key.world_size < 2 || key.rank < 0 || key.rank >= key.world_size) return std::nullopt;
    key.labels = labels;
    key.labels.erase(std::string(k_rank_label));
    return key;
}

RunBatch build_job_run(const std::vector<JobMember>& members, int world_size) {
    RunBatch job;
    job.format = "job";
    std::vector<const JobMember*> ordered;
    for (const JobMember& m : members) ordered.push_back(&m);
    std::sort(ordered.begin(), ordered.end(), [](const JobMember* a, const JobMember* b) { return a->rank < b->rank; });

    // Labels every member shares, less the rank.
    if (!ordered.empty()) {
        job.labels = ordered.front()->batch->labels;
        for (const JobMember* m : ordered)
            std::erase_if(job.labels, [&](const auto& kv) {
                auto it = m->batch->labels.find(kv.first);
                return it == m->batch->labels.end() || it->second != kv.second;
            });
        job.labels.erase(std::string(k_rank_label));
        // The folder holding every rank's report (run/rank_0/a.json, run/rank_1/b.json: run/).
        job.source = ordered.front()->batch->source;
        std::size_t common = job.source.size();
        for (const JobMember* m : ordered) {
            const std::string& other = m->batch->source;
            std::size_t n = 0;
            while (n < common && n < other.size() && job.source[n] == other[n]) ++n;
            common = n;
        }
        if (ordered.size() > 1) {
            const std::size_t slash = job.source.rfind('/', common == 0 ? 0 : common - 1);
            if (slash != std::string::npos && common > 0) job.source = job.source.substr(0, slash + 1);
        }
        job.tool_version = ordered.front()->batch->tool_version;
        for (const JobMember* m : ordered)
            if (m->batch->captured_at && (!job.captured_at || *m->batch->captured_at < *job.captured_at))
                job.captured_at = m->batch->captured_at;
    }
    job.labels[std::string(k_ranks_label)] = std::to_string(world_size);
    job.format_detail = fmt::format("{} of {} ranks", ordered.size(), world_size);

    std::vector<RankFigures> ranks(ordered.size());
    std::vector<TimeBase> bases(ordered.size());
    std::int64_t earliest = 0;
    double earliest_fraction = 0;
    bool any_base = false;
    for (std::size_t i = 0; i < ordered.size(); ++i) {
        RankFigures& r = ranks[i];
        r.member = ordered[i];
        r.run = run_entity(*r.member->batch);
        bases[i] = time_base(r.run);
        if (bases[i].known && (!any_base || bases[i].whole < earliest ||
                               (bases[i].whole == earliest && bases[i].fraction < earliest_fraction))) {
            earliest = bases[i].whole;
            earliest_fraction = bases[i].fraction;
            any_base = true;
        }
        r.compute = metric_or(r.run, "gpu_time_compute");
        r.comm = metric_or(r.run, "gpu_time_comm");
        r.memory = metric_or(r.run, "gpu_time_memory");
        r.iterations = metric_or(r.run, "iterations", 1);
        // The mean profiler step, unless the GPU work runs past the steps (a kernel launched in a
        // step may end after it): then the timeline's span per step.
        const double span_per_step = metric_or(r.run, "span") / std::max(1.0, r.iterations);
        r.step = std::max(metric_or(r.run, "iteration_time_mean"), span_per_step);
        for (const Entity& e : r.member->batch->entities)
            if (e.kind == EntityKind::kernel) r.kernel_time[e.name] += e.value("duration_total").value_or(0);
    }
    for (std::size_t i = 0; i < ranks.size(); ++i)
        if (bases[i].known)
            ranks[i].offset_ns = static_cast<double>(bases[i].whole - earliest) * 1000.0 +
                                 (bases[i].fraction - earliest_fraction) * 1000.0;

    // Collectives matched across ranks by (kernel name, occurrence of that name on the rank).
    std::map<std::pair<std::string, std::size_t>, Arrivals> collectives;
    if (any_base) {
        for (std::size_t i = 0; i < ranks.size(); ++i) {
            if (!bases[i].known) continue;
            std::vector<std::pair<std::size_t, const Entity*>> seq;
            for (const Entity& e : ranks[i].member->batch->entities) {
                if (e.kind != EntityKind::collective) continue;
                std::size_t n = 0;
                if (auto s = e.attributes.find("sequence"); s != e.attributes.end())
                    std::from_chars(s->second.data(), s->second.data() + s->second.size(), n);
                seq.emplace_back(n, &e);
            }
            std::sort(seq.begin(), seq.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
            std::map<std::string, std::size_t> occurrence;
            for (const auto& [n, e] : seq) {
                const auto start = e->value("start");
                if (!start) continue;
                collectives[{e->name, occurrence[e->name]++}].emplace_back(i, ranks[i].offset_ns + *start);
            }
        }
    }
    double matched = 0;
    for (auto& [key, arrivals] : collectives) {
        if (arrivals.size() < 2) continue;
        ++matched;
        auto last = std::max_element(arrivals.begin(), arrivals.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
        double others = 0;
        for (const auto& [i, at] : arrivals) {
            ranks[i].wait += last->second - at;
            ranks[i].arrivals += 1;
            if (i != last->first) others += last->second - at;
        }
        ranks[last->first].last_arrivals += 1;
        ranks[last->first].wait_caused += others / static_cast<double>(arrivals.size() - 1);
    }

    std::vector<double> computes, steps, iterations;
    for (const RankFigures& r : ranks) {
        computes.push_back(r.compute);
        steps.push_back(r.step);
        iterations.push_back(r.iterations);
    }
    const double median_compute = median(computes);
    const double per_step = std::max(1.0, median(iterations));
    const double job_step = steps.empty() ? 0 : *std::max_element(steps.begin(), steps.end());
    std::set<std::string> names;
    for (const RankFigures& r : ranks)
        for (const auto& [n, t] : r.kernel_time) names.insert(n);
    std::map<std::string, double> median_kernel;
    for (const std::string& n : names) {
        std::vector<double> v;
        for (const RankFigures& r : ranks) {
            auto it = r.kernel_time.find(n);
            v.push_back(it == r.kernel_time.end() ? 0 : it->second);
        }
        median_kernel[n] = median(std::move(v));
    }

    const std::size_t run_index = job.run_entity();
    // Figures measured between ranks (the wait for the last one, the imbalance) need two of them.
    const bool peers = ranks.size() >= 2;
    double sum_exposed = 0, sum_wait = 0, sum_comm = 0, sum_compute = 0, sum_memory = 0, sum_overlapped = 0;
    for (const RankFigures& r : ranks) {
        Entity e;
        e.kind = EntityKind::rank;
        e.name = fmt::format("rank {}", r.member->rank);
        e.parent = static_cast<std::int64_t>(run_index);
        e.attributes["run"] = std::to_string(r.member->run_id);
        e.attributes["source"] = r.member->batch->source;
        for (const char* label : {"host", "hostname", "node"})
            if (auto it = r.member->batch->labels.find(label); it != r.member->batch->labels.end())
                e.attributes["host"] = it->second;
        for (const char* m : {"gpu_time", "gpu_time_compute", "gpu_time_comm", "gpu_time_memory", "comm_exposed_time",
                              "comm_compute_overlap_pct", "idle_host_wait", "idle_kernel_wait", "idle_other_wait",
                              "collectives", "collective_bytes", "iterations"})
            if (r.run != nullptr)
                if (const Metric* x = r.run->metric(m)) e.set(*x);
        e.set(job_metric("step_time", r.step, "ns"));
        // A wait for the last rank is measured against the rank's peers: one rank alone has none.
        if (peers) e.set(job_metric("collective_wait_time", r.wait / per_step, "ns"));
        e.set(job_metric("last_arrivals", r.last_arrivals, "count"));
        if (r.arrivals > 0) e.set(job_metric("last_arrival_pct", 100.0 * r.last_arrivals / r.arrivals, "percent"));
        e.set(job_metric("wait_caused", r.wait_caused / per_step, "ns"));
        if (job_step > 0) e.set(job_metric("wait_caused_pct", 100.0 * r.wait_caused / per_step / job_step, "percent"));
        e.set(job_metric("compute_excess_time", (r.compute - median_compute) / per_step, "ns"));
        if (median_compute > 0)
            e.set(job_metric("compute_excess_pct", 100.0 * (r.compute / median_compute - 1), "percent"));
        // The kernels that make this rank's extra time: most above their median over the ranks.
        std::vector<std::pair<double, std::string>> extra;
        // Only kernels whose extra time is worth naming: 1% of the job's step, and 10 us.
        const double worth = std::max(10'000.0, 0.01 * job_step) * per_step;
        for (const auto& [n, t] : r.kernel_time)
            if (const double x = t - median_kernel[n]; x >= worth) extra.emplace_back(x, n);
        std::sort(extra.begin(), extra.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        std::string text;
        for (std::size_t k = 0; k < extra.size() && k < 3; ++k) {
            std::string name = extra[k].second.size() > 80 ? extra[k].second.substr(0, 77) + "..." : extra[k].second;
            text += fmt::format("{}{} (+{})", k == 0 ? "" : ", ", name, milliseconds(extra[k].first / per_step));
        }
        if (!text.empty()) e.attributes["extra_kernels"] = text;
        const double exposed = metric_or(r.run, "comm_exposed_time");
        sum_exposed += exposed;
        sum_wait += r.wait / per_step;
        sum_comm += r.comm;
        sum_compute += r.compute;
        sum_memory += r.memory;
        sum_overlapped += r.comm > 0 ? r.comm * metric_or(r.run, "comm_compute_overlap_pct") / 100.0 : 0;
        job.entities.push_back(std::move(e));
    }

    const double n = std::max<double>(1, static_cast<double>(ranks.size()));
    Entity& run = job.entities[run_index];
    run.set(job_metric("ranks", static_cast<double>(ranks.size()), "count"));
    run.set(job_metric("world_size", world_size, "count"));
    run.set(job_metric("missing_ranks", world_size - static_cast<double>(ranks.size()), "count"));
    run.set(job_metric("job_step_time", job_step, "ns"));
    run.set(job_metric("collectives_matched", matched, "count"));
    if (!ranks.empty()) {
        run.set(job_metric("gpu_time_compute", sum_compute, "ns"));
        run.set(job_metric("gpu_time_comm", sum_comm, "ns"));
        run.set(job_metric("gpu_time_memory", sum_memory, "ns"));
        run.set(job_metric("comm_exposed_time", sum_exposed / n / per_step, "ns"));
        if (peers) run.set(job_metric("collective_wait_time", sum_wait / n, "ns"));
        if (sum_comm > 0) run.set(job_metric("comm_compute_overlap_pct", 100.0 * sum_overlapped / sum_comm, "percent"));
        if (job_step > 0) {
            run.set(job_metric("comm_exposed_pct", 100.0 * sum_exposed / n / per_step / job_step, "percent"));
            if (peers) run.set(job_metric("comm_wait_pct", 100.0 * sum_wait / n / job_step, "percent"));
        }
        if (median_compute > 0 && peers)
            run.set(job_metric("compute_imbalance_pct",
                               100.0 * (*std::max_element(computes.begin(), computes.end()) / median_compute - 1),
                               "percent"));
    }
    std::string missing;
    std::set<int> present;
    for (const RankFigures& r : ranks) present.insert(r.member->rank);
    for (int k = 0; k < world_size; ++k)
        if (!present.contains(k)) missing += (missing.empty() ? "" : ", ") + std::to_string(k);
    if (!missing.empty()) run.attributes["missing_ranks"] = missing;
    if (!peers && !ranks.empty())
        job.notes.push_back(fmt::format("{} of {} ranks: the wait for the last rank and the compute imbalance are "
                                        "measured between ranks, and one rank's trace cannot give them",
                                        ranks.size(), world_size));
    if (!any_base && !ranks.empty())
        job.notes.push_back("the ranks' traces give no clock: arrival order at collectives is not known");
    return job;
}

}  // namespace perfwatch
