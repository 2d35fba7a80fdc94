// Reports are read in a confined child process (collectors/reader_process.hpp): it reads as the
// process itself would, holds no secret, cannot open a socket or write a file, and whatever
// happens to it (a crash, a limit, a hang, garbage) fails that report alone.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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

// Whether `needle` lies anywhere in the readable memory of process `pid` (regions up to 256 MB;
// larger ones are sanitizer shadow and allocator reservations, never touched by a reader).
bool memory_holds(int pid, const std::string& needle) {
    std::ifstream maps(fmt::format("/proc/{}/maps", pid));
    std::ifstream mem(fmt::format("/proc/{}/mem", pid), std::ios::binary);
    std::string line;
    std::vector<char> buffer;
    while (std::getline(maps, line)) {
        std::istringstream fields(line);
        std::string range, perms;
        fields >> range >> perms;
        if (perms.empty() || perms[0] != 'r' || line.find("[vvar]") != std::string::npos) continue;
        const auto dash = range.find('-');
        const std::uint64_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
        const std::uint64_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
        if (hi - lo > (256u << 20)) continue;
        buffer.resize(hi - lo);
        mem.clear();
        mem.seekg(static_cast<std::streamoff>(lo));
        mem.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        const auto got = static_cast<std::size_t>(mem.gcount());
        if (std::search(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(got), needle.begin(), needle.end()) !=
            buffer.begin() + static_cast<std::ptrdiff_t>(got))
            return true;
    }
    return false;
}

}  // namespace

// The same reports, read in a reader process and in perfwatch's own, are stored the same, run for
// run and metric for metric: fixtures of each text shape and, where present, every corpus report.
TEST(ReaderSandbox, AReaderProcessReadsAsPerfwatchItselfDoes) {
    test::TempDir dir;
    std::vector<std::string> reports = {test::write_kineto_trace(dir, "trace.json", 120.0), test::fixture("ncu/rules_2024.csv"),
                                        test::fixture("ncu/metrics_output.txt"), test::fixture("nsys/stats_2024_csv.txt"),
                                        test::fixture("nsys/twelve_sessions.log"), test::fixture("rocprof/run_kernel_trace.csv")};
    if (const auto corpus = test::corpus_dir())
        for (const auto& entry : fs::recursive_directory_iterator(*corpus))
            if (entry.is_regular_file() && entry.path().extension() != ".md") reports.push_back(entry.path().string());
    std::sort(reports.begin() + 6, reports.end());
    test::write_file(dir.path() / "inprocess.yaml", "reader:\n  isolation: none\n");
    test::write_file(dir.path() / "sandboxed.yaml", "reader:\n  isolation: process\n");
    std::vector<std::string> args = {"ingest"};
    args.insert(args.end(), reports.begin(), reports.end());
    const auto ingest = [&](const std::string& config, const std::string& db) {
        std::vector<std::string> a = {"--config", dir.file(config)};
        a.insert(a.end(), args.begin(), args.end());
        a.insert(a.begin() + 3, {"--db", dir.file(db)});
        return test::run_perfwatch(a);
    };
    const auto a = ingest("inprocess.yaml", "a.db");
    const auto b = ingest("sandboxed.yaml", "b.db");
    EXPECT_EQ(a.exit_code, b.exit_code) << a.err << "\n----\n" << b.err;
    EXPECT_EQ(a.err, b.err);
    const std::int64_t runs = test::query_int(dir.path() / "a.db", "SELECT count(*) FROM runs");
    ASSERT_GE(runs, 6);
    EXPECT_EQ(test::query_int(dir.path() / "b.db", "SELECT count(*) FROM runs"), runs);
    for (std::int64_t id = 1; id <= runs; ++id) {
        const auto x = test::run_perfwatch({"show", "--db", dir.file("a.db"), "--format", "json", std::to_string(id)});
        const auto y = test::run_perfwatch({"show", "--db", dir.file("b.db"), "--format", "json", std::to_string(id)});
        auto jx = nlohmann::json::parse(x.out, nullptr, false), jy = nlohmann::json::parse(y.out, nullptr, false);
        ASSERT_FALSE(jx.is_discarded()) << x.out << x.err;
        jx.erase("ingested_at");
        jy.erase("ingested_at");
        EXPECT_EQ(jx, jy) << "run " << id << " differs: " << jx.value("source", "");
    }
}

