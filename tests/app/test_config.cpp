#include <gtest/gtest.h>

#include "app/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>

#include "tests/support.hpp"

namespace perfwatch {

namespace {

// Each diagnostic's first line ("file:line:col: level: message"), in order.
std::vector<std::string> first_lines(const std::vector<Diagnostic>& diagnostics) {
    std::vector<std::string> out;
    for (const Diagnostic& d : diagnostics) out.push_back(d.to_string().substr(0, d.to_string().find('\n')));
    return out;
}

}  // namespace

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

TEST(Config, DaemonSettings) {
    const ConfigLoad c = parse_config_text("/etc/perfwatch/config.yaml", R"(watch:
  - path: /srv/reports/
    recursive: false
    include: ["*.csv", "nightly/*.json"]
    exclude: "*.bak"
    labels: {project: llm, site: lab}
    path_template: "{branch}/{commit}/**"
  - path: incoming
workers: 3
quiet_period: 250ms
shutdown_timeout: 1m
listen: "[::1]:0"
log_level: debug
)");
    ASSERT_TRUE(c.ok()) << c.diagnostics[0].to_string();
    ASSERT_EQ(c.config.watch.size(), 2u);
    const WatchSpec& w = c.config.watch[0];
    EXPECT_EQ(w.path, "/srv/reports");
    EXPECT_FALSE(w.recursive);
    EXPECT_EQ(w.include, (std::vector<std::string>{"*.csv", "nightly/*.json"}));
    EXPECT_EQ(w.exclude, std::vector<std::string>{"*.bak"});
    EXPECT_EQ(w.labels.at("project"), "llm");
    ASSERT_TRUE(w.path_template.has_value());
    // A relative template starts at the watched directory.
    const auto labels = w.path_template->match("/srv/reports/main/abc123/run/a.csv");
    ASSERT_TRUE(labels.has_value());
    EXPECT_EQ(labels->at("branch"), "main");
    EXPECT_EQ(labels->at("commit"), "abc123");
    EXPECT_EQ(c.config.watch[1].path, "/etc/perfwatch/incoming");
    EXPECT_TRUE(c.config.watch[1].recursive);
    EXPECT_EQ(c.config.watch[1].exclude, WatchSpec::default_excludes());
    EXPECT_EQ(c.config.workers, 3);
    EXPECT_EQ(c.config.quiet_period, std::chrono::milliseconds(250));
    EXPECT_EQ(c.config.shutdown_timeout, std::chrono::milliseconds(60000));
    EXPECT_EQ(c.config.listen, "[::1]:0");
    EXPECT_EQ(c.config.log_level, "debug");
    // The defaults: loopback only.
    EXPECT_EQ(parse_config_text("c.yaml", "").config.listen, "127.0.0.1:9464");
}

TEST(Config, DaemonSettingErrorsWithLineAndColumn) {
    const ConfigLoad c = parse_config_text("cfg.yaml", R"(watch:
  - path: /a
    recursiv: true
  - recursive: maybe
  - path: /a/b
workers: many
quiet_period: soon
listen: localhost
log_level: loud
)");
    const std::vector<std::string> got = first_lines(c.diagnostics);
    ASSERT_EQ(got.size(), 8u) << ::testing::PrintToString(got);
    EXPECT_TRUE(got[0].starts_with("cfg.yaml:3:5: error: unknown watch setting 'recursiv'")) << got[0];
    EXPECT_TRUE(got[1].starts_with("cfg.yaml:4:16: error: 'recursive' must be true or false")) << got[1];
    EXPECT_TRUE(got[2].starts_with("cfg.yaml:4:5: error: a watched directory needs 'path'")) << got[2];
    EXPECT_TRUE(got[3].starts_with("cfg.yaml:6:10: error: 'workers' must be a whole number")) << got[3];
    EXPECT_TRUE(got[4].starts_with("cfg.yaml:7:15: error: 'quiet_period' must be a duration")) << got[4];
    EXPECT_TRUE(got[5].starts_with("cfg.yaml:8:9: error: 'listen' must be ADDRESS:PORT")) << got[5];
    EXPECT_TRUE(got[6].starts_with("cfg.yaml:9:12: error: 'log_level' must be debug")) << got[6];
    EXPECT_TRUE(got[7].starts_with("cfg.yaml:5:5: error: '/a/b' is inside the watched directory '/a' (line 2)"))
        << got[7];
}

TEST(Config, ReceiversReadSecretsFromFilesAndEnvironment) {
    test::TempDir dir;
    {
        std::ofstream(dir.file("slack-url")) << "https://hooks.slack.example/services/SECRET1\n";
    }
    ::setenv("PERFWATCH_TEST_SMTP_PASSWORD", "hunter2-SECRET2", 1);
    const std::string text = fmt::format(R"(receivers:
  - name: chat
    type: slack
    url_file: {}
  - name: mail
    type: email
    smtp_url: smtp://mail.example.com:587
    from: perfwatch@example.com
    to: [gpu@example.com, ops@example.com]
    username: perfwatch
    password_env: PERFWATCH_TEST_SMTP_PASSWORD
  - name: archive
    type: jsonl
    path: alerts.jsonl
    rate_limit: 0s
route:
  receiver: archive
  group_by: [project, branch]
  repeat_interval: 4h
  routes:
    - match: {{severity: warning, project: "llm*"}}
      receiver: chat
      continue: true
    - match: {{rule: "*-regression"}}
      receiver: mail
)",
                                         dir.file("slack-url"));
    const ConfigLoad c = parse_config_text(dir.file("perfwatch.yaml"), text);
    ASSERT_TRUE(c.ok()) << c.diagnostics[0].to_string();
    ASSERT_EQ(c.config.receivers.size(), 3u);
    EXPECT_EQ(c.config.receivers[0].url, "https://hooks.slack.example/services/SECRET1");
    EXPECT_EQ(c.config.receivers[0].url_source, "file " + dir.file("slack-url"));
    EXPECT_EQ(c.config.receivers[0].rate_limit, std::chrono::seconds(1));  // Slack's default
    EXPECT_EQ(c.config.receivers[1].password, "hunter2-SECRET2");
    EXPECT_TRUE(c.config.receivers[1].starttls);
    EXPECT_EQ(c.config.receivers[1].to.size(), 2u);
    EXPECT_EQ(c.config.receivers[2].path, dir.file("alerts.jsonl"));
    ASSERT_TRUE(c.config.route.has_value());
    EXPECT_EQ(c.config.route->group_by, (std::vector<std::string>{"project", "branch"}));
    EXPECT_EQ(c.config.route->repeat_interval, std::chrono::hours(4));
    ASSERT_EQ(c.config.route->routes.size(), 2u);
    EXPECT_TRUE(c.config.route->routes[0].continue_matching);
    EXPECT_EQ(c.config.route->routes[1].match.at("rule"), "*-regression");
    ::unsetenv("PERFWATCH_TEST_SMTP_PASSWORD");
}

