#pragma once

#include <string>
#include <vector>

namespace perfwatch {

// Outcome of `perfwatch rules test` over test files.
struct RuleTestSummary {
    int tests = 0;
    int failed = 0;
    int skipped = 0;
    std::vector<std::string> messages;  // one per failure or skip, "file:line:col: test 'name': ..."
    std::vector<std::string> fired;     // rule ids some test expected and saw fire
    bool broken = false;                // a test file or its rules did not load
};

// Runs rule unit tests written in YAML:
//   rule_files: [team.yaml]              # loaded after the shipped packs (relative to the test file)
//   tests:
//     - name: tail effect
//       report: ../fixtures/x.csv        # a report file, or "corpus:ncu/x.txt" under $PERFWATCH_CORPUS
//       entities:                        # or entities given by their metrics (units allowed: 5ms)
//         - {kind: run, metrics: {gpu_time: 10ms}}
//         - {kind: kernel, name: gemm, metrics: {duration_total: 5ms}, attributes: {device: "0"}}
//       expect:                          # exactly these findings of the rules named here
//         - {rule: ncu-tail-effect, entity: gemm, severity: warning, message_contains: "1.50 waves"}
//       absent: [ncu-small-grid]         # rules that must not fire
RuleTestSummary run_rule_tests(const std::vector<std::string>& paths);

}  // namespace perfwatch
