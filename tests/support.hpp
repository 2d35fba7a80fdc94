#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace perfwatch::test {

// ../shared/corpus from the repository root, or $PERFWATCH_CORPUS; nullopt when absent.
std::optional<std::filesystem::path> corpus_dir();

// A corpus file's path; the test is skipped with a visible reason when the corpus is absent.
#define PERFWATCH_CORPUS_FILE(var, relative)                                                         \
    const auto var##_dir = ::perfwatch::test::corpus_dir();                                          \
    if (!var##_dir) GTEST_SKIP() << "corpus not found (../shared/corpus or $PERFWATCH_CORPUS)";     \
    const std::string var = (*var##_dir / (relative)).string()

std::string fixture(const std::string& relative);  // path under tests/fixtures
std::string read_file(const std::string& path);
// A file's bytes, decompressed when it is gzip (plain files read unchanged).
std::string read_maybe_gzip(const std::string& path);

// A fresh directory removed at destruction.
class TempDir {
public:
    TempDir();
    ~TempDir();
    std::filesystem::path path() const { return m_path; }
    std::string file(const std::string& name) const { return (m_path / name).string(); }

private:
    std::filesystem::path m_path;
};

struct ProcessResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

// Runs the real perfwatch binary with `args` (no shell), capturing its output.
ProcessResult run_perfwatch(const std::vector<std::string>& args);

}  // namespace perfwatch::test
