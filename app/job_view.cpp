#include "app/job_view.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/vocabulary.hpp"

namespace perfwatch {

namespace {

std::string figure(const Entity& e, std::string_view metric) {
    const auto v = e.value(metric);
    return v ? format_metric(metric, *v) : std::string("-");
}

}  // namespace

JobRankTable job_rank_table(const RunBatch& job) {
    JobRankTable t{{"rank", "run", "step", "compute", "comm", "exposed", "wait", "last at", "host wait", "kernel w.",
                    "other w."},
                   {}};
    for (const Entity& e : job.entities) {
        if (e.kind != EntityKind::rank) continue;
        const auto run = e.attributes.find("run");
        t.rows.push_back({e.name, run == e.attributes.end() ? "-" : run->second, figure(e, "step_time"),
                          figure(e, "gpu_time_compute"), figure(e, "gpu_time_comm"), figure(e, "comm_exposed_time"),
                          figure(e, "collective_wait_time"), figure(e, "last_arrivals"), figure(e, "idle_host_wait"),
                          figure(e, "idle_kernel_wait"), figure(e, "idle_other_wait")});
    }
    return t;
}

std::string format_job_text(const StoredRun& job) {
    const RunBatch& b = job.batch;
    const Entity* run = nullptr;
    for (const Entity& e : b.entities)
        if (e.kind == EntityKind::run) run = &e;
    std::string out = fmt::format("job: run {}, {}", job.id, b.format_detail);
    if (!b.labels.empty()) out += fmt::format(" [{}]", labels_text(b.labels));
    out += '\n';
    if (run != nullptr) {
        if (auto m = run->attributes.find("missing_ranks"); m != run->attributes.end())
            out += fmt::format("  missing ranks: {}\n", m->second);
        if (run->value("ranks").value_or(0) < 2)
            out += fmt::format("  step {}; exposed communication {} per step ({}); the wait for the last rank and the "
                               "compute imbalance need the other ranks' traces\n",
                               figure(*run, "job_step_time"), figure(*run, "comm_exposed_time"),
                               figure(*run, "comm_exposed_pct"));
        else
            out += fmt::format("  step {} (slowest rank); exposed communication {} per step ({}), waiting for the last "
                               "rank {} ({}); compute imbalance {}; {} collectives matched\n",
                               figure(*run, "job_step_time"), figure(*run, "comm_exposed_time"),
                               figure(*run, "comm_exposed_pct"), figure(*run, "collective_wait_time"),
                               figure(*run, "comm_wait_pct"), figure(*run, "compute_imbalance_pct"),
                               figure(*run, "collectives_matched"));
    }
    // Columns as wide as their widest cell; the first left-aligned, the figures right-aligned.
    const JobRankTable t = job_rank_table(b);
    std::vector<std::size_t> width(t.header.size());
    for (std::size_t c = 0; c < t.header.size(); ++c) {
        width[c] = t.header[c].size();
        for (const auto& row : t.rows) width[c] = std::max(width[c], row[c].size());
    }
    auto line = [&](const std::vector<std::string>& cells) {
        std::string l = " ";
        for (std::size_t c = 0; c < cells.size(); ++c)
            l += c == 0 ? fmt::format(" {:<{}}", cells[c], width[c]) : fmt::format("  {:>{}}", cells[c], width[c]);
        return l + "\n";
    };
    out += line(t.header);
    for (const auto& row : t.rows) out += line(row);
    return out;
}

}  // namespace perfwatch
