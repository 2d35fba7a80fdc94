#include "tests/support.hpp"

#include <zlib.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

extern char** environ;

namespace perfwatch::test {

std::optional<std::filesystem::path> corpus_dir() {
    if (const char* env = std::getenv("PERFWATCH_CORPUS"); env != nullptr && *env != '\0') {
        if (std::filesystem::is_directory(env)) return std::filesystem::path(env);
        return std::nullopt;
    }
    const auto p = std::filesystem::path(PERFWATCH_SOURCE_DIR) / ".." / "shared" / "corpus";
    if (std::filesystem::is_directory(p)) return std::filesystem::weakly_canonical(p);
    return std::nullopt;
}

std::string fixture(const std::string& relative) {
    return (std::filesystem::path(PERFWATCH_SOURCE_DIR) / "tests" / "fixtures" / relative).string();
}

std::string read_maybe_gzip(const std::string& path) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (f == nullptr) return {};
    std::string out;
    char buf[1 << 16];
    int n = 0;
    while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    gzclose(f);
    return out;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream buf;
    buf << in.rdbuf();
    return buf.str();
}

TempDir::TempDir() {
    std::random_device rd;
    m_path = std::filesystem::temp_directory_path() / ("perfwatch-test-" + std::to_string(rd()) + "-" +
                                                       std::to_string(::getpid()));
    std::filesystem::create_directories(m_path);
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
}

ProcessResult run_perfwatch(const std::vector<std::string>& args) {
    TempDir dir;
    const std::string out_path = dir.file("stdout"), err_path = dir.file("stderr");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::vector<std::string> argv_s{PERFWATCH_BINARY};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    ProcessResult result;
    if (posix_spawn(&pid, PERFWATCH_BINARY, &actions, nullptr, argv.data(), environ) != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return result;
    }
    posix_spawn_file_actions_destroy(&actions);
    int status = 0;
    waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = read_file(out_path);
    result.err = read_file(err_path);
    return result;
}

}  // namespace perfwatch::test
