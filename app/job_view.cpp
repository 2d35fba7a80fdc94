#include "app/job_view.hpp"

#include <fmt/format.h>

#include "core/vocabulary.hpp"

namespace perfwatch {

namespace {

std::string figure(const Entity& e, std::string_view metric) {
    const auto v = e.value(metric);
    return v ? format_metric(metric, *v) : std::string("-");
}

}  // namespace

std::string format_job_text(const StoredRun& job) {
    const RunBatch& b = job.batch;
    const Entity* run = nullptr;
    for (const Entity& e : b.entities)
        if (e.kind == EntityKind::run) run = &e;
    std::string out = fmt::format("job: run {}, {}", job.id, b.format_detail);
    std::string labels;
    for (const auto& [k, v] : b.labels) labels += (labels.empty() ? "" : " ") + k + "=" + v;
    if (!labels.empty()) out += fmt::format(" [{}]", labels);
    out += '\n';
    if (run != nullptr) {
        if (auto m = run->attributes.find("missing_ranks"); m != run->attributes.end())
            out += fmt::format("  missing ranks: {}\n", m->second);
        out += fmt::format("  step {} (slowest rank); exposed communication {} per step ({}), waiting for the last rank "
                           "{} ({}); compute imbalance {}; {} collectives matched\n",
                           figure(*run, "job_step_time"), figure(*run, "comm_exposed_time"),
                           figure(*run, "comm_exposed_pct"), figure(*run, "collective_wait_time"),
                           figure(*run, "comm_wait_pct"), figure(*run, "compute_imbalance_pct"),
                           figure(*run, "collectives_matched"));
    }
    out += fmt::format("  {:<6} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10} {:>10} {:>10}\n", "rank", "run",
                       "step", "compute", "comm", "exposed", "wait", "last at", "host wait", "kernel w.", "other w.");
    for (const Entity& e : b.entities) {
        if (e.kind != EntityKind::rank) continue;
        const auto last = e.value("last_arrivals");
        out += fmt::format("  {:<6} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10} {:>10} {:>10}\n",
                           e.name.substr(e.name.find(' ') + 1),
                           e.attributes.contains("run") ? e.attributes.at("run") : "-", figure(e, "step_time"),
                           figure(e, "gpu_time_compute"), figure(e, "gpu_time_comm"), figure(e, "comm_exposed_time"),
                           figure(e, "collective_wait_time"), last ? fmt::format("{:.0f}", *last) : "-",
                           figure(e, "idle_host_wait"), figure(e, "idle_kernel_wait"), figure(e, "idle_other_wait"));
    }
    return out;
}

}  // namespace perfwatch
