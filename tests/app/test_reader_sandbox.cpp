// Reports are read in a confined child process (collectors/reader_process.hpp), a reader server
// that reads many reports (or forks a fresh reader for each): it reads as the process itself
// would, holds no secret, cannot open a socket or write a file, and whatever happens to it (a
// crash, a limit, a hang, garbage) fails that report alone.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "collectors/collector.hpp"
#include "core/run_wire.hpp"
#include "tests/support.hpp"

namespace perfwatch {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

test::ProcessResult check_with_fault(const std::string& fault, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"env", "PERFWATCH_TEST_READER_FAULT=" + fault, PERFWATCH_BINARY, "check"};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run_program(argv);
}

// The pids whose parent is `parent`, from /proc/*/stat.
std::vector<int> children_of(int parent) {
    std::vector<int> out;
    for (const auto& entry : fs::directory_iterator("/proc")) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(entry.path() / "stat");
        std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const auto close = stat.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(stat.substr(close + 2));
        char state = 0;
        int ppid = 0;
        if (rest >> state >> ppid && ppid == parent) out.push_back(std::stoi(name));
    }
    return out;
}

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Whether `needle` lies anywhere in the writable memory of process `pid` (where anything a process
// learns at run time lives: heap, stack, data; regions up to 64 MB, larger ones being sanitizer
// shadow and allocator reservations).
bool memory_holds(int pid, const std::string& needle) {
    std::ifstream maps(fmt::format("/proc/{}/maps", pid));
    const int mem = ::open(fmt::format("/proc/{}/mem", pid).c_str(), O_RDONLY | O_CLOEXEC);
    if (mem < 0) return false;
    std::string line;
    std::vector<char> buffer;
    bool found = false;
    while (!found && std::getline(maps, line)) {
        std::istringstream fields(line);
        std::string range, perms;
        fields >> range >> perms;
        if (perms.size() < 2 || perms[0] != 'r' || perms[1] != 'w') continue;
        const auto dash = range.find('-');
        const std::uint64_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
        const std::uint64_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
        if (hi - lo > (64u << 20)) continue;
        buffer.resize(hi - lo);
        const ssize_t got = ::pread(mem, buffer.data(), buffer.size(), static_cast<off_t>(lo));
        if (got <= 0) continue;
        found = std::search(buffer.begin(), buffer.begin() + got, needle.begin(), needle.end()) != buffer.begin() + got;
    }
    ::close(mem);
    return found;
}

}  // namespace

// The same reports, read in a reader process and in perfwatch's own, give the same runs byte for
// byte (encode_runs writes every field; RunWire's tests prove it reads back field for field):
// fixtures of several shapes, a corpus report of each folder and every crasher; one after the
// other in one reader server (nothing of a report is left to change the next), and each in a
// reader forked for it.
TEST(ReaderSandbox, AReaderProcessReadsAsPerfwatchItselfDoes) {
    test::TempDir dir;
    std::vector<std::string> reports = {test::write_kineto_trace(dir, "trace.json", 120.0), test::fixture("ncu/rules_2024.csv"),
                                        test::fixture("ncu/metrics_output.txt"), test::fixture("nsys/stats_2024_csv.txt"),
                                        test::fixture("nsys/twelve_sessions.log"), test::fixture("rocprof/run_kernel_trace.csv")};
    if (const auto corpus = test::corpus_dir()) {
        std::map<fs::path, std::string> first_of_folder;  // the first report of each folder, by name
        for (const auto& entry : fs::recursive_directory_iterator(*corpus))
            if (entry.is_regular_file() && entry.path().extension() != ".md") {
                std::string& first = first_of_folder[entry.path().parent_path()];
                if (first.empty() || entry.path().string() < first) first = entry.path().string();
            }
        for (const auto& [folder, file] : first_of_folder) reports.push_back(file);
    }
    if (const auto corpus = test::corpus_dir(); corpus && fs::exists(corpus->parent_path() / "crashers"))
        for (const auto& entry : fs::recursive_directory_iterator(corpus->parent_path() / "crashers"))
            if (entry.is_regular_file() && entry.path().extension() != ".md") reports.push_back(entry.path().string());
    for (const std::uint64_t per_process : {std::uint64_t{1000}, std::uint64_t{1}})
    for (const std::string& report : reports) {
        SCOPED_TRACE(fmt::format("reports_per_process: {}", per_process));
        const ReaderOptions sandboxed{ReaderIsolation::process, {}, PERFWATCH_BINARY, per_process};
        const auto own = collect_file_runs(report, {}, ReaderOptions{});
        const auto child = collect_file_runs(report, {}, sandboxed);
        ASSERT_EQ(own.has_value(), child.has_value()) << report << ": " << (own ? child.error() : own.error()).to_string();
        if (!own) {
            EXPECT_EQ(own.error().to_string(), child.error().to_string());
            EXPECT_EQ(own.error().detail, child.error().detail);
            continue;
        }
        EXPECT_EQ(encode_runs(*own), encode_runs(*child)) << report << " reads otherwise in a reader process";
    }
}

