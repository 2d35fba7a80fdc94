#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/evaluate.hpp"
#include "engine/history.hpp"
#include "engine/rules.hpp"
#include "storage/db.hpp"

namespace perfwatch {

struct PipelineOptions {
    // Compare with this run only (check --baseline); regressions are then not followed over runs.
    std::optional<std::int64_t> baseline_run;
    // Baseline runs are read through this cache when given (the daemon keeps one).
    RunCache* cache = nullptr;
    // False: the caller marks the run processed itself (the daemon does, with its alerts, in one
    // transaction).
    bool mark_processed = true;
    // Record every decided rule x entity pair in the evaluation (check --format junit).
    bool record_checks = false;
};

// A regression that opened or resolved with this run.
struct RegressionEvent {
    enum class Kind { opened, resolved };
    Kind kind = Kind::opened;
    RegressionState state;
};

struct RunOutcome {
    Evaluation evaluation;
    std::vector<RegressionEvent> events;
    std::vector<std::string> baselines;  // how each distinct baseline was chosen, for the report
};

// The run pipeline: chooses each history rule's baseline, evaluates the rules on `run`, stores
// the findings, and follows regressions over runs: a regressed() rule firing opens one (naming
// the first bad run), and it resolves after the rule's resolve_after comparable runs back inside
// the band, then marks the run processed. Processing a run twice changes nothing the second time.
Result<RunOutcome> process_run(Db& db, const RuleSet& rules, const StoredRun& run, const PipelineOptions& options = {});

}  // namespace perfwatch
