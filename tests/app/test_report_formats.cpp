#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/support.hpp"

namespace perfwatch {

namespace {

long count_matches(const std::string& text, const std::string& pattern) {
    const std::regex re(pattern);
    return static_cast<long>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

}  // namespace

// JUnit from real corpus reports validates against the JUnit schema Jenkins reads, with one case
// per rule and entity decided and a failure per finding at or above --fail-on.
TEST(ReportFormats, JunitOfCorpusReportsValidatesAgainstTheJenkinsSchema) {
    PERFWATCH_CORPUS_FILE(csv, "ncu/csv-details_B200-cc100_ncu2025_cublaslt_gemm_rules.log");
    PERFWATCH_CORPUS_FILE(trace, "kineto/hta__critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz");
    PERFWATCH_CORPUS_FILE(text, "ncu/text_RTX3070-cc86_ncu2021_reductions_8M_default.txt");
    if (test::run_program({"xmllint", "--version"}).exit_code != 0)
        GTEST_SKIP() << "xmllint not installed (Debian package libxml2-utils; scripts/deps.sh installs it)";
    const auto r = test::run_perfwatch({"check", "--format", "junit", "--fail-on", "warning", csv, trace, text});
    EXPECT_EQ(r.exit_code, 1) << r.err;  // warnings fail the gate at --fail-on warning
    test::TempDir dir;
    std::ofstream(dir.file("report.xml")) << r.out;
    const auto valid = test::run_program({"xmllint", "--noout", "--schema",
                                          std::string(PERFWATCH_SOURCE_DIR) + "/tests/fixtures/junit/jenkins-junit.xsd",
                                          dir.file("report.xml")});
    EXPECT_EQ(valid.exit_code, 0) << valid.err;
    // Three suites; the failures are the findings at or above warning, as the JSON output counts them.
    EXPECT_EQ(count_matches(r.out, "<testsuite "), 3);
    const auto json = test::run_perfwatch({"check", "--format", "json", csv, trace, text});
    EXPECT_EQ(count_matches(r.out, "<failure "), count_matches(json.out, "\"severity\": \"(warning|error)\""));
    std::smatch m;
    ASSERT_TRUE(std::regex_search(json.out, m, std::regex("\"evaluated\": ([0-9]+)")));
    EXPECT_NE(r.out.find("<testsuites name=\"perfwatch\" tests=\"" + m[1].str() + "\""), std::string::npos)
        << "one test case per rule and entity evaluated";
}

TEST(ReportFormats, MarkdownOfACorpusReport) {
    PERFWATCH_CORPUS_FILE(csv, "ncu/csv-details_B200-cc100_ncu2025_cublaslt_gemm_rules.log");
    const auto r = test::run_perfwatch({"check", "--format", "markdown", csv});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    // One finding: the tail effect of cuBLASLt's own GEMM (its occupancy is by design, not judged).
    EXPECT_TRUE(r.out.starts_with("### perfwatch: 1 finding (0 errors, 1 warning, 0 info)")) << r.out;
    EXPECT_NE(r.out.find("#### Findings, largest estimated impact first"), std::string::npos);
    EXPECT_NE(r.out.find("1. **[warning] "), std::string::npos);
}

// Inside a GitHub job: workflow commands on stdout, the Markdown report appended to the job
// summary file; inside a GitLab job: a Code Quality report with one issue per finding.
TEST(ReportFormats, GithubAndGitlabFormatsOfACorpusReport) {
    PERFWATCH_CORPUS_FILE(csv, "ncu/csv-details_B200-cc100_ncu2025_cublaslt_gemm_rules.log");
    test::TempDir dir;
    test::write_file(dir.path() / "summary.md", "# earlier step\n");
    const std::string workspace = std::filesystem::path(csv).parent_path().parent_path().string();
    const auto r = test::run_program({"env", "GITHUB_STEP_SUMMARY=" + dir.file("summary.md"), "GITHUB_WORKSPACE=" + workspace,
                                      PERFWATCH_BINARY, "check", "--format", "github", "--fail-on", "warning", csv});
    EXPECT_EQ(r.exit_code, 1) << r.err;  // the warning fails the gate
    const auto markdown = test::run_perfwatch({"check", "--format", "markdown", csv});
    const auto json = test::run_perfwatch({"check", "--format", "json", csv});
    EXPECT_EQ(test::read_file(dir.file("summary.md")), "# earlier step\n" + markdown.out + "\n");
    // The headline, then one annotation per finding, each naming the report relative to the workspace.
    std::istringstream lines(r.out);
    std::string line;
    ASSERT_TRUE(std::getline(lines, line));
    EXPECT_TRUE(line.starts_with("::notice title=perfwatch headline::headline: ")) << line;
    long annotations = 0;
    while (std::getline(lines, line)) {
        EXPECT_TRUE(std::regex_match(line, std::regex("::(error|warning|notice) file=ncu/csv-details_B200-cc100_ncu2025_"
                                                      "cublaslt_gemm_rules.log,title=perfwatch [a-z0-9-]+%3A [^:,]*::.+")))
            << line;
        ++annotations;
    }
    EXPECT_EQ(annotations, count_matches(json.out, "\"rule\": "));
    const auto gitlab = test::run_program({"env", "CI_PROJECT_DIR=" + workspace, PERFWATCH_BINARY, "check", "--format", "gitlab", csv});
    EXPECT_EQ(gitlab.exit_code, 0) << gitlab.err;
    EXPECT_EQ(count_matches(gitlab.out, "\"check_name\": "), annotations);
    EXPECT_EQ(count_matches(gitlab.out, "\"path\": \"ncu/csv-details_B200-cc100_ncu2025_cublaslt_gemm_rules.log\""), annotations);
}

}  // namespace perfwatch
