#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/config.hpp"
#include "engine/history.hpp"
#include "engine/pipeline.hpp"
#include "engine/rules.hpp"
#include "storage/db.hpp"

namespace perfwatch {

// What happened to one collected run on its way through the pipeline.
struct RunStepResult {
    enum class State {
        evaluated,          // stored (or found stored) and evaluated now
        already_evaluated,  // its rules had been evaluated before (by this or another daemon)
        held,               // another daemon of the fleet is evaluating it: look again later
    };
    State state = State::evaluated;
    StoreOutcome stored;
    std::shared_ptr<const StoredRun> run;  // set when evaluated
    RunOutcome outcome;                    // when evaluated
    std::size_t queued = 0;                // new alert messages in the outbox
    std::size_t silenced = 0, inhibited = 0;  // alerts left out by silences and inhibit rules
    std::string report_url;                // the run's HTML report, when one was written and is served
    std::optional<std::string> report_error;  // why the HTML report could not be written
    std::uint64_t storing_statements = 0;     // SQL statements storing it took (PERFWATCH_SQL_STATS)
};

// The one run pipeline of `check` and the daemon: store a collected run, claim its evaluation
// (a fleet evaluates each run once), evaluate its rules against its history, write its HTML report,
// build its alert messages, and mark it processed with those messages in one transaction.
class RunPipeline {
public:
    struct Options {
        const Config* config = nullptr;       // route, inhibit rules, reports; nullptr: no alerts, no report
        std::string owner;                    // non-empty: claim the evaluation for this owner (the daemon)
        RunCache* cache = nullptr;            // baseline runs kept between runs (the daemon)
        std::optional<std::int64_t> baseline_run;  // check --baseline
        bool record_checks = false;           // check --format junit
        std::function<std::int64_t()> now_ms;  // the wall clock in Unix ms (tests may give another)
        bool hold_rank_alerts = false;        // a rank of a distributed job sends nothing itself: its
                                              // job's message tells its findings (the daemon)
    };

    RunPipeline(Db& db, const RuleSet& rules, Options options);

    // Errors keep their kind: the report's fault (refused values) or the database's. `also_alert`:
    // findings sent in this run's alert messages beside its own (a job's: its ranks', merged).
    Result<RunStepResult> run(const RunBatch& batch, const std::vector<Finding>& also_alert = {});

private:
    Result<std::size_t> complete(const StoredRun& run, const RunOutcome& outcome, const std::vector<Finding>& also_alert,
                                 RunStepResult& out);

    Db& m_db;
    const RuleSet& m_rules;
    Options m_options;
};

}  // namespace perfwatch
