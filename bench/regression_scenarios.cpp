#include "bench/regression_scenarios.hpp"

#include "bench/comparators.hpp"
#include "engine/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace perfwatch::bench {

namespace {

struct KernelDef {
    const char* name;
    double level_ns;
};

constexpr KernelDef k_kernels[] = {
    {k_shifted_kernel, 400'000}, {"attention_fwd", 250'000}, {"layernorm", 90'000}, {"softmax", 60'000},
    {"gelu", 40'000},           {"embedding", 25'000},       {"dropout", 15'000},   {"adam_step", 10'000},
};

double lognormal(std::mt19937_64& rng, double cv) {
    const double sigma = std::sqrt(std::log(1 + cv * cv));
    std::normal_distribution<double> n(-sigma * sigma / 2, sigma);
    return std::exp(n(rng));
}

// The factor on `kernel` at run `r`.
double factor(const SeriesSpec& s, std::size_t kernel, int r) {
    using C = SeriesSpec::Change;
    if (s.change == C::none || r < s.at) return 1.0;
    switch (s.change) {
        case C::shift: return kernel == 0 ? 1 + s.size : 1.0;
        case C::ramp: return kernel == 0 ? 1 + s.size * (r - s.at + 1) : 1.0;
        case C::uniform: return r == s.at ? 1 + s.size : 1.0;
        case C::clock: return 1 + s.size;
        case C::revert: return kernel == 0 && r < s.at + s.revert_after ? 1 + s.size : 1.0;
        case C::bimodal: {
            // A coin per run from the seed and the run alone (the noise's generator untouched).
            std::uint64_t z = s.seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(r) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            return kernel == 0 && ((z ^ (z >> 31)) & 1) ? 1 + s.size : 1.0;
        }
        case C::none: break;
    }
    return 1.0;
}

RunBatch make_run(std::mt19937_64& rng, const SeriesSpec& s, int r) {
    RunBatch b;
    b.format = "bench";
    b.source = fmt::format("bench-run-{}", r);
    b.sha256 = fmt::format("bench-{}-{}", s.seed, r);
    b.labels = {{"gpu", "NVIDIA H100"}, {"benchmark", "bench"}, {"commit", fmt::format("c{}", r)}};
    std::uniform_real_distribution<double> u(0, 1);
    const double run_factor = lognormal(rng, s.cv / 4);
    double gpu_time = 0, launches = 0;
    const std::size_t run = b.run_entity();
    for (std::size_t k = 0; k < std::size(k_kernels); ++k) {
        Entity e;
        e.kind = EntityKind::kernel;
        e.name = k_kernels[k].name;
        e.parent = static_cast<std::int64_t>(run);
        std::vector<double> samples;
        double total = 0;
        const double level = k_kernels[k].level_ns * factor(s, k, r) * run_factor;
        for (int i = 0; i < s.launches; ++i) {
            double d = level * lognormal(rng, s.cv);
            if (u(rng) < 0.02) d *= 2 + 2 * u(rng);
            samples.push_back(d);
            total += d;
        }
        e.set(Metric{"launches", static_cast<double>(s.launches), "count", "", ""});
        e.set(Metric{"duration", total / s.launches, "ns", "", ""});
        e.set(Metric{"duration_total", total, "ns", "", ""});
        e.samples["duration"] = std::move(samples);
        gpu_time += total;
        launches += s.launches;
        b.entities.push_back(std::move(e));
    }
    b.entities[run].set(Metric{"gpu_time", gpu_time, "ns", "", ""});
    const bool slowed = s.change == SeriesSpec::Change::clock && r >= s.at;
    b.entities[run].set(Metric{"sm_frequency", slowed ? 1.98e9 / (1 + s.size) : 1.98e9, "hz", "", ""});
    b.entities[run].set(Metric{"launches", launches, "count", "", ""});
    return b;
}

bool opened_on(const RunRecord& run, const std::string& rule, const std::string& entity) {
    return std::any_of(run.events.begin(), run.events.end(), [&](const RegressionEvent& e) {
        return e.kind == RegressionEvent::Kind::opened && e.state.rule == rule && e.state.entity_name == entity;
    });
}

// The comparators on every kernel's levels: false alerts where nothing had changed, detection of
// an upward change of the shifted kernel (index 0).
void tally_comparators(const SeriesSpec& spec, const std::vector<RunRecord>& runs, int changed_at, Tally& t) {
    const std::size_t kernels = runs.front().levels.size();
    std::vector<std::vector<bool>> t_alerts;
    std::vector<std::vector<std::optional<std::size_t>>> ph_alerts;
    for (std::size_t k = 0; k < kernels; ++k) {
        std::vector<double> series;
        for (const RunRecord& run : runs) series.push_back(run.levels[k]);
        t_alerts.push_back(median_t_test(series));
        ph_alerts.push_back(perfherder(series));
    }
    for (const RunRecord& run : runs) {
        const auto r = static_cast<std::size_t>(run.index);
        if (run.index >= changed_at || run.index < static_cast<int>(k_min_history_runs)) continue;
        bool t_any = false, ph_any = false;
        for (std::size_t k = 0; k < kernels; ++k) {
            t_any = t_any || t_alerts[k][r];
            ph_any = ph_any || ph_alerts[k][r].has_value();
        }
        t.t_false_alerts += t_any ? 1 : 0;
        t.ph_false_alerts += ph_any ? 1 : 0;
    }
    if (changed_at >= spec.runs || spec.size <= 0) return;
    const auto at = static_cast<std::size_t>(spec.at);
    for (std::size_t r = at; r < std::min(runs.size(), at + 3); ++r)
        if (t_alerts[0][r]) {
            ++t.t_detected;
            break;
        }
    for (std::size_t r = at; r < runs.size(); ++r)
        if (const auto named = ph_alerts[0][r]; named && *named + 1 >= at && *named <= at + 1) {
            ++t.ph_detected;
            t.ph_delay += static_cast<int>(r - at);
            break;
        }
}

}  // namespace

