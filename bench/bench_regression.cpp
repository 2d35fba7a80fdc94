// Detection benchmark for the shipped history rules (rules/regression.yaml: every regression
// rule, run-level ones included, and the whole-run environment finding), run through the real
// pipeline (SQLite history, baseline selection with open regressions, rank and run-to-run tests,
// long-horizon reference, hysteresis) on generated series (bench/regression_scenarios.hpp: 8
// kernels, per-launch log-normal noise, run-level noise, 2% outlier launches 2-4x slower).
//
// Usage: bench_regression [series per cell, default 100]
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>

#include "bench/regression_scenarios.hpp"

using namespace perfwatch;
using namespace perfwatch::bench;

namespace {

// PERFWATCH_BENCH_VERBOSE=1 prints every alert raised where nothing had changed.
const bool k_verbose = std::getenv("PERFWATCH_BENCH_VERBOSE") != nullptr;

Tally run_cell(const RuleSet& rules, SeriesSpec spec, int series, std::uint64_t& seed, int& total_runs) {
    Tally t;
    for (int s = 0; s < series; ++s) {
        spec.seed = ++seed;
        const auto runs = run_series(rules, spec);
        tally(spec, runs, t);
        total_runs += spec.runs;
        if (!k_verbose) continue;
        for (const RunRecord& run : runs) {
            const bool changed = spec.change != SeriesSpec::Change::none && spec.change != SeriesSpec::Change::bimodal;
            if (!is_alert(run) || (changed && run.index >= spec.at && spec.size > 0)) continue;
            for (const Finding& f : run.findings)
                fmt::print("    false alert: series {} run {}: {} {}: {}\n", spec.seed, run.index, f.rule, f.entity_name,
                           f.message.substr(0, 160));
        }
    }
    return t;
}

double per_thousand(int n, int of) { return 1000.0 * n / std::max(1, of); }

std::string pct(int n, int of) { return of > 0 ? fmt::format("{:.1f}%", 100.0 * n / of) : "-"; }

// What every cell shares: the rules, the series per cell, the running seed and run count.
struct Cells {
    const RuleSet& rules;
    int per_cell;
    std::uint64_t seed = 20261124;
    int total_runs = 0;

