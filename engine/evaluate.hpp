#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "engine/rules.hpp"
#include "core/model.hpp"

namespace perfwatch {

// One rule decided on one entity (recorded on request, for JUnit test cases).
struct DecidedCheck {
    std::size_t rule = 0;    // index into the rule set
    std::size_t entity = 0;  // index into the run's entities
};

// A whole-program timeline (a run with a `span`, not a PyTorch profiler window) whose kernels,
// copies and sets take under this much GPU time in all is too small to act on: its findings are
// information, never warnings. The headline set (tools/headlines) labels such reports `none`.
inline constexpr double k_min_work_ns = 2e6;

// A kernel regression whose impact (share of the run's GPU work x estimated speedup, in percent
// of the run) is under this is information, never a warning or an error.
inline constexpr double k_min_regression_impact_pct = 0.5;

// A finding (not a regression) whose estimated saving is under this share of the headline's
// (the first warning, highest impact) is information beside it. Chosen on the tune half of the
// headline set: share of warnings naming the labelled problem 50.9% at 0.2, 51.9% at 0.25, 54.0%
// at 0.33, 56.2% at 0.4, 55.8% at 0.5 (where true secondary warnings start to go).
inline constexpr double k_secondary_impact_ratio = 0.4;

// A finding (not a regression) whose estimated saving is under this share of the run's GPU time
// (its impact) is information: it cannot move the run enough to head a check. Chosen on the tune
// half of the headline set, where every floor from 3.2% to 15% gives the same headlines (the one
// first warning under it there, a 3.2% copy estimate, named the wrong problem): the lowest whole
// percent of that range.
inline constexpr double k_min_warning_impact_pct = 4.0;

struct Evaluation {
    std::vector<Finding> findings;  // ranked by impact (see rank_findings)
    std::size_t evaluated = 0;      // rule x entity pairs whose condition could be decided
    std::size_t not_applicable = 0; // pairs whose condition read a metric the report lacks
    std::vector<DecidedCheck> checks;  // every decided pair, when asked for
};

// Evaluates every rule on the entities of its scope in `run`. A finding's estimated speedup
// comes from the profiler's own rule result when the rule names one (tool_finding) and the
// report has it, else from the rule's estimated_speedup expression. `histories[i]` is the
// baseline rule i's history functions read (missing or nullptr: none, so they are not applicable).
// `record_checks` fills Evaluation::checks.
Evaluation evaluate_run(const RuleSet& rules, const StoredRun& run, const std::vector<const RunHistory*>& histories = {},
                        bool record_checks = false);

// Orders findings: highest impact first, then severity, then share of GPU time, then rule id.
void rank_findings(std::vector<Finding>& findings);

}  // namespace perfwatch
