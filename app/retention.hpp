#pragma once

#include <optional>
#include <string>
#include <vector>

namespace perfwatch {

struct DbPruneOptions {
    std::string db_path;
    std::optional<int> samples_days;  // per-launch samples of runs older than this go
    std::optional<int> runs_days;     // runs (entities, findings) older than this go
    std::vector<std::string> rule_paths;  // rules whose baselines open regressions use
    bool dry_run = false;
    bool vacuum = false;  // rewrite the file afterwards so it shrinks (takes a copy's time and space)
};

// `perfwatch db prune`: applies the retention policy, keeping pinned runs and what open
// regressions need; prints what went and the bytes in use before and after. Exit 0, or 2.
int run_db_prune(const DbPruneOptions& options);

}  // namespace perfwatch