    Tally run(const SeriesSpec& spec) { return run_cell(rules, spec, per_cell, seed, total_runs); }
};

using C = SeriesSpec::Change;

// False alerts on stable series; met when at most 1 per 1,000 runs at CV 5%.
bool stable_cells(Cells& cells) {
    fmt::print("Stable series (false alerts: a regression opened by any rule, or a whole-run finding)\n");
    fmt::print("{:>5} {:>28} {:>22} {:>14} {:>16} {:>32}\n", "CV", "false alerts / comparisons", "perfwatch per 1,000",
               "t-test", "Perfherder", "runs told a kernel is too noisy");
    bool met = true;
    for (double cv : {0.02, 0.05, 0.10}) {
        SeriesSpec spec;
        spec.cv = cv;
        const Tally t = cells.run(spec);
        const double per_1000 = per_thousand(t.false_alerts, t.comparisons);
        fmt::print("{:>4.0f}% {:>12} / {:<13} {:>22.2f} {:>14.1f} {:>16.1f} {:>32}\n", cv * 100, t.false_alerts, t.comparisons,
                   per_1000, per_thousand(t.t_false_alerts, t.comparisons), per_thousand(t.ph_false_alerts, t.comparisons),
                   pct(t.noisy_told, t.comparisons));
        if (per_1000 > 1.0) met = false;
    }
    return met;
}

// Shifts of the largest kernel, in series of 36 runs (so a Perfherder window of 12 after the
// change fits); met when 5% shifts at CV 2 and 5% and 10% shifts at CV 10% are found within 3 runs
// in >= 90% of series, and 10% at CV 5% in >= 95% and still open 6 runs later.
bool shift_cells(Cells& cells) {
    fmt::print("\nThe largest kernel (40% of GPU time) shifted from run 21 on (36 runs; comparators on the same series)\n");
    fmt::print("{:>5} {:>6} {:>20} {:>16} {:>24} {:>13} {:>16} {:>20}\n", "CV", "shift", "found within 3 runs",
               "first bad exact", "open 6 runs later, same", "false alerts", "t-test, 3 runs", "Perfherder (delay)");
    bool met = true;
    for (double cv : {0.02, 0.05, 0.10}) {
        for (double size : {0.05, 0.10, 0.15, 0.20}) {
            SeriesSpec spec;
            spec.change = C::shift;
            spec.cv = cv;
            spec.size = size;
            spec.runs = 36;
            const Tally t = cells.run(spec);
            const std::string ph =
                t.ph_detected > 0 ? fmt::format("{} ({:.1f})", pct(t.ph_detected, t.series), double(t.ph_delay) / t.ph_detected)
                                  : pct(0, t.series);
            fmt::print("{:>4.0f}% {:>5.0f}% {:>20} {:>16} {:>24} {:>13} {:>16} {:>20}\n", cv * 100, size * 100,
                       pct(t.detected, t.series), pct(t.first_bad_exact, t.detected), pct(t.still_open, t.series),
                       t.false_alerts, pct(t.t_detected, t.series), ph);
            const double found = 100.0 * t.detected / t.series;
            if ((size == 0.05 && cv <= 0.05 && found < 90) || (size == 0.10 && cv == 0.10 && found < 90)) met = false;
            if (cv == 0.05 && size == 0.10 && (found < 95 || 100.0 * t.still_open / t.series < 95)) met = false;
        }
    }
    return met;
}

// A ramp, a uniformly slower run, an improvement and a revert at CV 5%.
bool other_cells(Cells& cells) {
    fmt::print("\nOther changes at CV 5%\n");
    SeriesSpec ramp = series_of(C::ramp, 0.01);
    ramp.at = 15;
    const Tally r = cells.run(ramp);
    fmt::print("  ramp +1%/run from run 16: caught by its 10th run in {} of series\n", pct(r.detected, r.series));
    SeriesSpec uniform = series_of(C::uniform, 0.15);
    const Tally u = cells.run(uniform);
    fmt::print("  one run with every kernel 15% slower: one whole-run finding and no regression in {} of series "
               "({} regressions opened in all)\n",
               pct(u.uniform_single, u.series), u.per_kernel_alerts);
    SeriesSpec better = series_of(C::shift, -0.15);
    const Tally b = cells.run(better);
    fmt::print("  the largest kernel 15% faster: {} alerts on it or the run from the change on ({} on untouched "
               "kernels in {} runs judged: the base rate)\n",
               b.improvement_alerts, b.false_alerts, b.comparisons);
    SeriesSpec revert = series_of(C::revert, 0.15);
    const Tally v = cells.run(revert);
    fmt::print("  +15% for 4 runs, then reverted: every regression resolved in {} of series\n", pct(v.resolved, v.series));
    SeriesSpec whole = series_of(C::shift, 0.20);
    const Tally w = cells.run(whole);
    fmt::print("  the largest kernel 20% slower (the run about 8%): run-gpu-time-regression opened within 3 runs in {} of "
               "series, at the change's run in {} of those, naming it as the first bad run in {}\n",
               pct(w.run_detected, w.series), pct(w.run_on_time, w.run_detected), pct(w.run_first_bad_exact, w.run_detected));
    SeriesSpec clock = series_of(C::clock, 1.98 / 1.755 - 1);
    const Tally k = cells.run(clock);
    fmt::print("  SM clock 1.98 -> 1.755 GHz from run 21 on, every kernel 12.8% slower: the clock change said at that run "
               "in {} of series; {} regressions opened from it on\n",
               pct(k.clock_told, k.series), k.clock_regressions);
    return 100.0 * r.detected / r.series >= 95 && 100.0 * u.uniform_single / u.series >= 95 && b.improvement_alerts == 0 &&
           100.0 * v.resolved / v.series >= 95 && 100.0 * k.clock_told / k.series >= 95 && k.clock_regressions == 0 &&
           100.0 * w.run_first_bad_exact / std::max(1, w.run_detected) >= 95;
}

// A series whose largest kernel is 13% slower in about half the runs, at random (22.5 vs 25.5 ms
// of a run, as users report): met when, once both modes showed (3 runs each, two switches), it
// raises at most 1 false alert per 1,000 runs at CV 2%. Before that a switch is a shift like any.
bool bimodal_cells(Cells& cells) {
    fmt::print("\nBimodal series: the largest kernel +13% in a random half of the runs (nothing changes)\n");
    fmt::print("{:>5} {:>28} {:>10} {:>24} {:>34} {:>8} {:>11}\n", "CV", "false alerts / comparisons", "per 1,000",
               "once both modes showed", "runs told the series has 2 modes", "t-test", "Perfherder");
    bool met = true;
    for (double cv : {0.02, 0.05}) {
        SeriesSpec spec;
        spec.change = C::bimodal;
        spec.at = 0;
        spec.size = 0.13;
        spec.cv = cv;
        const Tally t = cells.run(spec);
        const double per_1000 = per_thousand(t.false_alerts, t.comparisons);
        fmt::print("{:>4.0f}% {:>12} / {:<13} {:>10.2f} {:>15} per 1,000 {:>34} {:>8.1f} {:>11.1f}\n", cv * 100,
                   t.false_alerts, t.comparisons, per_1000,
                   fmt::format("{:.2f}", per_thousand(t.bimodal_shown_alerts, t.bimodal_shown_runs)),
                   pct(t.bimodal_told, t.comparisons), per_thousand(t.t_false_alerts, t.comparisons),
                   per_thousand(t.ph_false_alerts, t.comparisons));
        if (cv == 0.02 && per_thousand(t.bimodal_shown_alerts, t.bimodal_shown_runs) > 1.0) met = false;
    }
    return met;
}

}  // namespace

