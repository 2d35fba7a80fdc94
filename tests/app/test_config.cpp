#include <gtest/gtest.h>

#include "app/config.hpp"

namespace perfwatch {

TEST(Config, ReadsSettingsAndResolvesPathsFromItsDirectory) {
    const ConfigLoad c = parse_config_text("/etc/perfwatch/config.yaml", R"(database: perfwatch.db
rules: [team.yaml, /abs/rules.yaml]
converters:
  - extension: .nsys-rep
    command: [/opt/nsys/bin/nsys, export, --type, sqlite, --output, "{output}", "{input}"]
    output_suffix: .sqlite
    timeout: 120s
  - extension: .rpd
    command: [rpd2json, "{input}"]
)");
    ASSERT_TRUE(c.ok()) << (c.diagnostics.empty() ? "" : c.diagnostics[0].to_string());
    EXPECT_EQ(c.config.database, "/etc/perfwatch/perfwatch.db");
    ASSERT_EQ(c.config.rules.size(), 2u);
    EXPECT_EQ(c.config.rules[0], "/etc/perfwatch/team.yaml");
    EXPECT_EQ(c.config.rules[1], "/abs/rules.yaml");
    // The file's .nsys-rep entry replaces the default one; .ncu-rep and .qdrep defaults stay.
    const Converter* nsys = converter_for(c.config.converters, "a.nsys-rep");
    ASSERT_NE(nsys, nullptr);
    EXPECT_EQ(nsys->command[0], "/opt/nsys/bin/nsys");
    EXPECT_EQ(nsys->timeout_s, 120);
    EXPECT_NE(converter_for(c.config.converters, "a.ncu-rep"), nullptr);
    EXPECT_NE(converter_for(c.config.converters, "a.rpd"), nullptr);
    EXPECT_EQ(c.config.converters.size(), 4u);
}

TEST(Config, EveryErrorWithLineAndColumn) {
    const ConfigLoad c = parse_config_text("cfg.yaml", R"(database: [a, b]
databse: x.db
converters:
  - extension: nsys-rep
    command: [nsys]
  - extension: .ncu-rep
    command: ncu --import {input}
    timeout: soon
)");
    EXPECT_FALSE(c.ok());
    std::vector<std::string> got;
    for (const Diagnostic& d : c.diagnostics) got.push_back(d.to_string());
    ASSERT_EQ(got.size(), 5u) << ::testing::PrintToString(got);
    EXPECT_EQ(got[0], "cfg.yaml:1:11: error: 'database' must be a single value\n  database: [a, b]\n            ^");
    EXPECT_TRUE(got[1].starts_with("cfg.yaml:2:1: error: unknown setting 'databse'")) << got[1];
    EXPECT_TRUE(got[2].starts_with("cfg.yaml:4:5: error: a converter needs 'extension', starting with a dot")) << got[2];
    EXPECT_TRUE(got[3].starts_with("cfg.yaml:7:14: error: 'command' must be a non-empty list")) << got[3];
    EXPECT_TRUE(got[4].starts_with("cfg.yaml:8:14: error: 'timeout' must be a number of seconds")) << got[4];
}

TEST(Config, InvalidYamlIsADiagnostic) {
    const ConfigLoad c = parse_config_text("cfg.yaml", "database: x\n  rules: [\n");
    ASSERT_FALSE(c.ok());
    EXPECT_TRUE(c.diagnostics[0].to_string().starts_with("cfg.yaml:2:")) << c.diagnostics[0].to_string();
}

}  // namespace perfwatch
