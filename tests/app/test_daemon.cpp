#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <poll.h>
#include <unistd.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "app/config.hpp"
#include "tests/support.hpp"

namespace perfwatch {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

using test::query_int;
using test::write_file;

std::string config_text(const fs::path& reports, const std::string& extra = "", int workers = 2) {
    return fmt::format(R"(database: perfwatch.db
watch:
  - path: {}
    path_template: "{{project}}/{{branch}}/{{commit}}/**"
    labels: {{site: ci-lab}}
listen: 127.0.0.1:0
workers: {}
quiet_period: 800ms
shutdown_timeout: 4s
{})",
                       reports.string(), workers, extra);
}

// A configuration watching `reports` (created) with no template: the daemon tests' smallest.
fs::path plain_config(const test::TempDir& dir, const fs::path& reports) {
    fs::create_directories(reports);
    const fs::path cfg = dir.path() / "perfwatch.yaml";
    write_file(cfg, fmt::format("database: perfwatch.db\nwatch:\n  - path: {}\nlisten: 127.0.0.1:0\nquiet_period: 300ms\n",
                                reports.string()));
    return cfg;
}

// The sum of every series of `name` in a Prometheus exposition.
double metric_sum(const std::string& text, const std::string& name) {
    double sum = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (!line.starts_with(name)) continue;
        const char next = line.size() > name.size() ? line[name.size()] : '\0';
        if (next != ' ' && next != '{') continue;
        sum += std::stod(line.substr(line.rfind(' ') + 1));
    }
    return sum;
}

// Waits until the daemon has nothing waiting or in flight and the database holds `runs` runs.
bool wait_idle_with(unsigned short port, const fs::path& db, std::int64_t runs, double timeout_s) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
        const auto health = test::http_get(port, "/healthz");
        if (health.status == 200) {
            const auto doc = nlohmann::json::parse(health.body);
            if (doc["waiting"] == 0 && doc["in_flight"] == 0 && query_int(db, "SELECT count(*) FROM runs") == runs)
                return true;
        }
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

struct Corpus {
    fs::path dir;
    std::vector<std::pair<std::string, std::string>> texts;  // name, bytes: text reports
};

std::optional<Corpus> load_corpus() {
    const auto dir = test::corpus_dir();
    if (!dir) return std::nullopt;
    Corpus c{*dir, {}};
    for (const char* rel : {"kineto/kineto__docs_traces_before_fix_trace.json", "kineto/kineto__docs_traces_after_fix_trace.json",
                            "ncu/csv-details_B200-cc100_ncu2025_cublaslt_gemm_rules.log",
                            "ncu/text_L4-cc89_ncu2025_fp16_wmma_512_basic.txt",
                            "nsys/mnicely-transfer_examples_README_nsys2020_stats_text.md",
                            "rocprof/HGLiu1998_batched_gemm__results.json"})
        c.texts.emplace_back(fs::path(rel).filename().string(), test::read_file((*dir / rel).string()));
    return c;
}

}  // namespace

