#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "storage/model.hpp"

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
};

// What `check` found: the runs it looked at and the ranked findings over all of them.
struct CheckReport {
    std::vector<RunRef> runs;
    std::vector<Finding> findings;
    std::size_t evaluated = 0;
    std::size_t not_applicable = 0;
};

// Human-readable report: one block per finding, worst impact first.
std::string format_check_text(const CheckReport& report);

// {"runs":[{"id","source","format","labels","notes","baselines","regressions"}],"findings":[{"rule","severity","run","entity":{"kind","name"},
//   "message","metrics":{...},"estimated_speedup_pct"}], ...}
std::string format_check_json(const CheckReport& report);

}  // namespace perfwatch
