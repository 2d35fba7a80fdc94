#include <gtest/gtest.h>

#include "engine/rules.hpp"
#include "tests/engine/diagnostics_text.hpp"
#include "tests/support.hpp"

namespace perfwatch {

TEST(Rules, ShippedPacksCompileCleanly) {
    std::vector<RuleFile> files;
    for (const auto& [name, text] : shipped_rule_packs()) files.push_back(parse_rule_text(name, text));
    ASSERT_FALSE(files.empty());
    const RuleSet set = compile_rules(files);
    EXPECT_TRUE(set.diagnostics.empty()) << all(set.diagnostics);
    EXPECT_GE(set.rules.size(), 6u);
}

TEST(Rules, AllDiagnosticsAtOnceWithFileLineColumnAndCaret) {
    const std::string yaml =
        "rules:\n"                                  // 1
        "  - id: slow\n"                            // 2
        "    severity: warning\n"                   // 3
        "    scope: kernel\n"                       // 4
        "    when: duraton > 5us\n"                 // 5
        "    message: \"slow {duration:.1f}\"\n"    // 6
        "    colour: red\n"                         // 7
        "  - id: bad-sev\n"                         // 8
        "    severity: fatal\n"                     // 9
        "    when: \"launches > 1 and name + 1\"\n" // 10
        "    message: x\n";                         // 11
    const RuleFile file = parse_rule_text("team.yaml", yaml);
    const RuleSet set = compile_rules({file});
    const std::string text = all(set.diagnostics);
    ASSERT_EQ(set.diagnostics.size(), 4u) << text;
    EXPECT_TRUE(set.has_errors());
    EXPECT_NE(text.find("team.yaml:7:5: error: rule 'slow': unknown key 'colour'"), std::string::npos) << text;
    EXPECT_NE(text.find("team.yaml:9:15: error: rule 'bad-sev': severity 'fatal'"), std::string::npos) << text;
    EXPECT_NE(text.find("team.yaml:5:11: error: rule 'slow': when: unknown metric 'duraton'"), std::string::npos)
        << text;
    // Quoted scalar: the column points into the expression, past the quote.
    EXPECT_NE(text.find("team.yaml:10:29: error: rule 'bad-sev': when: left of '+' needs a number"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("    when: duraton > 5us\n            ^"), std::string::npos) << text;
}

TEST(Rules, InvalidYamlIsReportedWithItsPosition) {
    const RuleFile file = parse_rule_text("broken.yaml", "rules:\n  - id: [unclosed\n");
    ASSERT_EQ(file.diagnostics.size(), 1u);
    EXPECT_NE(file.diagnostics[0].to_string().find("broken.yaml:"), std::string::npos);
    EXPECT_NE(file.diagnostics[0].message.find("invalid YAML"), std::string::npos);
}

TEST(Rules, LaterFilesOverrideRulesById) {
    const RuleFile shipped = parse_rule_text("a.yaml",
                                             "rules:\n  - id: r\n    when: launches > 1\n    message: a\n"
                                             "  - id: other\n    when: launches > 0\n    message: o\n");
    const RuleFile user =
        parse_rule_text("b.yaml", "rules:\n  - id: r\n    severity: error\n    when: launches > 100\n    message: b\n");
    const RuleSet set = compile_rules({shipped, user});
    ASSERT_TRUE(set.diagnostics.empty()) << all(set.diagnostics);
    ASSERT_EQ(set.rules.size(), 2u);
    EXPECT_EQ(set.rules[0].spec.id, "r");
    EXPECT_EQ(set.rules[0].spec.severity, Severity::error);
    EXPECT_EQ(set.rules[0].when.source(), "launches > 100");
}

TEST(Rules, ConditionMustBeBoolean) {
    const RuleSet set =
        compile_rules({parse_rule_text("c.yaml", "rules:\n  - id: r\n    when: duration * 2\n    message: m\n")});
    ASSERT_EQ(set.diagnostics.size(), 1u);
    EXPECT_NE(set.diagnostics[0].message.find("must be true or false"), std::string::npos);
}

}  // namespace perfwatch

namespace perfwatch {

// The README's example rule must stay valid.
TEST(Rules, ReadmeExampleCompiles) {
    const std::string readme = test::read_file(std::string(PERFWATCH_SOURCE_DIR) + "/README.md");
    const std::size_t start = readme.find("```yaml\nrules:");
    ASSERT_NE(start, std::string::npos);
    const std::size_t end = readme.find("```", start + 7);
    const std::string yaml = readme.substr(start + 8, end - start - 8);
    const RuleSet set = compile_rules({parse_rule_text("README.md", yaml)});
    EXPECT_TRUE(set.diagnostics.empty()) << all(set.diagnostics);
    EXPECT_EQ(set.rules.size(), 1u);
}

}  // namespace perfwatch
