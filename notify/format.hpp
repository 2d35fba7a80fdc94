#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model.hpp"

namespace perfwatch {

// A run as findings reports name it.
struct RunRef {
    std::int64_t id = 0;
    std::string source;
    std::string format;
    std::map<std::string, std::string> labels;
    std::vector<std::string> notes;
    std::vector<std::string> baselines;    // how the run's baselines were chosen
    std::vector<std::string> regressions;  // regressions this run opened or resolved, as sentences
    std::optional<double> gpu_time;        // the run's kernel time (ns), for a headline's saving in time
};

// One rule decided on one entity of a run: a JUnit test case.
struct CheckCase {
    std::int64_t run_id = 0;
    std::string rule;
    EntityKind entity_kind = EntityKind::kernel;
    std::string entity_name;
};

// What `check` found: the runs it looked at and the ranked findings over all of them.
struct CheckReport {
    std::vector<RunRef> runs;
    std::vector<Finding> findings;
    std::size_t evaluated = 0;
    std::size_t not_applicable = 0;
    std::vector<CheckCase> cases;  // filled for JUnit output
    std::vector<std::string> views;  // preformatted views printed after the runs (a job's ranks)
};

// The gpu_time of `batch`'s run entity; nullopt without one.
std::optional<double> run_gpu_time(const RunBatch& batch);

// The headline of a check: the first warning or error (findings come ranked by impact), its
// entity and what fixing it could save, in time where the run's GPU time is known; "nothing to act
// on" when there is none. One line, plain text (callers escape it for their medium).
std::string check_headline(const CheckReport& report);

// Human-readable report: the headline first, then one block per finding, worst impact first.
std::string format_check_text(const CheckReport& report);

// {"runs":[{"id","source","format","labels","notes","baselines","regressions"}],"findings":[{"rule","severity","run","entity":{"kind","name"},
//   "message","metrics":{...},"estimated_speedup_pct"}], "headline": "...", "summary": {...}}
std::string format_check_json(const CheckReport& report);

// GitHub-flavoured Markdown for a pull-request comment: a summary line, the runs, a table of
// regressions (before, after, change, confidence), then the findings with their guidance, worst
// first. Never longer than `max_chars`: findings that do not fit are counted, not shown.
std::string format_check_markdown(const CheckReport& report, std::size_t max_chars = 65000);

// JUnit XML (the schema Jenkins and GitLab read): a test suite per run, a test case per rule
// and entity decided, a failure for each finding at or above `fail_on`; findings below it are
// the case's system-out.
std::string format_check_junit(const CheckReport& report, Severity fail_on);

}  // namespace perfwatch