TEST(Config, ReceiverAndRouteErrorsNeverQuoteASecret) {
    ::unsetenv("PERFWATCH_TEST_UNSET");
    const ConfigLoad c = parse_config_text("cfg.yaml", R"(receivers:
  - name: chat
    type: slack
    url: https://hooks.slack.example/services/INLINE-SECRET
  - name: pager
    type: pagerduty
  - name: mail
    type: email
    smtp_url: mail.example.com:25
    password: INLINE-PASSWORD
  - name: env
    type: webhook
    url_env: PERFWATCH_TEST_UNSET
route:
  match: {project: x}
  routes:
    - receiver: nobody
)");
    const std::vector<std::string> got = first_lines(c.diagnostics);
    for (const std::string& g : got) {
        EXPECT_EQ(g.find("INLINE-SECRET"), std::string::npos) << g;
        EXPECT_EQ(g.find("INLINE-PASSWORD"), std::string::npos) << g;
    }
    const auto has = [&](const std::string& text) {
        return std::any_of(got.begin(), got.end(), [&](const std::string& g) { return g.starts_with(text); });
    };
    EXPECT_TRUE(has("cfg.yaml:4:10: error: receiver 'chat': a webhook URL is a secret")) << ::testing::PrintToString(got);
    EXPECT_TRUE(has("cfg.yaml:2:5: error: receiver 'chat' needs url_file or url_env"));
    EXPECT_TRUE(has("cfg.yaml:6:11: error: receiver 'pager': unknown type 'pagerduty'"));
    EXPECT_TRUE(has("cfg.yaml:10:15: error: receiver 'mail': give the password with password_file"));
    EXPECT_TRUE(has("cfg.yaml:7:5: error: receiver 'mail' needs smtp_url, from and to"));
    EXPECT_TRUE(has("cfg.yaml:9:15: error: receiver 'mail': smtp_url must start with smtp://"));
    EXPECT_TRUE(has("cfg.yaml:13:14: error: receiver 'env': environment variable PERFWATCH_TEST_UNSET is not set"));
    EXPECT_TRUE(has("cfg.yaml:15:3: error: the top route takes every alert"));
    EXPECT_TRUE(has("cfg.yaml:15:3: error: the top route needs 'receiver'"));
    EXPECT_TRUE(has("cfg.yaml:17:17: error: route names receiver 'nobody'"));
}