// A reader that crashes fails its own report: the next report of the same check is read and
// judged, and check exits 2 naming the file and what ended its reader.
TEST(ReaderSandbox, ACrashingReaderFailsOnlyItsReport) {
    test::TempDir dir;
    const std::string bad = test::write_kineto_trace(dir, "bad.json", 100.0);
    const std::string good = test::write_kineto_trace(dir, "good.json", 100.0);
    const auto r = check_with_fault("crash:bad.json", {"--db", dir.file("pw.db"), bad, good});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(bad + ": the reader process "), std::string::npos) << r.err;
    EXPECT_TRUE(r.err.find("was killed by signal") != std::string::npos ||
                r.err.find("exited with status") != std::string::npos)
        << r.err;
    EXPECT_EQ(test::query_int(dir.path() / "pw.db", "SELECT count(*) FROM runs"), 1);
    EXPECT_EQ(test::query_int(dir.path() / "pw.db", fmt::format("SELECT count(*) FROM runs WHERE source = '{}'", good)), 1);
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

// What the reader's confinement allows, as the reader itself finds it.
TEST(ReaderSandbox, AReaderCannotOpenASocketOrWriteAFile) {
    test::TempDir dir;
    const std::string report = test::write_kineto_trace(dir, "t.json", 100.0);
    fs::remove("/tmp/perfwatch-reader-probe");
    const auto r = check_with_fault("probe", {report});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("socket: EPERM"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("unix socket: EPERM"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("open for writing: EACCES"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("open read-write: EACCES"), std::string::npos) << r.err;
    // Spans spill to an unnamed temporary file, which no other process can open.
    EXPECT_NE(r.err.find("unnamed temporary file: allowed"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists("/tmp/perfwatch-reader-probe"));
}

// The reader holds no configured secret: not in its environment, its command line, its open
// descriptors or its memory; and it dies with the process that started it.
TEST(ReaderSandbox, AReaderHoldsNoSecret) {
    test::TempDir dir;
    const std::string report = test::write_kineto_trace(dir, "t.json", 100.0);
    const std::string url_secret = "hooks-secret-7f3a9c1e", env_secret = "env-secret-51d0b2aa";
    test::write_file(dir.path() / "token", "dashboard-token-secret-0123456789\n");
    fs::permissions(dir.path() / "token", fs::perms::owner_read | fs::perms::owner_write);
    test::write_file(dir.path() / "c.yaml",
                     fmt::format("database: {}\nreceivers:\n  - name: chat\n    type: webhook\n"
                                 "    url: https://example.invalid/{}\nreader:\n  wall_seconds: 60\n",
                                 dir.file("pw.db"), url_secret));
    test::BackgroundProcess check({"--config", dir.file("c.yaml"), "check", report}, dir.file("check.log"),
                                  {"PERFWATCH_TEST_READER_FAULT=hang", "PERFWATCH_TEST_SECRET=" + env_secret});
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
                    name == "PERFWATCH_SCAN_LEVEL")
            << "the reader's environment holds " << name;
        at = end == std::string::npos ? environ_text.size() : end + 1;
    }
    EXPECT_EQ(environ_text.find(env_secret), std::string::npos);
    const std::string cmdline = slurp(fmt::format("/proc/{}/cmdline", reader));
    EXPECT_NE(cmdline.find("read-report"), std::string::npos) << cmdline;
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
    EXPECT_TRUE(memory_holds(check.pid(), url_secret));

    check.signal(SIGKILL);
    EXPECT_TRUE(test::eventually([&] { return !fs::exists(fmt::format("/proc/{}/cmdline", reader)) ||
                                              slurp(fmt::format("/proc/{}/cmdline", reader)).empty(); },
                                 10s))
        << "the reader outlived its parent";
}

}  // namespace perfwatch
