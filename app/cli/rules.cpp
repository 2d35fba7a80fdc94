#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "app/cli/backtest.hpp"
#include "app/rule_tests.hpp"
#include "engine/rules.hpp"

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

// Lints rule files with the shipped packs: every diagnostic; 1 on errors, else 0.
int run_rules_lint(const std::vector<std::string>& given) {
    const std::vector<std::string> paths = expand_rule_paths(given);
    const std::vector<RuleFile> files = load_rule_files(paths);
    const RuleSet rules = compile_rules(files);
    std::size_t warnings = 0;
    for (const Diagnostic& d : rules.diagnostics) {
        fmt::print(stderr, "{}\n", d.to_string());
        if (d.level == Diagnostic::Level::warning) ++warnings;
    }
    std::size_t own = 0;
    for (const RuleFile& f : files)
        if (std::find(paths.begin(), paths.end(), f.file) != paths.end()) own += f.rules.size();
    fmt::print("{} rule file(s), {} rule entr{} linted: {} error(s), {} warning(s); {} rules in effect\n", paths.size(),
               own, own == 1 ? "y" : "ies", rules.error_count(), warnings, rules.rules.size());
    return rules.has_errors() ? 1 : 0;
}

std::string loc_text(const SourceLoc& l) { return fmt::format("{}:{}:{}", l.file, l.line, l.col); }

// Prints the effective rule set (shipped packs, then `paths`, after overrides); 2 on errors.
int run_rules_list(const std::vector<std::string>& paths, bool verbose) {
    const RuleSet rules = compile_rules(load_rule_files(paths));
    for (const Diagnostic& d : rules.diagnostics)
        if (d.level == Diagnostic::Level::error) fmt::print(stderr, "{}\n", d.to_string());
    if (rules.has_errors()) return 2;
    auto print = [&](const RuleSpec& r, bool enabled) {
        fmt::print("{:<34} {:<8} {:<10} {}{}\n", r.id, enabled ? to_string(r.severity) : "disabled",
                   to_string(r.scope), loc_text(r.loc), r.overridden_at.empty() ? "" : " (overridden)");
        if (!verbose) return;
        for (const SourceLoc& o : r.overridden_at) fmt::print("    overridden at {}\n", loc_text(o));
        for (const auto& [name, text] : r.lets) fmt::print("    let {} = {}\n", name, text.text);
        fmt::print("    when: {}\n", r.when.text);
        for (const SourceText& a : r.appends) fmt::print("      and: {}    ({})\n", a.text, loc_text(a.loc));
        if (r.estimated_speedup) fmt::print("    estimated_speedup: {}\n", r.estimated_speedup->text);
        if (r.min_share) fmt::print("    min_share: {}\n", r.min_share->text);
        if (r.tool_finding) fmt::print("    tool_finding: {}\n", r.tool_finding->text);
    };
    for (const CompiledRule& r : rules.rules) print(r.spec, true);
    for (const RuleSpec& r : rules.disabled) print(r, false);
    return 0;
}

// Runs YAML rule tests; 0 when all pass (skips allowed), 1 otherwise.
int run_rules_test(const std::vector<std::string>& paths) {
    const RuleTestSummary s = run_rule_tests(expand_rule_paths(paths));
    for (const std::string& m : s.messages) fmt::print(stderr, "{}\n", m);
    fmt::print("{} test(s): {} passed, {} failed, {} skipped{}\n", s.tests, s.tests - s.failed - s.skipped, s.failed,
               s.skipped, s.broken ? " (a test file or its rules did not load)" : "");
    return s.failed > 0 || s.broken ? 1 : 0;
}

class RulesCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("rules", "Rule authoring tools: lint, list, test, backtest");
        cmd->require_subcommand(1);
        m_lint = cmd->add_subcommand("lint", "Report every error and warning in rule files; exit 1 on errors");
        m_lint->add_option("files", m_files,
                           "Rule files or directories of *.yaml (checked with the shipped packs; none: the packs alone)");
        m_list = cmd->add_subcommand("list", "Print the effective rule set after overrides");
        m_list->add_option("files", m_files, "Extra rule files, loaded after the shipped packs");
        m_list->add_flag("-v,--verbose", m_verbose, "Show conditions, lets, appended conditions and overrides");
        m_backtest = cmd->add_subcommand(
            "backtest", "What new or changed rules would have raised on the stored runs, beside the rules in effect");
        m_backtest->add_option("--rules", m_backtest_options.candidate, "New or changed rule files or directories")->required();
        m_backtest->add_option("--db", m_backtest_options.db_path, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");
        m_backtest->add_option("--since", m_backtest_options.since, "Only runs ingested since: 30d, 12h, 2026-11-01");
        m_backtest->add_option("--label", m_labels, "Only runs with label KEY=VALUE (repeatable)");
        m_backtest->add_option("--examples", m_backtest_options.examples, "Added and removed findings shown per rule (default 3)");
        m_test = cmd->add_subcommand("test", "Run YAML rule tests; exit 1 on a failure");
        m_test->add_option("files", m_files, "Rule test files or directories of *.yaml")->required();
        return cmd;
    }
    Needs needs() const override { return m_lint->parsed() || m_test->parsed() ? Needs::nothing : Needs::config; }
    int run(const Context& c) override {
        if (m_lint->parsed()) return run_rules_lint(m_files);
        if (m_test->parsed()) return run_rules_test(m_files);
        if (m_backtest->parsed()) {
            m_backtest_options.db_path = c.db_or_default(m_backtest_options.db_path);
            if (!parse_labels(m_labels, m_backtest_options.labels)) return 2;
            m_backtest_options.in_effect = c.config.rules;
            return run_rules_backtest(m_backtest_options);
        }
        std::vector<std::string> files = c.config.rules;
        files.insert(files.end(), m_files.begin(), m_files.end());
        return run_rules_list(files, m_verbose);
    }

private:
    CLI::App* m_lint = nullptr;
    CLI::App* m_list = nullptr;
    CLI::App* m_backtest = nullptr;
    CLI::App* m_test = nullptr;
    std::vector<std::string> m_files;
    bool m_verbose = false;
    BacktestCommand m_backtest_options;
    std::vector<std::string> m_labels;
};

}  // namespace

std::unique_ptr<Command> make_rules_command() { return std::make_unique<RulesCommand>(); }

}  // namespace perfwatch::cli
