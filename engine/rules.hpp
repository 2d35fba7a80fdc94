#pragma once

#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/expr.hpp"
#include "engine/history.hpp"
#include "core/model.hpp"

namespace perfwatch {

// A place in a rule file, 1-based.
struct SourceLoc {
    std::string file;
    int line = 0;
    int col = 0;
};

// One problem found in a rule file. Printed as "file:line:col: rule 'id': message" followed by
// the offending line and a caret under the column.
struct Diagnostic {
    enum class Level { error, warning };
    Level level = Level::error;
    SourceLoc loc;
    std::string rule_id;
    std::string message;
    std::string source_line;

    // The first line: "file:line:col: error: rule 'id': message" (without "error: " or
    // "warning: " when `with_level` is false, for logs that carry the level themselves).
    std::string headline(bool with_level = true) const;
    // The headline, then the offending line and a caret under the column.
    std::string to_string() const;
};

// True when one of `diagnostics` is an error (warnings alone do not count).
bool has_errors(const std::vector<Diagnostic>& diagnostics);

// Line `line` (1-based) of `text` without its newline; empty past the end.
std::string line_of(std::string_view text, int line);

// A field of a rule whose text is an expression or template, with where it starts in the file.
struct SourceText {
    std::string text;
    SourceLoc loc;
    int offset_shift = 0;  // columns between loc and the first character of text (quotes)
    bool single_line = true;
};

// A kernel finding whose impact (its share of the run's GPU work, kernels, copies and sets, x its
// estimated speedup; its share of kernel time where the rule estimates none) is below this percent
// is not said on its own: the rule's findings below it become one summary line per run. A rule's
// `min_impact` overrides it.
inline constexpr double k_default_min_impact_pct = 1.0;

// What one change fixes: each entity the rule fires on, or all of them at once (a setting, a
// flag, pinning the host buffers): a run's findings of a `fix: run` rule are then one.
enum class FixScope { entity, run };

// A rule as written in YAML, before compilation.
struct RuleSpec {
    std::string id;
    std::string title;
    Severity severity = Severity::warning;
    EntityKind scope = EntityKind::kernel;
    SourceText when;
    SourceText message;
    std::optional<SourceText> estimated_speedup;  // percent, an expression
    std::optional<SourceText> tool_finding;       // regex over the profiler's own rule results
    std::optional<SourceText> min_share;          // skip entities below this share of run GPU time
    std::optional<SourceText> min_impact;         // a kernel finding below this impact (share x speedup,
                                                  // percent of run GPU time) joins its rule's summary line
    std::map<std::string, std::string> labels;
    // `let` bindings in order (a later one may use an earlier one); usable in every field.
    std::vector<std::pair<std::string, SourceText>> lets;
    std::vector<SourceText> appends;  // `append:` conditions, joined to `when` with `and`
    BaselineSpec baseline;            // the runs history functions compare with
    std::size_t resolve_after = 3;    // runs back inside the band before a regression resolves
    FixScope fix = FixScope::entity;
    bool enabled = true;
    // An entry with `override: true`, `append:` or `enabled:` patches the rule of the same id
    // from an earlier file: the keys it gives replace those, its lets replace lets by name.
    bool patch = false;
    std::set<std::string> keys;        // the keys the entry gives
    SourceLoc loc;
    std::vector<SourceLoc> overridden_at;  // later entries that replaced or patched this rule
};

// A named expression shared by the rules of every file loaded after it (and its own).
struct MacroSpec {
    std::string name;
    SourceText text;
};

// A named list of strings, for `name in LIST`.
struct ListSpec {
    std::string name;
    std::vector<std::string> items;
    SourceLoc loc;
};

struct RuleFile {
    std::string file;
    std::string text;  // the YAML as read, for quoting offending lines
    std::vector<RuleSpec> rules;
    std::vector<MacroSpec> macros;
    std::vector<ListSpec> lists;
    std::vector<Diagnostic> diagnostics;
};

// Reads rule specs from YAML text; every problem is collected, none stops the reading.
RuleFile parse_rule_text(const std::string& file, std::string_view text);
RuleFile parse_rule_file(const std::string& path);

// The rule packs shipped in rules/*.yaml, built into the binary: (file name, YAML text).
const std::vector<std::pair<std::string, std::string>>& shipped_rule_packs();

struct CompiledRule {
    RuleSpec spec;
    Expression when;
    Template message;
    std::optional<Expression> estimated_speedup;
    std::optional<std::regex> tool_finding;
    std::optional<double> min_share_pct;
    double min_impact_pct = k_default_min_impact_pct;
    bool uses_history = false;  // some field reads baseline(), change(), regressed(), ...
    // The condition's regressed() calls: a firing rule opens a regression followed over runs.
    std::vector<RegressionCheck> regressions;
};

struct RuleSet {
    std::vector<CompiledRule> rules;
    std::vector<RuleSpec> disabled;  // effective specs switched off with `enabled: false`
    std::vector<Diagnostic> diagnostics;
    bool has_errors() const;
    std::size_t error_count() const;
};

// Compiles rule files in order; a rule whose id repeats one of an earlier file replaces it, or
// patches it (override/append/enabled). Macros and lists of every file are visible to all rules.
// Type errors, unknown metrics and keys are errors; unused lets and macros, and messages that
// print a metric the condition does not need, are warnings.
RuleSet compile_rules(const std::vector<RuleFile>& files);

// `paths` with each directory replaced by the `*.yaml` and `*.yml` files directly in it, sorted by
// name; files and missing paths stay as given (reading them reports the problem).
std::vector<std::string> expand_rule_paths(const std::vector<std::string>& paths);

// The shipped packs, then `paths` in order (directories expanded).
std::vector<RuleFile> load_rule_files(const std::vector<std::string>& paths);

}  // namespace perfwatch