// Hundreds of reports dropped while the daemon runs: copies of real corpus reports with varied
// labels, exact duplicates, corrupt files and slowly written ones, a directory moved into place.
TEST(Daemon, IngestsHundredsOfReportsExactlyOnceAndStaysHealthy) {
    const auto corpus = load_corpus();
    if (!corpus) GTEST_SKIP() << "corpus not found (../shared/corpus or $PERFWATCH_CORPUS)";
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports", db = dir.path() / "perfwatch.db";
    const fs::path cfg = dir.path() / "perfwatch.yaml";
    write_file(cfg, config_text(reports));
    std::set<std::string> distinct;  // contents expected as runs
    std::size_t files = 0;
    auto drop = [&](const fs::path& p, const std::string& content) {
        write_file(p, content);
        distinct.insert(content);
        ++files;
    };
    // Symbolic-link loops (a directory pointing at its parent, two files at each other) are
    // never followed and never stop the daemon.
    fs::create_directories(reports / "links");
    fs::create_directory_symlink(reports, reports / "links" / "up");
    fs::create_symlink(reports / "links" / "b.json", reports / "links" / "a.json");
    fs::create_symlink(reports / "links" / "a.json", reports / "links" / "b.json");
    // Reports there before the start are caught up.
    for (int i = 0; i < 3; ++i)
        drop(reports / "early" / "main" / fmt::format("e{}", i) / corpus->texts[0].first,
             corpus->texts[0].second + std::string(static_cast<std::size_t>(100 + i), ' '));

    test::BackgroundProcess daemon({"daemon", "--config", cfg.string()}, (dir.path() / "daemon.log").string());
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    const unsigned short port = daemon.logged_port();
    ASSERT_NE(port, 0) << daemon.log();

    // 35 variants of each of 6 text reports, under project/branch/commit directories created now.
    for (std::size_t v = 0; v < 35; ++v)
        for (const auto& [name, bytes] : corpus->texts)
            drop(reports / fmt::format("p{}", v % 3) / fmt::format("b{}", v % 2) / fmt::format("c{}", v) / name,
                 bytes + std::string(v + 1, '\n'));
    // Binary reports as they are.
    const std::string nsys = test::read_file((corpus->dir / "nsys/p4arth-cuda-perf-sandbox_report1_nsys2025.5.sqlite").string());
    const std::string gz = test::read_file((corpus->dir / "kineto/hta__trace_compare__base__base.json.gz").string());
    drop(reports / "bin" / "main" / "c0" / "report1.sqlite", nsys);
    drop(reports / "bin" / "main" / "c0" / "base.json.gz", gz);
    // The same bytes under other labels (commits): new runs sharing the stored content.
    const std::size_t duplicates = 30;
    for (std::size_t i = 0; i < duplicates; ++i) {
        const auto& [name, bytes] = corpus->texts[i % corpus->texts.size()];
        write_file(reports / "dups" / "main" / fmt::format("d{}", i) / ("copy-" + name), bytes + std::string(i / 6 + 1, '\n'));
        ++files;
    }
    write_file(reports / "dups" / "main" / "bin" / "again.sqlite", nsys);
    ++files;
    const std::size_t shared = duplicates + 1;
    // Corrupt reports: each must be logged by name and counted, never stored.
    const std::string kineto = corpus->texts[0].second, csv = corpus->texts[2].second, roc = corpus->texts[5].second;
    const std::vector<std::pair<std::string, std::string>> corrupt = {
        {"cut.json", kineto.substr(0, 8000)},
        {"cut.csv", csv.substr(0, 9000)},
        {"cut-rocprof.json", roc.substr(0, 30000)},
        {"empty.csv", ""},
        {"binary.json", std::string("\x7f" "ELF\0\0\1\2garbage", 16)},
        {"notes.txt", "these are meeting notes, not a profiler report\n"},
    };
    for (const auto& [name, bytes] : corrupt) {
        write_file(reports / "bad" / "main" / "c0" / name, bytes);
        ++files;
    }
    // A directory filled elsewhere, then moved into place.
    for (int i = 0; i < 4; ++i) {
        const std::string content = corpus->texts[1].second + std::string(static_cast<std::size_t>(200 + i), ' ');
        write_file(dir.path() / "staging" / "main" / fmt::format("m{}", i) / "moved.json", content);
        distinct.insert(content);
        ++files;
    }
    fs::rename(dir.path() / "staging", reports / "moved");
    // Slow writers: five chunks each, closed and reopened, 100 ms apart.
    std::vector<std::thread> writers;
    for (int i = 0; i < 10; ++i) {
        const std::string content = corpus->texts[0].second + std::string(static_cast<std::size_t>(300 + i), '\n');
        distinct.insert(content);
        ++files;
        const fs::path p = reports / "slow" / "main" / fmt::format("s{}", i) / "trace.json";
        fs::create_directories(p.parent_path());
        writers.emplace_back([p, content] {
            const std::size_t chunk = content.size() / 5 + 1;
            for (std::size_t at = 0; at < content.size(); at += chunk) {
                std::ofstream(p, std::ios::binary | std::ios::app) << content.substr(at, chunk);
                std::this_thread::sleep_for(100ms);
            }
        });
    }
    for (auto& w : writers) w.join();

    const auto expected = static_cast<std::int64_t>(distinct.size() + shared);
    ASSERT_TRUE(wait_idle_with(port, db, expected, 180)) << "runs: " << query_int(db, "SELECT count(*) FROM runs")
                                                         << " expected " << expected << "\n" << daemon.log();
    std::this_thread::sleep_for(1500ms);
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs"), expected);
    // Every run was evaluated.
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs WHERE processed_at IS NULL"), 0);
    // Each content is stored once: the runs under other labels share it.
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs WHERE content_run IS NOT NULL"), static_cast<std::int64_t>(shared));
    EXPECT_EQ(query_int(db, "SELECT count(DISTINCT run_id) FROM entities"), static_cast<std::int64_t>(distinct.size()));

    const std::string log = daemon.log();
    for (const auto& [name, bytes] : corrupt)
        EXPECT_NE(log.find("not ingested: " + (reports / "bad" / "main" / "c0" / name).string()), std::string::npos)
            << name << "\n" << log;
    const auto metrics = test::http_get(port, "/metrics");
    ASSERT_EQ(metrics.status, 200);
    EXPECT_EQ(metric_sum(metrics.body, "perfwatch_reports_failed_total"), static_cast<double>(corrupt.size()));
    EXPECT_EQ(metric_sum(metrics.body, "perfwatch_reports_ingested_total"), static_cast<double>(expected));
    // Each file was read once: duplicates are read and recognised, none is read twice.
    EXPECT_EQ(metric_sum(metrics.body, "perfwatch_reports_seen_total"), static_cast<double>(files)) << metrics.body;
    EXPECT_GT(metric_sum(metrics.body, "perfwatch_findings_total"), 0);

    // Labels come from the path template and the watch entry.
    const std::string source = (reports / "p1" / "b0" / "c4" / corpus->texts[2].first).string();
    SQLite::Database d(db.string(), SQLite::OPEN_READONLY);
    SQLite::Statement labels(d, "SELECT key, value FROM run_labels JOIN runs ON runs.id = run_id WHERE source = ?");
    labels.bind(1, source);
    std::map<std::string, std::string> got;
    while (labels.executeStep()) got[labels.getColumn(0).getString()] = labels.getColumn(1).getString();
    EXPECT_EQ(got["project"], "p1");
    EXPECT_EQ(got["branch"], "b0");
    EXPECT_EQ(got["commit"], "c4");
    EXPECT_EQ(got["site"], "ci-lab");

    auto health = test::http_get(port, "/healthz");
    EXPECT_EQ(health.status, 200);
    EXPECT_EQ(nlohmann::json::parse(health.body)["status"], "ok");
    // A page of another site whose name resolves here (DNS rebinding) reads nothing.
    for (const std::string path : {"/healthz", "/metrics", "/"})
        EXPECT_EQ(test::http_request(port, "GET", path, "", {{"Host", "rebind.evil.example"}}).status, 403) << path;

    // A broken configuration on SIGHUP: logged, the old one kept, still ingesting.
    write_file(cfg, config_text(reports, "workers: lots\nwatch_typo: 1\n"));
    daemon.signal(SIGHUP);
    ASSERT_TRUE(daemon.wait_for_log("keeping the previous configuration", 10)) << daemon.log();
    // Every problem, each with file:line:col.
    EXPECT_NE(daemon.log().find(cfg.string() + ":10:10: 'workers' must be a whole number"), std::string::npos)
        << daemon.log();
    EXPECT_NE(daemon.log().find(cfg.string() + ":11:1: unknown setting 'watch_typo'"), std::string::npos);
    EXPECT_EQ(test::http_get(port, "/healthz").status, 200);
    drop(reports / "after" / "reload" / "c1" / "late.json", kineto + std::string(999, ' '));
    EXPECT_TRUE(wait_idle_with(port, db, expected + 1, 60)) << daemon.log();
    EXPECT_EQ(metric_sum(test::http_get(port, "/metrics").body, "perfwatch_config_reloads_total"), 1);
    EXPECT_EQ(nlohmann::json::parse(test::http_get(port, "/healthz").body)["last_reload"], "failed: 2 problems");

    // A valid one is applied: a second watched directory, with its own labels.
    const fs::path second = dir.path() / "second";
    fs::create_directories(second);
    std::string text = config_text(reports);
    text.insert(text.find("listen:"), fmt::format("  - path: {}\n    labels: {{project: second}}\n", second.string()));
    write_file(cfg, text);
    daemon.signal(SIGHUP);
    ASSERT_TRUE(daemon.wait_for_log("configuration reloaded", 10)) << daemon.log();
    drop(second / "x.json", kineto + std::string(1001, ' '));
    EXPECT_TRUE(wait_idle_with(port, db, expected + 2, 60)) << daemon.log();
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM run_labels JOIN runs ON runs.id = run_id WHERE key = 'project' AND "
                            "value = 'second'"),
              1);

    // SIGTERM: a clean exit 0 within 5 s.
    const auto stop_at = std::chrono::steady_clock::now();
    daemon.signal(SIGTERM);
    const auto code = daemon.wait_exit(5);
    ASSERT_TRUE(code.has_value()) << "still running 5 s after SIGTERM";
    EXPECT_EQ(*code, 0) << daemon.log();
    EXPECT_LT(std::chrono::steady_clock::now() - stop_at, 5s);
}