RuleSet history_rules() {
    RuleSet all = compile_rules(load_rule_files({}));
    if (all.has_errors()) throw std::runtime_error("the shipped rules do not compile");
    RuleSet out;
    for (CompiledRule& r : all.rules) {
        const auto concern = r.spec.labels.find("concern");
        if (concern != r.spec.labels.end() && (concern->second == "regression" || concern->second == "environment"))
            out.rules.push_back(std::move(r));
    }
    return out;
}

std::vector<RunRecord> run_series(const RuleSet& rules, const SeriesSpec& spec) {
    auto db = Db::open(":memory:");
    if (!db) throw std::runtime_error(db.error().to_string());
    std::mt19937_64 rng(spec.seed);
    std::vector<RunRecord> out;
    for (int r = 0; r < spec.runs; ++r) {
        RunBatch batch = make_run(rng, spec, r);
        std::vector<double> levels;
        for (const Entity& e : batch.entities)
            if (e.kind == EntityKind::kernel) levels.push_back(median(e.samples.at("duration")));
        auto stored = db->store(std::move(batch));
        if (!stored) throw std::runtime_error(stored.error().to_string());
        auto run = db->load(stored->run_id);
        if (!run || !*run) throw std::runtime_error("stored run vanished");
        auto outcome = process_run(*db, rules, **run);
        if (!outcome) throw std::runtime_error(outcome.error().to_string());
        out.push_back({r, stored->run_id, std::move(outcome->events), std::move(outcome->evaluation.findings),
                       std::move(levels)});
    }
    return out;
}

bool is_alert(const RunRecord& run) {
    for (const RegressionEvent& e : run.events)
        if (e.kind == RegressionEvent::Kind::opened) return true;
    return std::any_of(run.findings.begin(), run.findings.end(),
                       [](const Finding& f) { return f.rule == "run-uniformly-slower"; });
}

