#pragma once

#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/expr.hpp"
#include "storage/model.hpp"

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

    std::string to_string() const;
};

// Line `line` (1-based) of `text` without its newline; empty past the end.
std::string line_of(std::string_view text, int line);

// A field of a rule whose text is an expression or template, with where it starts in the file.
struct SourceText {
    std::string text;
    SourceLoc loc;
    int offset_shift = 0;  // columns between loc and the first character of text (quotes)
    bool single_line = true;
};

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
    std::map<std::string, std::string> labels;
    SourceLoc loc;
};

struct RuleFile {
    std::string text;  // the YAML as read, for quoting offending lines
    std::vector<RuleSpec> rules;
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
};

struct RuleSet {
    std::vector<CompiledRule> rules;
    std::vector<Diagnostic> diagnostics;
    bool has_errors() const;
};

// Compiles rule files in order; a rule whose id repeats one of an earlier file replaces it
// (users override shipped rules by id). Type errors and unknown metrics are reported here.
RuleSet compile_rules(const std::vector<RuleFile>& files);

}  // namespace perfwatch