// kill -9 while reports are being ingested, then a restart: no partial run, every report once.
TEST(Daemon, AfterKillNineARestartIngestsEveryReportExactlyOnce) {
    const auto corpus = load_corpus();
    if (!corpus) GTEST_SKIP() << "corpus not found (../shared/corpus or $PERFWATCH_CORPUS)";
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports", db = dir.path() / "perfwatch.db";
    const fs::path cfg = dir.path() / "perfwatch.yaml";
    fs::create_directories(reports);
    write_file(cfg, config_text(reports, "", 1));
    const std::string log_path = dir.file("daemon.log");
    std::int64_t at_kill = 0;
    const std::size_t total = 60;
    {
        test::BackgroundProcess daemon({"daemon", "--config", cfg.string()}, log_path);
        ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
        for (std::size_t i = 0; i < total; ++i) {
            const auto& [name, bytes] = corpus->texts[i % corpus->texts.size()];
            write_file(reports / "p" / "main" / fmt::format("c{}", i) / name, bytes + std::string(i + 1, '\n'));
        }
        const auto deadline = std::chrono::steady_clock::now() + 60s;
        while (query_int(db, "SELECT count(*) FROM runs") < 5 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(2ms);
        daemon.signal(SIGKILL);
        ASSERT_EQ(daemon.wait_exit(5), 128 + SIGKILL);
        at_kill = query_int(db, "SELECT count(*) FROM runs");
    }
    EXPECT_LT(at_kill, static_cast<std::int64_t>(total)) << "the kill came after every report was in";

    test::BackgroundProcess daemon({"daemon", "--config", cfg.string()}, log_path + ".restart");
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30));
    const unsigned short port = daemon.logged_port();
    ASSERT_TRUE(wait_idle_with(port, db, static_cast<std::int64_t>(total), 120))
        << query_int(db, "SELECT count(*) FROM runs") << " runs; health " << test::http_get(port, "/healthz").body
        << daemon.log();
    std::this_thread::sleep_for(1s);
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs"), static_cast<std::int64_t>(total));
    EXPECT_EQ(query_int(db, "SELECT count(DISTINCT sha256) FROM runs"), static_cast<std::int64_t>(total));
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs WHERE processed_at IS NULL"), 0);
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs WHERE id NOT IN (SELECT run_id FROM entities)"), 0);
    EXPECT_EQ(query_int(db, "SELECT count(DISTINCT source) FROM runs"), static_cast<std::int64_t>(total));
    {
        SQLite::Database d(db.string(), SQLite::OPEN_READONLY);
        EXPECT_EQ(d.execAndGet("PRAGMA integrity_check").getString(), "ok");
    }
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(5), 0);
}

