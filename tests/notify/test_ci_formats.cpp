#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "notify/ci_formats.hpp"

namespace perfwatch {

namespace {

// A name that would start its own workflow command, end a property and break a JSON string if
// any layer let it through unencoded.
const std::string k_hostile = "evil\n::error::pwned %0A, a:b ##[set-env name=X;]y \"q\"";

CheckReport report_with(std::size_t warnings) {
    CheckReport report;
    report.runs.push_back({.id = 1, .source = "/ws/reports/run one.csv", .format = "ncu-csv",
                           .labels = {{"benchmark", "llm"}}});
    report.runs.push_back({.id = 2, .source = "/elsewhere/b.json", .format = "kineto"});
    auto add = [&](Severity s, const std::string& rule, const std::string& name, std::int64_t run) {
        Finding f;
        f.rule = rule;
        f.title = "Low, occupancy: " + name.substr(0, 4);
        f.severity = s;
        f.run_id = run;
        f.entity_name = name;
        f.message = "fix it: 100% of " + name;
        f.impact = 12.5;
        report.findings.push_back(f);
    };
    add(Severity::error, "ncu-tail", k_hostile, 1);
    for (std::size_t i = 0; i < warnings; ++i) add(Severity::warning, "rule-" + std::to_string(i), "k" + std::to_string(i), 2);
    add(Severity::info, "ncu-info", "small", 1);
    return report;
}

// The runner's percent-decoding of a workflow command's message or property.
std::string decoded(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size()) {
            const std::string code(text.substr(i + 1, 2));
            static const std::map<std::string, char> k_codes{{"25", '%'}, {"0D", '\r'}, {"0A", '\n'}, {"3A", ':'}, {"2C", ','}};
            if (auto c = k_codes.find(code); c != k_codes.end()) {
                out += c->second;
                i += 2;
                continue;
            }
        }
        out += text[i];
    }
    return out;
}

struct Command {
    std::string name;
    std::map<std::string, std::string> properties;  // decoded
    std::string message;                            // decoded
};

// Parses one line as GitHub's runner does (ActionCommand.TryParseV2), failing the test on any
// departure from the workflow-command syntax: "::name[ k=v[,k=v]]::message", known property keys,
// no raw ':' or ',' in a property value, every '%' one of the runner's escapes.
Command parse_workflow_command(const std::string& line) {
    Command c;
    EXPECT_TRUE(line.starts_with("::")) << line;
    EXPECT_EQ(line.find_first_of("\r\n"), std::string::npos) << line;
    const std::size_t end = line.find("::", 2);
    EXPECT_NE(end, std::string::npos) << line;
    if (!line.starts_with("::") || end == std::string::npos) return c;
    const std::string section = line.substr(2, end - 2);
    const std::size_t space = section.find(' ');
    c.name = section.substr(0, space);
    const auto valid_escapes = [&](std::string_view text, std::string_view allowed) {
        for (std::size_t i = text.find('%'); i != std::string_view::npos; i = text.find('%', i + 1)) {
            const std::string code(text.substr(i + 1, 2));
            EXPECT_NE(allowed.find(code), std::string_view::npos) << "stray % in " << line;
        }
    };
    if (space != std::string::npos) {
        std::stringstream props(section.substr(space + 1));
        std::string prop;
        while (std::getline(props, prop, ',')) {
            const std::size_t eq = prop.find('=');
            EXPECT_NE(eq, std::string::npos) << line;
            const std::string key = prop.substr(0, eq), value = prop.substr(eq + 1);
            static const std::set<std::string> k_keys{"file", "title", "line", "endLine", "col", "endColumn"};
            EXPECT_TRUE(k_keys.contains(key)) << key << " in " << line;
            EXPECT_EQ(value.find(':'), std::string::npos) << line;
            valid_escapes(value, "25 0D 0A 3A 2C");
            c.properties[key] = decoded(value);
        }
    }
    const std::string message = line.substr(end + 2);
    valid_escapes(message, "25 0D 0A");
    c.message = decoded(message);
    return c;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::stringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

}  // namespace