// A receiver type is a row of the sink table: its checks and its default rate limit come from the sink.
TEST(Config, DiscordReceiverIsCheckedByItsSink) {
    ::setenv("PERFWATCH_TEST_DISCORD_URL", "http://127.0.0.1:9/hook", 1);
    const ConfigLoad ok = parse_config_text("cfg.yaml", R"(receivers:
  - name: gpu-discord
    type: discord
    url_env: PERFWATCH_TEST_DISCORD_URL
route:
  receiver: gpu-discord
)");
    EXPECT_TRUE(ok.diagnostics.empty()) << ::testing::PrintToString(first_lines(ok.diagnostics));
    ASSERT_EQ(ok.config.receivers.size(), 1u);
    EXPECT_EQ(ok.config.receivers[0].type, "discord");
    EXPECT_EQ(ok.config.receivers[0].rate_limit, std::chrono::seconds(1));
    const ConfigLoad bad = parse_config_text("cfg.yaml", R"(receivers:
  - name: gpu-discord
    type: discord
route:
  receiver: gpu-discord
)");
    const std::vector<std::string> got = first_lines(bad.diagnostics);
    ASSERT_EQ(got.size(), 1u) << ::testing::PrintToString(got);
    EXPECT_TRUE(got[0].starts_with("cfg.yaml:2:5: error: receiver 'gpu-discord' needs url_file or url_env")) << got[0];
    ::unsetenv("PERFWATCH_TEST_DISCORD_URL");
}

// The code-host receivers need their repository and a token from a file or the environment;
// a token written into the configuration is refused.
TEST(Config, CodeHostReceiversNeedARepositoryAndATokenFromAFileOrTheEnvironment) {
    ::setenv("PERFWATCH_TEST_GITHUB_TOKEN", "ghp_x", 1);
    const ConfigLoad ok = parse_config_text("cfg.yaml", R"(receivers:
  - name: pr
    type: github
    repository: octo-org/gpu-app
    api_url: https://github.example/api/v3/
    token_env: PERFWATCH_TEST_GITHUB_TOKEN
route:
  receiver: pr
)");
    EXPECT_TRUE(ok.diagnostics.empty()) << ::testing::PrintToString(first_lines(ok.diagnostics));
    ASSERT_EQ(ok.config.receivers.size(), 1u);
    EXPECT_EQ(ok.config.receivers[0].token, "ghp_x");
    EXPECT_EQ(ok.config.receivers[0].api_url, "https://github.example/api/v3");
    EXPECT_EQ(ok.config.receivers[0].repository, "octo-org/gpu-app");
    ::unsetenv("PERFWATCH_TEST_GITHUB_TOKEN");
    const ConfigLoad bad = parse_config_text("cfg.yaml", R"(receivers:
  - name: mr
    type: gitlab
    token: glpat-inline
    api_url: gitlab.example
route:
  receiver: mr
)");
    const std::vector<std::string> got = first_lines(bad.diagnostics);
    const auto has = [&](const std::string& text) {
        return std::any_of(got.begin(), got.end(), [&](const std::string& d) { return d.starts_with(text); });
    };
    EXPECT_TRUE(has("cfg.yaml:4:12: error: receiver 'mr': an API token is a secret")) << ::testing::PrintToString(got);
    EXPECT_TRUE(has("cfg.yaml:5:14: error: receiver 'mr': api_url must start with http:// or https://"));
    EXPECT_TRUE(has("cfg.yaml:2:5: error: receiver 'mr' needs repository (the project's path or id)"));
    EXPECT_TRUE(has("cfg.yaml:2:5: error: receiver 'mr' needs token_file or token_env (the API token)"));
}

// The quoted configuration line under a diagnostic masks secret values too, in the CLI's output.
TEST(Config, ConfigCheckQuotesLinesWithSecretsMasked) {
    test::TempDir dir;
    test::write_file(dir.path() / "perfwatch.yaml", R"(receivers:
  - name: chat
    type: slack
    url: https://hooks.slack.example/services/INLINE-SECRET
  - name: mail
    type: email
    smtp_url: smtp://ci:SMTP-PASSWORD@mail.example.com:25
    password: INLINE-PASSWORD
    api_token: INLINE-TOKEN
route:
  receiver: chat
)");
    const auto r = test::run_perfwatch({"config", "check", dir.file("perfwatch.yaml")});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    const std::string all = r.out + r.err;
    for (const std::string secret : {"INLINE-SECRET", "SMTP-PASSWORD", "INLINE-PASSWORD", "INLINE-TOKEN"})
        EXPECT_EQ(all.find(secret), std::string::npos) << secret << " printed:\n" << all;
    EXPECT_NE(all.find("perfwatch.yaml:4:10: error: receiver 'chat': a webhook URL is a secret"), std::string::npos)
        << all;
    EXPECT_NE(all.find("url: <redacted>"), std::string::npos) << all;
    EXPECT_NE(all.find("password: <redacted>"), std::string::npos) << all;
}

