#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace perfwatch::test {

// ../shared/corpus from the repository root, or $PERFWATCH_CORPUS; nullopt when absent.
std::optional<std::filesystem::path> corpus_dir();
// ../shared/jobs (or $PERFWATCH_JOBS): whole multi-rank jobs, one folder each; nullopt when absent.
std::optional<std::filesystem::path> jobs_dir();
// ../shared/crashers (or $PERFWATCH_CRASHERS): reports that crashed perfwatch; nullopt when absent.
std::optional<std::filesystem::path> crashers_dir();

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

// Writes `content` to `path`, creating its directories.
void write_file(const std::filesystem::path& path, const std::string& content);

// The single integer `sql` selects from the SQLite database at `db` (read-only, waiting out locks).
std::int64_t query_int(const std::filesystem::path& db, const std::string& sql);

// Runs the real perfwatch binary with `args` (no shell), capturing its output.
ProcessResult run_perfwatch(const std::vector<std::string>& args);
// Runs `argv[0]` (looked up on PATH) with the rest as arguments, no shell.
ProcessResult run_program(const std::vector<std::string>& argv);

// The real perfwatch binary running in the background (the daemon), its stdout and stderr going
// to a log file. Killed with SIGKILL at destruction if still running.
class BackgroundProcess {
public:
    // Starts `program` (default PERFWATCH_BINARY) with `args`; `env` entries ("K=V") are added
    // to the environment.
    BackgroundProcess(const std::vector<std::string>& args, const std::string& log_path,
                      const std::vector<std::string>& env = {}, const std::string& program = PERFWATCH_BINARY);
    ~BackgroundProcess();
    BackgroundProcess(const BackgroundProcess&) = delete;
    BackgroundProcess& operator=(const BackgroundProcess&) = delete;

    int pid() const { return m_pid; }
    std::string log() const;
    // Waits until the log contains `text`; false after `timeout_s`.
    bool wait_for_log(const std::string& text, double timeout_s) const;
    // The port of the first "http://127.0.0.1:PORT" its log names (a server's listening address,
    // not a database's); 0 when none.
    unsigned short logged_port() const;
    void signal(int sig) const;
    // The exit code once it has exited within `timeout_s` (128 + signal when killed); nullopt if still running.
    std::optional<int> wait_exit(double timeout_s);

private:
    int m_pid = -1;
    std::string m_log_path;
    std::optional<int> m_status;
};

// Writes a small Kineto trace: `launches` launches of one kernel "gemm" lasting about `dur_us`
// each (a deterministic 0.2% wobble), on `gpu`, starting at `start_us`; returns its path.
std::string write_kineto_trace(const TempDir& dir, const std::string& name, double dur_us, int launches = 40,
                               const std::string& gpu = "NVIDIA H100", double start_us = 1000);

// Polls `pred` every 20 ms until it holds or `timeout` passes; its last answer.
template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return pred();
}

struct HttpReply {
    int status = 0;  // 0: no connection
    std::string body;
    std::map<std::string, std::string> headers;  // names in lower case
};

// GET http://127.0.0.1:port/target.
HttpReply http_get(unsigned short port, const std::string& target);
// Any request to http://127.0.0.1:port/target with `body` and extra `headers`.
HttpReply http_request(unsigned short port, const std::string& method, const std::string& target, const std::string& body,
                       const std::vector<std::pair<std::string, std::string>>& headers);

// Headless Chromium (Debian's /usr/bin/chromium) on `url`: the DOM after its scripts ran, or with
// `screenshot` a PNG of the page written there; what it logged (console messages as CONSOLE lines).
struct Rendered {
    int exit_code = -1;
    std::string dom;
    std::string log;
};
Rendered chromium(const std::string& url, const std::string& screenshot = "");

}  // namespace perfwatch::test