// README "A CI job writing three benchmarks per commit": one watch with the shipped template
// "{branch}/{commit}/**", each commit's folder holding a bert, a resnet50 and a whisper trace of
// different kernels' times and launch counts. Each benchmark is its own series: none is compared
// with another, so six stable commits raise no history finding, and bert 25% slower at the seventh
// opens one regression, on bert's series, naming that commit.
TEST(Daemon, AJobWritingThreeBenchmarksPerCommitKeepsThreeSeries) {
    test::TempDir dir;
    const fs::path reports = dir.path() / "ci", db = dir.path() / "perfwatch.db";
    const fs::path cfg = dir.path() / "perfwatch.yaml";
    fs::create_directories(reports);
    write_file(cfg, fmt::format(R"(database: perfwatch.db
watch:
  - path: {}
    path_template: "{{branch}}/{{commit}}/**"
listen: 127.0.0.1:0
quiet_period: 300ms
)",
                                reports.string()));
    test::BackgroundProcess daemon({"daemon", "--config", cfg.string()}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    const unsigned short port = daemon.logged_port();
    struct Bench {
        const char* file;
        double us;
        int launches;
    };
    const Bench benches[] = {{"bert.pt.trace.json", 120, 40}, {"resnet50.pt.trace.json", 300, 12},
                             {"whisper.pt.trace.json", 45, 60}};
    const int commits = 7;
    for (int c = 1; c <= commits; ++c) {
        for (const Bench& b : benches) {
            const double us = c == commits && std::string_view(b.file).starts_with("bert") ? b.us * 1.25 : b.us;
            test::write_kineto_trace(dir, fmt::format("ci/main/c{}/{}", c, b.file), us, b.launches);
        }
        // Commits arrive one after another, as a CI job's would.
        ASSERT_TRUE(wait_idle_with(port, db, 3 * c, 60)) << daemon.log();
    }
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs"), 3 * commits);
    for (const char* name : {"bert", "resnet50", "whisper"})
        EXPECT_EQ(query_int(db, fmt::format("SELECT count(*) FROM run_labels WHERE key = 'benchmark' AND value = '{}'", name)),
                  commits)
            << name;
    // The history rules of rules/regression.yaml fired only on bert's seventh run.
    const std::string history_rule =
        "rule IN ('kernel-time-regression', 'run-gpu-time-regression', 'run-uniformly-slower', "
        "'launch-count-changed', 'occupancy-regression', 'kernel-registers-changed', 'new-kernel', 'kernels-vanished')";
    const std::string bert_c7 =
        "(SELECT r.id FROM runs r JOIN run_labels b ON b.run_id = r.id AND b.key = 'benchmark' AND b.value = 'bert' "
        "JOIN run_labels c ON c.run_id = r.id AND c.key = 'commit' AND c.value = 'c7')";
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM findings WHERE " + history_rule + " AND run_id NOT IN " + bert_c7), 0);
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM findings WHERE rule = 'kernel-time-regression' AND run_id IN " + bert_c7), 1);
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM regressions"), query_int(db, "SELECT count(*) FROM regressions WHERE "
                                                                               "series LIKE 'benchmark=bert;%' AND status = 'open'"));
    EXPECT_GE(query_int(db, "SELECT count(*) FROM regressions WHERE entity_name = 'gemm' AND first_bad_run IN " + bert_c7), 1);
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(5), 0);
}

