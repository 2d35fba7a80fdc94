#pragma once

#include <cstdint>
#include <memory>
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

// The baseline histories the history rules of `rules` read for `run` (runs stored before it, or
// `baseline_run` for all): one per distinct baseline spec, owned here.
struct RunHistories {
    std::vector<std::unique_ptr<RunHistory>> owned;
    std::vector<const RunHistory*> per_rule;  // by rule index; nullptr for rules without history
    std::vector<std::string> descriptions;    // how each was chosen
};
Result<RunHistories> choose_histories(const Db& db, const RuleSet& rules, const StoredRun& run,
                                      std::optional<std::int64_t> baseline_run = std::nullopt, RunCache* cache = nullptr);

// The run pipeline: chooses each history rule's baseline, evaluates the rules on `run`, stores
// the findings, and follows regressions over runs: a regressed() rule firing opens one (naming
// the first bad run), and it resolves after the rule's resolve_after comparable runs back inside
// the band, then marks the run processed. Processing a run twice changes nothing the second time.
Result<RunOutcome> process_run(Db& db, const RuleSet& rules, const StoredRun& run, const PipelineOptions& options = {});

}  // namespace perfwatch
