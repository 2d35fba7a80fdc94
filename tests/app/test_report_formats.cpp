#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

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

}  // namespace perfwatch
