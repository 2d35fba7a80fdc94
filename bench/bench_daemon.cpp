// The daemon under a burst: writes N reports (variants of real corpus reports) into a watched
// directory as fast as it can, then measures reports per second until the last run is stored,
// the latency from each file's close to its findings stored (from the daemon's own log line,
// quiet period included), and the daemon's peak RSS.
//
// usage: bench_daemon PERFWATCH_BINARY CORPUS_DIR WORK_DIR [files=1000] [quiet_ms=250] [workers=0]

#include "storage/db.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

long peak_rss_kb(int pid) {
    std::ifstream in(fmt::format("/proc/{}/status", pid));
    for (std::string line; std::getline(in, line);)
        if (line.starts_with("VmHWM:")) return std::stol(line.substr(6));
    return 0;
}

// User plus system CPU seconds the process has used so far.
double cpu_seconds(int pid) {
    std::ifstream in(fmt::format("/proc/{}/stat", pid));
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const auto close = text.rfind(')');
    if (close == std::string::npos) return 0;
    std::istringstream fields(text.substr(close + 2));
    std::vector<std::string> f((std::istream_iterator<std::string>(fields)), {});
    if (f.size() < 13) return 0;
    return (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        fmt::print(stderr, "usage: bench_daemon PERFWATCH_BINARY CORPUS_DIR WORK_DIR [files] [quiet_ms] [workers]\n");
        return 2;
    }
    const std::string binary = argv[1];
    const fs::path corpus = argv[2], work = argv[3];
    const std::size_t files = argc > 4 ? std::stoul(argv[4]) : 1000;
    const int quiet_ms = argc > 5 ? std::stoi(argv[5]) : 250;
    const int workers = argc > 6 ? std::stoi(argv[6]) : 0;

    std::vector<std::pair<std::string, std::string>> bases;
    for (const char* rel : {"kineto/kineto__docs_traces_before_fix_trace.json", "kineto/kineto__docs_traces_after_fix_trace.json",
                            "ncu/csv-details_B200-cc100_ncu2025_cublaslt_gemm_rules.log",
                            "ncu/text_L4-cc89_ncu2025_fp16_wmma_512_basic.txt",
                            "nsys/mnicely-transfer_examples_README_nsys2020_stats_text.md",
                            "rocprof/HGLiu1998_batched_gemm__results.json"}) {
        std::string bytes = read_file(corpus / rel);
        if (bytes.empty()) {
            fmt::print(stderr, "bench_daemon: cannot read {}\n", (corpus / rel).string());
            return 2;
        }
        bases.emplace_back(fs::path(rel).filename().string(), std::move(bytes));
    }

    fs::remove_all(work);
    const fs::path reports = work / "reports", log = work / "daemon.log";
    // $PERFWATCH_BENCH_DB: another database (a postgresql:// URI); default a SQLite file in `work`.
    const char* db_env = std::getenv("PERFWATCH_BENCH_DB");
    const std::string db = db_env != nullptr && *db_env != '\0' ? db_env : (work / "perfwatch.db").string();
    fs::create_directories(reports);
    // $PERFWATCH_BENCH_READER: the reader's isolation, "process" (the default) or "none".
    const char* reader_env = std::getenv("PERFWATCH_BENCH_READER");
    const std::string reader = reader_env != nullptr && *reader_env != '\0' ? reader_env : "process";
    std::ofstream(work / "perfwatch.yaml") << fmt::format(
        "database: {}\nwatch:\n  - path: {}\n    path_template: \"{{project}}/{{branch}}/{{commit}}/**\"\n"
        "listen: 127.0.0.1:0\nworkers: {}\nquiet_period: {}ms\nlog_level: info\nreader:\n  isolation: {}\n",
        db, reports.string(), workers, quiet_ms, reader);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::string a0 = binary, a1 = "daemon", a2 = "--config", a3 = (work / "perfwatch.yaml").string();
    char* args[] = {a0.data(), a1.data(), a2.data(), a3.data(), nullptr};
    pid_t pid = 0;
    if (posix_spawn(&pid, binary.c_str(), &actions, nullptr, args, environ) != 0) {
        fmt::print(stderr, "bench_daemon: cannot start {}\n", binary);
        return 2;
    }
    posix_spawn_file_actions_destroy(&actions);
    const auto ready_deadline = Clock::now() + std::chrono::seconds(30);
    while (read_file(log).find("ready:") == std::string::npos) {
        if (Clock::now() > ready_deadline) {
            fmt::print(stderr, "bench_daemon: the daemon did not start:\n{}", read_file(log));
            kill(pid, SIGKILL);
            return 2;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }

    auto history = perfwatch::Db::open(db);
    if (!history) {
        fmt::print(stderr, "bench_daemon: {}\n", history.error().to_string());
        kill(pid, SIGKILL);
        return 2;
    }

    // The burst: every file written and closed as fast as possible.
    std::size_t bytes = 0;
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < files; ++i) {
        const auto& [name, content] = bases[i % bases.size()];
        const fs::path p = reports / fmt::format("p{}", i % 10) / "main" / fmt::format("c{}", i) / name;
        fs::create_directories(p.parent_path());
        std::ofstream out(p, std::ios::binary);
        out << content << std::string(i / bases.size() + 1, '\n');
        bytes += content.size() + i / bases.size() + 1;
    }
    const auto t_written = Clock::now();
    long long stored = 0;
    const auto deadline = Clock::now() + std::chrono::minutes(10);
    while ((stored = history->count_runs()) < static_cast<long long>(files) && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const auto t_done = Clock::now();
    const long rss = peak_rss_kb(pid);
    const double cpu = cpu_seconds(pid);
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);

    std::vector<double> latency_ms;
    const std::string text = read_file(log);
    const std::regex line(R"(info: run [0-9]+: .* in ([0-9]+) ms:)");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator(); ++it)
        latency_ms.push_back(std::stod((*it)[1]));

    const double burst_s = std::chrono::duration<double>(t_written - t0).count();
    const double wall_s = std::chrono::duration<double>(t_done - t0).count();
    fmt::print("daemon burst on {}: {} reports ({:.1f} MB) written in {:.2f} s; quiet period {} ms; workers {}\n",
               history->is_postgresql() ? "PostgreSQL" : "SQLite", files,
               static_cast<double>(bytes) / 1e6, burst_s, quiet_ms, workers == 0 ? "one per core" : std::to_string(workers));
    fmt::print("  stored {} runs in {:.2f} s from the first write: {:.0f} reports/s, {:.2f} MB/s\n", stored, wall_s,
               static_cast<double>(stored) / wall_s, static_cast<double>(bytes) / 1e6 / wall_s);
    fmt::print("  latency file close -> findings stored (ms, quiet period included): p50 {:.0f}, p95 {:.0f}, p99 {:.0f}, "
               "max {:.0f} ({} runs logged)\n",
               percentile(latency_ms, 0.5), percentile(latency_ms, 0.95), percentile(latency_ms, 0.99),
               percentile(latency_ms, 1.0), latency_ms.size());
    fmt::print("  daemon CPU {:.2f} s ({:.2f} ms per report); peak RSS {:.1f} MB; exit status {}\n", cpu,
               cpu * 1000 / static_cast<double>(files), static_cast<double>(rss) / 1024.0,
               WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    return stored == static_cast<long long>(files) ? 0 : 1;
}