// A reader that crashes fails its own report: the reports before it (read by the same server)
// and after it (by a new one) of the same check are read and judged, and check exits 2 naming
// the file and what ended its reader; so too where a reader is forked for each report.
TEST(ReaderSandbox, ACrashingReaderFailsOnlyItsReport) {
    for (const int per_process : {1000, 1}) {
        SCOPED_TRACE(fmt::format("reports_per_process: {}", per_process));
        test::TempDir dir;
        const std::string before = test::write_kineto_trace(dir, "before.json", 100.0);
        const std::string bad = test::write_kineto_trace(dir, "bad.json", 100.0);
        const std::string good = test::write_kineto_trace(dir, "good.json", 120.0);
        test::write_file(dir.path() / "c.yaml", fmt::format("reader:\n  reports_per_process: {}\n", per_process));
        const auto r =
            check_with_fault("crash:bad.json", {"--config", dir.file("c.yaml"), "--db", dir.file("pw.db"), before, bad, good});
        EXPECT_EQ(r.exit_code, 2) << r.err;
        EXPECT_NE(r.err.find(bad + ": the reader process "), std::string::npos) << r.err;
        EXPECT_TRUE(r.err.find("was killed by signal") != std::string::npos ||
                    r.err.find("exited with status") != std::string::npos)
            << r.err;
        EXPECT_EQ(test::query_int(dir.path() / "pw.db", "SELECT count(*) FROM runs"), 2);
        for (const std::string& read : {before, good})
            EXPECT_EQ(test::query_int(dir.path() / "pw.db", fmt::format("SELECT count(*) FROM runs WHERE source = '{}'", read)), 1)
                << read;
    }
}

TEST(ReaderSandbox, AReaderPastItsMemoryLimitIsKilled) {
    test::TempDir dir;
    const std::string report = test::write_kineto_trace(dir, "t.json", 100.0);
    test::write_file(dir.path() / "c.yaml", "reader:\n  memory_mb: 300\n");
    const auto r = check_with_fault("memory", {"--config", dir.file("c.yaml"), report});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("the reader process was killed after exceeding its memory limit of 300 MB"), std::string::npos)
        << r.err;
}

TEST(ReaderSandbox, AHangingReaderIsKilledAtItsTimeLimit) {
    test::TempDir dir;
    const std::string report = test::write_kineto_trace(dir, "t.json", 100.0);
    test::write_file(dir.path() / "c.yaml", "reader:\n  wall_seconds: 2\n");
    const auto start = std::chrono::steady_clock::now();
    const auto r = check_with_fault("hang", {"--config", dir.file("c.yaml"), report});
    EXPECT_LT(std::chrono::steady_clock::now() - start, 60s);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("killed after running past its time limit of 2 s"), std::string::npos) << r.err;
}

TEST(ReaderSandbox, GarbageOnThePipeIsRefused) {
    test::TempDir dir;
    const std::string report = test::write_kineto_trace(dir, "t.json", 100.0);
    const auto r = check_with_fault("garbage", {report});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("the reader process sent a malformed answer"), std::string::npos) << r.err;
}