void tally(const SeriesSpec& spec, const std::vector<RunRecord>& runs, Tally& t) {
    using C = SeriesSpec::Change;
    ++t.series;
    const bool unchanged = spec.change == C::none || spec.change == C::bimodal;
    const int changed_at = unchanged ? spec.runs : spec.at;
    for (const RunRecord& run : runs) {
        if (run.index < changed_at) {
            if (run.index >= static_cast<int>(k_min_history_runs)) {
                ++t.comparisons;
                if (std::any_of(run.findings.begin(), run.findings.end(),
                                [](const Finding& f) { return f.rule == "kernel-too-noisy-to-judge"; }))
                    ++t.noisy_told;
            }
            if (is_alert(run)) ++t.false_alerts;
        } else if (spec.size < 0) {
            // An improvement of one kernel: an alert on it or on the run is the improvement's
            // fault; one on an untouched kernel is the base rate, counted with the false alerts.
            const bool caused =
                std::any_of(run.events.begin(), run.events.end(),
                            [](const RegressionEvent& e) {
                                return e.kind == RegressionEvent::Kind::opened &&
                                       (e.state.entity_name == k_shifted_kernel || e.state.entity_kind != EntityKind::kernel);
                            }) ||
                std::any_of(run.findings.begin(), run.findings.end(),
                            [](const Finding& f) { return f.rule == "run-uniformly-slower"; });
            ++t.comparisons;
            if (caused) ++t.improvement_alerts;
            else if (is_alert(run)) ++t.false_alerts;
        }
    }
    tally_comparators(spec, runs, changed_at, t);
    if (spec.change == C::bimodal) {
        // Alerts once the series has shown both modes (3 runs each, two switches) before the run.
        const double split = k_kernels[0].level_ns * (1 + spec.size / 2);
        int high = 0, low = 0, switches = 0;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            const bool shown = high >= 3 && low >= 3 && switches >= 2;
            if (shown && runs[i].index >= static_cast<int>(k_min_history_runs)) {
                ++t.bimodal_shown_runs;
                if (is_alert(runs[i])) ++t.bimodal_shown_alerts;
            }
            const bool is_high = runs[i].levels[0] > split;
            (is_high ? high : low) += 1;
            if (i > 0 && is_high != (runs[i - 1].levels[0] > split)) ++switches;
        }
    }
    if (spec.change == C::bimodal)
        for (const RunRecord& run : runs)
            if (run.index >= static_cast<int>(k_min_history_runs) && std::any_of(run.findings.begin(), run.findings.end(),
                                               [](const Finding& f) { return f.rule == "run-time-bimodal"; }))
                ++t.bimodal_told;
    if (unchanged || spec.size < 0) return;
    const std::int64_t change_run = runs[static_cast<std::size_t>(spec.at)].run_id;
    if (spec.change == C::shift || spec.change == C::ramp || spec.change == C::revert) {
        const int window = spec.change == C::ramp ? 10 : 3;
        for (int r = spec.at; r < std::min(spec.runs, spec.at + window); ++r) {
            const RunRecord& run = runs[static_cast<std::size_t>(r)];
            if (!opened_on(run, "kernel-time-regression", k_shifted_kernel)) continue;
            ++t.detected;
            for (const RegressionEvent& e : run.events)
                if (e.state.rule == "kernel-time-regression" && e.state.entity_name == k_shifted_kernel &&
                    e.state.first_bad_run == change_run)
                    ++t.first_bad_exact;
            break;
        }
    }
    if (spec.change == C::shift && spec.at + 6 < spec.runs) {
        const RunRecord& later = runs[static_cast<std::size_t>(spec.at + 6)];
        for (const Finding& f : later.findings)
            if (f.rule == "kernel-time-regression" && f.entity_name == k_shifted_kernel && f.comparison &&
                f.comparison->first_bad_run == change_run)
                ++t.still_open;
    }
    if (spec.change == C::shift) {
        for (int r = spec.at; r < std::min(spec.runs, spec.at + 3); ++r) {
            const RunRecord& run = runs[static_cast<std::size_t>(r)];
            const auto opened = std::find_if(run.events.begin(), run.events.end(), [](const RegressionEvent& e) {
                return e.kind == RegressionEvent::Kind::opened && e.state.rule == "run-gpu-time-regression";
            });
            if (opened == run.events.end()) continue;
            ++t.run_detected;
            t.run_on_time += r == spec.at ? 1 : 0;
            t.run_first_bad_exact += opened->state.first_bad_run == change_run ? 1 : 0;
            break;
        }
    }
    if (spec.change == C::clock) {
        const RunRecord& run = runs[static_cast<std::size_t>(spec.at)];
        t.clock_told += std::any_of(run.findings.begin(), run.findings.end(),
                                    [](const Finding& f) { return f.rule == "run-clock-changed"; })
                            ? 1
                            : 0;
        for (int r = spec.at; r < spec.runs; ++r)
            for (const RegressionEvent& e : runs[static_cast<std::size_t>(r)].events)
                t.clock_regressions += e.kind == RegressionEvent::Kind::opened ? 1 : 0;
    }
    if (spec.change == C::uniform) {
        const RunRecord& run = runs[static_cast<std::size_t>(spec.at)];
        const auto whole = std::count_if(run.findings.begin(), run.findings.end(),
                                         [](const Finding& f) { return f.rule == "run-uniformly-slower"; });
        const auto opened = std::count_if(run.events.begin(), run.events.end(), [](const RegressionEvent& e) {
            return e.kind == RegressionEvent::Kind::opened;
        });
        t.per_kernel_alerts += static_cast<int>(opened);
        if (whole == 1 && opened == 0) ++t.uniform_single;
    }
    if (spec.change == C::revert) {
        std::vector<std::int64_t> opened, resolved;
        for (const RunRecord& run : runs)
            for (const RegressionEvent& e : run.events)
                (e.kind == RegressionEvent::Kind::opened ? opened : resolved).push_back(e.state.id);
        if (!opened.empty() && std::all_of(opened.begin(), opened.end(), [&](std::int64_t id) {
                return std::find(resolved.begin(), resolved.end(), id) != resolved.end();
            }))
            ++t.resolved;
    }
}

}  // namespace perfwatch::bench