TEST(Config, GroupWaitAndGroupIntervalOnRoutes) {
    const ConfigLoad ok = parse_config_text("cfg.yaml", R"(receivers:
  - {name: a, type: stdout}
route:
  receiver: a
  group_wait: 30s
  group_interval: 5m
  routes:
    - {match: {project: x}, receiver: a, group_wait: 1s}
)");
    EXPECT_TRUE(ok.ok());
    ASSERT_TRUE(ok.config.route.has_value());
    EXPECT_EQ(ok.config.route->group_wait, std::chrono::milliseconds(30000));
    EXPECT_EQ(ok.config.route->group_interval, std::chrono::milliseconds(300000));
    EXPECT_EQ(ok.config.route->routes.at(0).group_wait, std::chrono::milliseconds(1000));

    const ConfigLoad bad = parse_config_text("cfg.yaml", R"(receivers:
  - {name: a, type: stdout}
route:
  receiver: a
  group_wait: soon
  group_interval: [1m]
)");
    const std::vector<std::string> got = first_lines(bad.diagnostics);
    ASSERT_EQ(got.size(), 2u) << ::testing::PrintToString(got);
    EXPECT_TRUE(got[0].starts_with("cfg.yaml:5:15: error: 'group_wait'")) << got[0];
    EXPECT_TRUE(got[1].starts_with("cfg.yaml:6:19: error: 'group_interval'")) << got[1];
}

TEST(Config, InhibitRulesAndTheirMistakesWithLineAndColumn) {
    const ConfigLoad ok = parse_config_text("cfg.yaml", R"(inhibit_rules:
  - source_match: {rule: "*-regression"}
    target_match: {severity: info}
    equal: [entity, project]
)");
    EXPECT_TRUE(ok.ok()) << ::testing::PrintToString(ok.diagnostics.size());
    ASSERT_EQ(ok.config.inhibit_rules.size(), 1u);
    EXPECT_EQ(ok.config.inhibit_rules[0].source_match.at("rule"), "*-regression");
    EXPECT_EQ(ok.config.inhibit_rules[0].equal, (std::vector<std::string>{"entity", "project"}));
    EXPECT_EQ(ok.config.inhibit_rules[0].line, 2);

    const ConfigLoad bad = parse_config_text("cfg.yaml", R"(inhibit_rules:
  - source_match: [rule]
    target_match: {severity: urgent}
    equal: entity
    mute: true
  - target_match: {rule: x}
)");
    const std::vector<std::string> got = first_lines(bad.diagnostics);
    const auto has = [&](const std::string& text) {
        return std::any_of(got.begin(), got.end(), [&](const std::string& g) { return g.starts_with(text); });
    };
    EXPECT_TRUE(has("cfg.yaml:2:19: error: 'source_match' must be a mapping")) << ::testing::PrintToString(got);
    EXPECT_TRUE(has("cfg.yaml:3:30: error: severity must be info, warning or error; found 'urgent'"))
        << ::testing::PrintToString(got);
    EXPECT_TRUE(has("cfg.yaml:4:12: error: 'equal' must be a list of labels")) << ::testing::PrintToString(got);
    EXPECT_TRUE(has("cfg.yaml:5:5: error: unknown inhibit rule setting 'mute'")) << ::testing::PrintToString(got);
    EXPECT_TRUE(has("cfg.yaml:6:5: error: an inhibit rule needs 'source_match'")) << ::testing::PrintToString(got);
}

TEST(Config, ReportsDirectoryAndBaseUrl) {
    const ConfigLoad ok = parse_config_text("/etc/perfwatch/config.yaml",
                                            "reports:\n  directory: html\n  base_url: https://ci.example/perfwatch\n");
    ASSERT_TRUE(ok.ok()) << ok.diagnostics[0].to_string();
    EXPECT_EQ(ok.config.reports_directory, "/etc/perfwatch/html");
    EXPECT_EQ(ok.config.reports_base_url, "https://ci.example/perfwatch/");
    const ConfigLoad bad = parse_config_text("c.yaml", "reports:\n  base_url: ftp://x\n  dir: y\n");
    const std::vector<std::string> got = first_lines(bad.diagnostics);
    ASSERT_EQ(got.size(), 2u) << ::testing::PrintToString(got);
    EXPECT_TRUE(got[0].starts_with("c.yaml:2:13: error: 'base_url' must start with http:// or https://")) << got[0];
    EXPECT_TRUE(got[1].starts_with("c.yaml:3:3: error: unknown reports setting 'dir'")) << got[1];
}

}  // namespace perfwatch