// What the reader's confinement allows, as the reader itself finds it (in a server, and forked).
TEST(ReaderSandbox, AReaderCannotOpenASocketOrWriteAFile) {
    for (const int per_process : {1000, 1}) {
        SCOPED_TRACE(fmt::format("reports_per_process: {}", per_process));
        test::TempDir dir;
        const std::string report = test::write_kineto_trace(dir, "t.json", 100.0);
        test::write_file(dir.path() / "c.yaml", fmt::format("reader:\n  reports_per_process: {}\n", per_process));
        fs::remove("/tmp/perfwatch-reader-probe");
        const auto r = check_with_fault("probe", {"--config", dir.file("c.yaml"), report});
        EXPECT_EQ(r.exit_code, 2) << r.err;
        EXPECT_NE(r.err.find("socket: EPERM"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("unix socket: EPERM"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("open for writing: EACCES"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("open read-write: EACCES"), std::string::npos) << r.err;
        // Spans spill to an unnamed temporary file, which no other process can open.
        EXPECT_NE(r.err.find("unnamed temporary file: allowed"), std::string::npos) << r.err;
        // (A new process is refused outside sanitizer builds, whose symbolizer needs one.)
        EXPECT_NE(r.err.find("new process: "), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists("/tmp/perfwatch-reader-probe"));
    }
}

// The reader holds no configured secret: not in its environment, its command line, its open
// descriptors or its memory; and it dies with the process that started it.
TEST(ReaderSandbox, AReaderHoldsNoSecret) {
    test::TempDir dir;
    const std::string report = test::write_kineto_trace(dir, "t.json", 100.0);
    const std::string url_secret = "hooks-secret-7f3a9c1e", env_secret = "env-secret-51d0b2aa";
    test::write_file(dir.path() / "c.yaml",
                     fmt::format("database: {}\nreceivers:\n  - name: chat\n    type: webhook\n"
                                 "    url_env: PERFWATCH_TEST_HOOK_URL\nroute:\n  receiver: chat\n"
                                 "reader:\n  wall_seconds: 60\n",
                                 dir.file("pw.db")));
    test::BackgroundProcess check({"--config", dir.file("c.yaml"), "check", report}, dir.file("check.log"),
                                  {"PERFWATCH_TEST_READER_FAULT=hang", "PERFWATCH_TEST_SECRET=" + env_secret,
                                   "PERFWATCH_TEST_HOOK_URL=https://example.invalid/" + url_secret});
    std::vector<int> children;
    ASSERT_TRUE(test::eventually([&] { return !(children = children_of(check.pid())).empty(); }, 20s)) << check.log();
    const int reader = children.front();
    // Give it time to confine itself and reach the trigger.
    std::this_thread::sleep_for(500ms);

    const std::string environ_text = slurp(fmt::format("/proc/{}/environ", reader));
    for (std::size_t at = 0; at < environ_text.size();) {
        const auto end = environ_text.find('\0', at);
        const std::string entry = environ_text.substr(at, end - at);
        const std::string name = entry.substr(0, entry.find('='));
        EXPECT_TRUE(name.ends_with("_OPTIONS") || name.ends_with("SYMBOLIZER_PATH") || name == "PERFWATCH_TEST_READER_FAULT" ||
                    name == "PERFWATCH_SCAN_LEVEL" || name == "LD_BIND_NOW")
            << "the reader's environment holds " << name;
        at = end == std::string::npos ? environ_text.size() : end + 1;
    }
    EXPECT_EQ(environ_text.find(env_secret), std::string::npos);
    const std::string cmdline = slurp(fmt::format("/proc/{}/cmdline", reader));
    ASSERT_NE(cmdline.find("read-report"), std::string::npos) << cmdline << "\n" << check.log();
    EXPECT_EQ(cmdline.find(url_secret), std::string::npos);
    EXPECT_EQ(cmdline.find("c.yaml"), std::string::npos);
    // Descriptors: /dev/null in, /dev/null out, stderr, the answer pipe; nothing else.
    std::vector<std::string> fds;
    for (const auto& fd : fs::directory_iterator(fmt::format("/proc/{}/fd", reader))) {
        const std::string target = fs::read_symlink(fd.path()).string();
        fds.push_back(fd.path().filename().string() + " -> " + target);
        EXPECT_EQ(target.find("pw.db"), std::string::npos) << target;
        EXPECT_EQ(target.find("socket:"), std::string::npos) << target;
        EXPECT_EQ(target.find("token"), std::string::npos) << target;
    }
    EXPECT_LE(fds.size(), 4u) << ::testing::PrintToString(fds);
    EXPECT_FALSE(memory_holds(reader, url_secret)) << "the webhook URL is in the reader's memory";
    EXPECT_FALSE(memory_holds(reader, env_secret)) << "the environment's secret is in the reader's memory";
    // The same scan finds what the parent does hold (the scan itself works).
    EXPECT_TRUE(memory_holds(check.pid(), env_secret));

    check.signal(SIGKILL);
    EXPECT_TRUE(test::eventually([&] { return !fs::exists(fmt::format("/proc/{}/cmdline", reader)) ||
                                              slurp(fmt::format("/proc/{}/cmdline", reader)).empty(); },
                                 10s))
        << "the reader outlived its parent";
}

}  // namespace perfwatch
