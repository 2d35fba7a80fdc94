// Rule evaluation speed: the shipped rules over a run of many kernels (default 100,000) made by
// tiling the kernel entities of a real report (names varied, durations and metrics scaled by a
// seeded factor so that rules fire on some and not others). Prints rule x entity evaluations per
// second, findings, wall time and peak RSS.
// Usage: bench_rules REPORT [KERNELS]
#include <sys/resource.h>

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <random>

#include "collectors/collector.hpp"
#include "engine/evaluate.hpp"
#include "engine/rules.hpp"

using namespace perfwatch;

namespace {

// A line of /proc/self/status in MB ("VmRSS:" now, "VmHWM:" the peak so far).
double status_mb(const std::string& key) {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.starts_with(key)) return std::stod(line.substr(key.size())) / 1024.0;
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        fmt::print(stderr, "usage: bench_rules REPORT [KERNELS]\n");
        return 2;
    }
    const std::size_t kernels = argc > 2 ? std::stoul(argv[2]) : 100000;
    auto batch = collect_file(argv[1]);
    if (!batch) {
        fmt::print(stderr, "{}\n", batch.error().to_string());
        return 1;
    }
    std::vector<Entity> templates;
    for (const Entity& e : batch->entities)
        if (e.kind == EntityKind::kernel) templates.push_back(e);
    if (templates.empty()) {
        fmt::print(stderr, "bench_rules: {} has no kernels\n", argv[1]);
        return 1;
    }
    StoredRun run;
    run.id = 1;
    run.batch = *batch;
    std::erase_if(run.batch.entities, [](const Entity& e) { return e.kind == EntityKind::kernel || e.kind == EntityKind::launch; });
    std::mt19937_64 rng(42);
    std::lognormal_distribution<double> factor(0.0, 0.5);
    for (std::size_t i = 0; i < kernels; ++i) {
        Entity e = templates[i % templates.size()];
        e.name = fmt::format("{} #{}", e.name, i);
        e.parent = 0;
        const double f = factor(rng);
        for (Metric& m : e.metrics)
            if (m.unit() == "ns" || m.unit() == "count" || m.unit() == "percent") m.value = m.unit() == "percent" ? std::min(100.0, m.value * f) : m.value * f;
        run.batch.entities.push_back(std::move(e));
    }
    // The run's GPU time is its kernels' (as every reader sets it), so shares and impacts are
    // those of a real run of this many kernels.
    double gpu_time = 0;
    for (const Entity& e : run.batch.entities)
        if (e.kind == EntityKind::kernel) gpu_time += e.value("duration_total").value_or(0.0);
    for (Entity& e : run.batch.entities)
        if (e.kind == EntityKind::run) e.set(Metric{"gpu_time", gpu_time, "ns", "", ""});
    const RuleSet rules = compile_rules(load_rule_files({}));
    if (rules.has_errors()) {
        fmt::print(stderr, "bench_rules: the shipped rules do not compile\n");
        return 1;
    }
    const double rss_before = status_mb("VmRSS:");
    const auto t0 = std::chrono::steady_clock::now();
    const Evaluation ev = evaluate_run(rules, run);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const double pairs = static_cast<double>(ev.evaluated + ev.not_applicable);
    fmt::print("rules: {} shipped rules over {} kernels ({} entities): {:.0f} rule evaluations in {:.2f} s = {:.2f} M "
               "evaluations/s ({} decided, {} not applicable), {} findings, peak RSS {:.1f} MB\n",
               rules.rules.size(), kernels, run.batch.entities.size(), pairs, secs, pairs / secs / 1e6, ev.evaluated,
               ev.not_applicable, ev.findings.size(), static_cast<double>(usage.ru_maxrss) / 1024.0);
    // The run's entities (a copy of every metric, attribute and tool finding per kernel) are most of
    // the peak: what evaluating added to the resident memory is told apart.
    fmt::print("memory: the run held {:.1f} MB resident before evaluating; evaluation raised the peak to {:.1f} MB "
               "(+{:.1f} MB)\n",
               rss_before, status_mb("VmHWM:"), status_mb("VmHWM:") - rss_before);
    std::map<std::string, std::size_t> by_rule;
    for (const Finding& f : ev.findings) ++by_rule[f.rule];
    std::string counts;
    for (const auto& [rule, n] : by_rule) counts += fmt::format(" {} {},", rule, n);
    if (!counts.empty()) counts.pop_back();
    fmt::print("findings by rule:{}\n", counts);
    return 0;
}