int main(int argc, char** argv) {
    const int per_cell = argc > 1 ? std::atoi(argv[1]) : 100;
    // PERFWATCH_BENCH_ONLY=stable|shift|other|bimodal runs only those cells (for looking at their alerts).
    const std::string only = std::getenv("PERFWATCH_BENCH_ONLY") != nullptr ? std::getenv("PERFWATCH_BENCH_ONLY") : "";
    auto wanted = [&](const char* cell) { return only.empty() || only == cell; };
    const RuleSet rules = history_rules();
    Cells cells{rules, per_cell};
    const auto t0 = std::chrono::steady_clock::now();
    fmt::print("{} history rules, {} series per cell, 30 runs each, 8 kernels x 60 launches per run, change at run 21\n\n",
               rules.rules.size(), per_cell);
    bool met = true;
    if (wanted("stable")) met = stable_cells(cells) && met;
    if (wanted("shift")) met = shift_cells(cells) && met;
    if (wanted("other")) met = other_cells(cells) && met;
    if (wanted("bimodal")) met = bimodal_cells(cells) && met;

    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("\n{} runs through the pipeline in {:.1f} s ({:.0f} runs/s)\n", cells.total_runs, secs, cells.total_runs / secs);
    fmt::print("targets (>= 90% of 5% shifts at CV 2 and 5% and of 10% shifts at CV 10% found within 3 runs; at CV 5% "
               ">= 95% of 10% shifts found and still open 6 runs later naming the first bad run; <= 1 false alert per "
               "1,000 stable runs at every CV; >= 95% of ramps caught by their 10th run; >= 95% of uniform runs one "
               "finding; no alert on an improvement; >= 95% of reverts resolved; <= 1 false alert per 1,000 runs of a "
               "bimodal series at CV 2% once both modes showed): {}\n",
               met ? "met" : "NOT met");
    return met ? 0 : 1;
}