// A CI log of twelve nsys stats sessions dropped into a watched directory: twelve runs, one mark
// for the file (its own hash), and the same file written again adds nothing.
TEST(Daemon, ALogOfTwelveSessionsIsTwelveRuns) {
    test::TempDir dir;
    const fs::path reports = dir.path() / "ci", db = dir.path() / "perfwatch.db";
    const fs::path cfg = plain_config(dir, reports);
    test::BackgroundProcess daemon({"daemon", "--config", cfg.string()}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    const unsigned short port = daemon.logged_port();
    const std::string log = test::read_file(test::fixture("nsys/twelve_sessions.log"));
    write_file(reports / "main" / "bench.log", log);
    ASSERT_TRUE(wait_idle_with(port, db, 12, 60)) << daemon.log();
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs WHERE processed_at IS NULL"), 0);
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM watched_files"), 1);
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM watched_files WHERE run_id IS NOT NULL AND sha256 NOT LIKE '%#%'"), 1);
    EXPECT_NE(daemon.log().find("session 12"), std::string::npos) << daemon.log();
    write_file(reports / "main" / "bench.log", log);  // touched, same bytes
    // Read again (its time changed), each session found as the run it already is: the event waited
    // for, rather than a quiet spell.
    const auto same_content = [&] {
        const std::string text = daemon.log();
        std::size_t n = 0;
        for (auto at = text.find("same content as run"); at != std::string::npos;
             at = text.find("same content as run", at + 1))
            ++n;
        return n;
    };
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (same_content() < 12 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(50ms);
    EXPECT_EQ(same_content(), 12u) << daemon.log();
    ASSERT_TRUE(wait_idle_with(port, db, 12, 30));
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs"), 12);
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(5), 0);
}

// A watched file whose name holds a line break: its whole name and the reason reach the log line
// (the break written as a space) and the file's stored error (the name as it is).
TEST(Daemon, AFileNameWithALineBreakKeepsItsWholeNameAndTheReason) {
    test::TempDir dir;
    const fs::path reports = dir.path() / "ci", db = dir.path() / "perfwatch.db";
    const fs::path cfg = plain_config(dir, reports);
    test::BackgroundProcess daemon({"daemon", "--config", cfg.string()}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    const fs::path bad = reports / "main" / "notes\nsecond part.txt";
    write_file(bad, "these are meeting notes, not a profiler report\n");
    ASSERT_TRUE(daemon.wait_for_log("not ingested", 30)) << daemon.log();
    std::string stored;
    for (int i = 0; i < 100 && stored.empty(); ++i) {
        SQLite::Database raw(db.string());
        SQLite::Statement st(raw, "SELECT error FROM watched_files");
        if (st.executeStep()) stored = st.getColumn(0).getString();
        if (stored.empty()) std::this_thread::sleep_for(50ms);
    }
    // The reason the CLI gives for this file, first line.
    const auto cli = test::run_perfwatch({"check", bad.string()});
    const std::string reason = cli.err.substr(0, cli.err.find('\n', cli.err.find(bad.filename().string()) +
                                                                      bad.filename().string().size()));
    const std::string tail = reason.substr(reason.rfind(": ") + 2);
    ASSERT_FALSE(tail.empty()) << cli.err;
    EXPECT_TRUE(stored.starts_with(bad.string() + ": ")) << stored;
    EXPECT_NE(stored.find(tail), std::string::npos) << stored << "\nexpected the reason: " << tail;
    std::string logged = bad.string();
    std::replace(logged.begin(), logged.end(), '\n', ' ');
    const std::string log = daemon.log();
    const auto at = log.find("not ingested: " + logged);
    ASSERT_NE(at, std::string::npos) << log;
    EXPECT_NE(log.substr(at, log.find('\n', at) - at).find(tail), std::string::npos) << log;
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(5), 0);
}

// `retention:` in the configuration: shortly after the start the daemon prunes runs past their
// age (here three runs ingested 400 days ago, and one of today that stays).
TEST(Daemon, RetentionPrunesOldRunsAfterTheStart) {
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports", db = dir.path() / "perfwatch.db";
    fs::create_directories(reports);
    for (int i = 0; i < 4; ++i) {
        const std::string trace = test::write_kineto_trace(dir, fmt::format("old/t{}.json", i), 100 + 10 * i, 8);
        ASSERT_EQ(test::run_perfwatch({"ingest", "--db", db.string(), trace}).exit_code, 0);
    }
    {
        SQLite::Database d(db.string(), SQLite::OPEN_READWRITE);
        d.exec("UPDATE runs SET ingested_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-400 days') WHERE id <= 3");
    }
    const fs::path cfg = dir.path() / "perfwatch.yaml";
    write_file(cfg, fmt::format("database: perfwatch.db\nwatch:\n  - path: {}\nlisten: 127.0.0.1:0\n"
                                "retention: {{runs_days: 30, samples_days: 7}}\n",
                                reports.string()));
    test::BackgroundProcess daemon({"daemon", "--config", cfg.string()}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("retention: pruned 3 runs", 30)) << daemon.log();
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs"), 1);
    // Today's run keeps its per-launch samples (younger than samples_days).
    EXPECT_GT(query_int(db, "SELECT count(*) FROM entity_samples s JOIN entities e ON e.id = s.entity_id "
                            "WHERE e.run_id = 4"), 0);
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(5), 0);
}

