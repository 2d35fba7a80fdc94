#pragma once

#include <map>
#include <string>
#include <vector>

namespace perfwatch {

struct BacktestCommand {
    std::string db_path;
    std::vector<std::string> in_effect;  // rule files in effect besides the shipped packs (configuration)
    std::vector<std::string> candidate;  // the new or changed rule files (--rules)
    std::string since;                   // 30d, 12h, 2026-11-01, or empty for every run
    std::map<std::string, std::string> labels;
    std::size_t examples = 3;
};

// `perfwatch rules backtest`: what the rules of `candidate` would have raised on the stored runs,
// beside what the rules in effect raise, per rule (runs, findings, added, removed, examples).
// Exit 0, or 2 when the rules or the database cannot be read.
int run_rules_backtest(const BacktestCommand& command);

}  // namespace perfwatch
