#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

// What a sanitizer prints when it stops the process (it exits 1, like a check with findings).
bool sanitizer_report(const ProcessResult& r) {
    for (const char* mark : {"AddressSanitizer", "LeakSanitizer", "runtime error:", "UndefinedBehaviorSanitizer"})
        if (r.err.find(mark) != std::string::npos || r.out.find(mark) != std::string::npos) return true;
    return false;
}

// A check with findings at or above --fail-on exits 1: then its JSON names at least one finding
// of severity error (the default --fail-on).
bool findings_at_error(const ProcessResult& r) {
    const auto doc = nlohmann::json::parse(r.out, nullptr, false);
    if (doc.is_discarded() || !doc.contains("findings")) return false;
    for (const auto& f : doc["findings"])
        if (f.value("severity", "") == "error") return true;
    return false;
}

}  // namespace

// Every report that crashed perfwatch (../shared/crashers, recursively, but its READMEs) reads
// without a crash through the real binary: `check` exits 0, 2 (a clear error) or 1 with findings
// at error severity, `ingest` into a fresh database exits 0 or 2; never a signal, never a
// sanitizer report (this build's binary runs under ASan and UBSan).
TEST(Crashers, EveryReportThatCrashedPerfwatchReadsWithoutACrash) {
    const auto dir = crashers_dir();
    if (!dir) GTEST_SKIP() << "crashers not found (../shared/crashers or $PERFWATCH_CRASHERS)";
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(*dir))
        if (e.is_regular_file() && e.path().filename() != "README.md") files.push_back(e.path());
    ASSERT_FALSE(files.empty()) << dir->string() << " holds no report";
    TempDir tmp;
    std::size_t n = 0;
    for (const auto& file : files) {
        const std::string path = file.string();
        const auto check = run_perfwatch({"check", "--format", "json", path});
        EXPECT_FALSE(sanitizer_report(check)) << path << ": check\n" << check.err;
        EXPECT_TRUE(check.exit_code == 0 || check.exit_code == 2 || (check.exit_code == 1 && findings_at_error(check)))
            << path << ": check exited " << check.exit_code << "\n" << check.err;
        const std::string db = tmp.file("crasher-" + std::to_string(n++) + ".db");
        const auto ingest = run_perfwatch({"ingest", "--db", db, path});
        EXPECT_FALSE(sanitizer_report(ingest)) << path << ": ingest\n" << ingest.err;
        EXPECT_TRUE(ingest.exit_code == 0 || ingest.exit_code == 2)
            << path << ": ingest exited " << ingest.exit_code << "\n" << ingest.err;
        if (ingest.exit_code == 0) EXPECT_GE(query_int(db, "SELECT count(*) FROM runs"), 1) << path;
    }
}

}  // namespace perfwatch::test