// Type=notify: READY=1 once watching, WATCHDOG=1 at half of WATCHDOG_USEC, STOPPING=1 on SIGTERM.
TEST(Daemon, TellsSystemdReadyWatchdogAndStopping) {
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports";
    fs::create_directories(reports);
    write_file(dir.path() / "perfwatch.yaml", config_text(reports));
    const std::string socket_path = dir.file("notify.sock");
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    ASSERT_LT(socket_path.size(), sizeof addr.sun_path);
    std::copy(socket_path.begin(), socket_path.end(), addr.sun_path);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    test::BackgroundProcess daemon({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon.log"),
                                   {"NOTIFY_SOCKET=" + socket_path, "WATCHDOG_USEC=400000", "JOURNAL_STREAM=8:12345"});
    std::string received;
    auto read_until = [&](const std::string& text, double timeout_s) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        while (received.find(text) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 50) == 1) {
                char buf[4096];
                const auto n = ::recv(fd, buf, sizeof buf, 0);
                if (n > 0) received += std::string(buf, static_cast<std::size_t>(n)) + "\n";
            }
        }
        return received.find(text) != std::string::npos;
    };
    EXPECT_TRUE(read_until("READY=1", 30)) << received << daemon.log();
    received.clear();
    EXPECT_TRUE(read_until("WATCHDOG=1", 3)) << received;
    received.clear();
    EXPECT_TRUE(read_until("WATCHDOG=1", 3)) << "the watchdog is pinged again";
    daemon.signal(SIGTERM);
    EXPECT_TRUE(read_until("STOPPING=1", 5)) << received;
    EXPECT_EQ(daemon.wait_exit(5), 0) << daemon.log();
    // Under journald every line starts with its syslog priority: notice is 5.
    EXPECT_TRUE(daemon.log().starts_with("<5>ready: ")) << daemon.log();
    EXPECT_NE(daemon.log().find("\n<5>stopping on SIGTERM"), std::string::npos) << daemon.log();
    ::close(fd);
}