TEST(CiFormats, EveryGithubLineIsAWorkflowCommandAndAHostileNameArrivesWhole) {
    const CheckReport report = report_with(12);
    const std::string out = format_check_github(report, "/ws");
    ASSERT_TRUE(out.ends_with("\n"));
    std::map<std::string, int> by_name;
    std::vector<Command> commands;
    for (const std::string& line : lines_of(out)) {
        commands.push_back(parse_workflow_command(line));
        ++by_name[commands.back().name];
    }
    // The headline, 1 error, 10 of 12 warnings (GitHub's per-step limit), 1 info, the count left out.
    EXPECT_EQ(by_name["error"], 1);
    EXPECT_EQ(by_name["warning"], 10);
    EXPECT_EQ(by_name["notice"], 3);
    EXPECT_EQ(commands.size(), 14u);
    EXPECT_EQ(commands.front().properties.at("title"), "perfwatch headline");
    EXPECT_EQ(commands.front().message, check_headline(report));
    // The error: its report under the workspace is the annotation's file; the hostile name and
    // title come back whole once decoded (a multi-line message, not a second command).
    const Command& error = commands[1];
    EXPECT_EQ(error.name, "error");
    EXPECT_EQ(error.properties.at("file"), "reports/run one.csv");
    EXPECT_EQ(error.properties.at("title"), "perfwatch ncu-tail: Low, occupancy: evil");
    EXPECT_NE(error.message.find("kernel '" + k_hostile + "'"), std::string::npos) << error.message;
    EXPECT_NE(error.message.find("fix it: 100% of " + k_hostile), std::string::npos);
    // A report outside the workspace has no file property; its path is in the message.
    EXPECT_FALSE(commands[2].properties.contains("file"));
    EXPECT_NE(commands[2].message.find("report: /elsewhere/b.json"), std::string::npos);
    EXPECT_EQ(commands.back().message.substr(0, 2), "2 ");
}

TEST(CiFormats, GitlabCodeQualityIssuesCarryTheSchemaFieldsAndStableFingerprints) {
    const CheckReport report = report_with(2);
    const auto doc = nlohmann::json::parse(format_check_gitlab(report, "/ws"));
    ASSERT_TRUE(doc.is_array());
    ASSERT_EQ(doc.size(), report.findings.size());
    std::set<std::string> fingerprints;
    for (std::size_t i = 0; i < doc.size(); ++i) {
        const auto& issue = doc[i];
        const Finding& f = report.findings[i];
        EXPECT_EQ(issue.at("check_name"), f.rule);
        EXPECT_TRUE(issue.at("description").get<std::string>().starts_with(f.title + ": kernel '"));
        EXPECT_EQ(issue.at("fingerprint").get<std::string>().size(), 64u);
        fingerprints.insert(issue.at("fingerprint").get<std::string>());
        EXPECT_EQ(issue.at("location").at("lines").at("begin"), 1);
    }
    EXPECT_EQ(fingerprints.size(), doc.size()) << "one fingerprint per problem";
    EXPECT_EQ(doc[0].at("severity"), "critical");
    EXPECT_EQ(doc[1].at("severity"), "major");
    EXPECT_EQ(doc.back().at("severity"), "info");
    EXPECT_EQ(doc[0].at("location").at("path"), "reports/run one.csv");
    EXPECT_EQ(doc[1].at("location").at("path"), "/elsewhere/b.json");
    EXPECT_NE(doc[0].at("description").get<std::string>().find(k_hostile), std::string::npos);
    // The same problem in a later run keeps its fingerprint; another benchmark's does not.
    CheckReport later = report;
    later.runs[0].source = "/ws/reports/next.csv";
    EXPECT_EQ(nlohmann::json::parse(format_check_gitlab(later, "/ws"))[0].at("fingerprint"), doc[0].at("fingerprint"));
    later.runs[0].labels["benchmark"] = "other";
    EXPECT_NE(nlohmann::json::parse(format_check_gitlab(later, "/ws"))[0].at("fingerprint"), doc[0].at("fingerprint"));
}

}  // namespace perfwatch
