#pragma once

#include <cstdint>
#include <optional>
#include <set>

#include "engine/rules.hpp"
#include "storage/db.hpp"

namespace perfwatch {

// The runs retention must keep for the open regressions: each one's opened, first bad, last bad
// and newest runs, every run of its series from its first bad run on, and the baseline window and
// long-horizon reference before that first bad run (the rule's `baseline.runs` plus
// k_reference_runs), so the regression keeps its baseline and can still be accepted or resolved.
Result<std::set<std::int64_t>> runs_open_regressions_need(const Db& db, const RuleSet& rules);

// Prunes per-launch samples older than `samples_days` and runs older than `runs_days` (either may
// be unset), keeping pinned runs and what the open regressions of `rules` need.
Result<PruneReport> apply_retention(Db& db, const RuleSet& rules, std::optional<int> samples_days,
                                    std::optional<int> runs_days, bool dry_run);

}  // namespace perfwatch