TEST(Daemon, RefusesToStartWithoutAWatchedDirectory) {
    test::TempDir dir;
    write_file(dir.path() / "perfwatch.yaml", config_text(dir.path() / "missing"));
    const auto r = test::run_perfwatch({"daemon", "--config", dir.file("perfwatch.yaml")});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("perfwatch.yaml:3:5: watched directory '" + (dir.path() / "missing").string() +
                         "' does not exist"),
              std::string::npos)
        << r.err;
}

TEST(Deploy, ShippedConfigParsesAndTheUnitPassesSystemdAnalyzeVerify) {
    const std::string root = PERFWATCH_SOURCE_DIR;
    const ConfigLoad load = load_config(root + "/deploy/config.yaml");
    ASSERT_TRUE(load.ok()) << load.diagnostics[0].to_string();
    EXPECT_EQ(load.config.listen, "127.0.0.1:9464");
    ASSERT_EQ(load.config.watch.size(), 1u);

    const std::string unit = test::read_file(root + "/deploy/perfwatch.service");
    for (const char* key : {"Type=notify", "WatchdogSec=", "User=perfwatch", "NoNewPrivileges=yes", "ProtectSystem=strict",
                            "ReadWritePaths=/var/lib/perfwatch", "PrivateTmp=yes", "ProtectHome=",
                            "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "ExecReload=/bin/kill -HUP $MAINPID"})
        EXPECT_NE(unit.find(key), std::string::npos) << key;
    if (!fs::exists("/usr/bin/systemd-analyze")) GTEST_SKIP() << "systemd-analyze not installed (Debian package systemd)";
    test::TempDir dir;
    std::string local = unit;
    const std::string exec = "/usr/local/bin/perfwatch";
    for (auto at = local.find(exec); at != std::string::npos; at = local.find(exec, at))
        local.replace(at, exec.size(), PERFWATCH_BINARY);
    write_file(dir.path() / "perfwatch.service", local);
    const auto verify = test::run_program({"/usr/bin/systemd-analyze", "verify", dir.file("perfwatch.service")});
    EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
    EXPECT_EQ(verify.err, "") << "systemd-analyze has remarks on the unit";
}

// Another process holds the database's write lock past the busy timeout: the report is not lost,
// /healthz says so, and it is stored once the lock is gone.
TEST(Daemon, ADatabaseLockedByAnotherProcessIsRetriedUntilTheReportIsStored) {
    const auto corpus = load_corpus();
    if (!corpus) GTEST_SKIP() << "corpus not found (../shared/corpus or $PERFWATCH_CORPUS)";
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports", db = dir.path() / "perfwatch.db";
    fs::create_directories(reports);
    write_file(dir.path() / "perfwatch.yaml", config_text(reports, "", 1));
    test::BackgroundProcess daemon({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    const unsigned short port = daemon.logged_port();
    {
        SQLite::Database holder(db.string(), SQLite::OPEN_READWRITE);
        holder.exec("BEGIN EXCLUSIVE");
        write_file(reports / "p" / "main" / "c1" / corpus->texts[0].first, corpus->texts[0].second);
        ASSERT_TRUE(daemon.wait_for_log("database is locked", 30)) << daemon.log();
        ASSERT_TRUE(daemon.wait_for_log("retried in 2 s", 5)) << daemon.log();
        const auto health = test::http_get(port, "/healthz");
        EXPECT_EQ(health.status, 503) << health.body;
        EXPECT_NE(health.body.find("database error"), std::string::npos);
        holder.exec("COMMIT");
    }
    EXPECT_TRUE(wait_idle_with(port, db, 1, 60)) << daemon.log();
    EXPECT_EQ(test::http_get(port, "/healthz").status, 200);
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs WHERE processed_at IS NOT NULL"), 1);
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(5), 0);
}

}  // namespace perfwatch
