#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/pg_cluster.hpp"
#include "tests/support.hpp"
#include "tests/webhook_receiver.hpp"

namespace perfwatch {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

using test::eventually;
using test::run_perfwatch;

// Every report of the shared corpus (its READMEs left out), in path order.
std::vector<std::string> corpus_reports(const fs::path& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file() && !e.path().filename().string().starts_with("README")) out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

// `text` without the lines that hold the time of ingest (the one thing two ingests differ in).
std::string without_ingest_times(const std::string& text) {
    std::string out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.find("ingested") == std::string::npos) out += line + "\n";
    return out;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

}  // namespace

// ingest, show, check, diff, history and db prune on PostgreSQL do what they do on SQLite, for
// every report of the shared corpus (shown: the first run of each format and every third).
TEST(Fleet, EveryCommandGivesTheSameResultsOnPostgresqlAsOnSqlite) {
    const auto corpus = test::corpus_dir();
    if (!corpus) GTEST_SKIP() << "corpus not found (../shared/corpus or $PERFWATCH_CORPUS)";
    PERFWATCH_PG_CLUSTER(pg);
    ASSERT_TRUE(pg->create_database("ingested"));
    ASSERT_TRUE(pg->create_database("checked"));
    test::TempDir dir;
    const std::vector<std::string> files = corpus_reports(*corpus);
    ASSERT_GT(files.size(), 50u);
    const std::map<std::string, std::string> ingested{{"sqlite", dir.file("ingested.db")},
                                                     {"postgresql", pg->uri("ingested")}};

    std::map<std::string, test::ProcessResult> ingest;
    // The backends are compared here, not the reader: reports are read in perfwatch's own process
    // (the reader sandbox has its own tests; a reader process per report would double this test).
    test::write_file(dir.path() / "in_process.yaml", "reader:\n  isolation: none\n");
    const std::vector<std::string> in_process = {"--config", dir.file("in_process.yaml")};
    for (const auto& [backend, db] : ingested)
        ingest[backend] = run_perfwatch(with(with(in_process, {"ingest", "--db", db}), files));
    EXPECT_EQ(ingest["postgresql"].exit_code, ingest["sqlite"].exit_code);
    EXPECT_EQ(ingest["postgresql"].out, ingest["sqlite"].out);
    EXPECT_EQ(ingest["postgresql"].err, ingest["sqlite"].err);
    const std::int64_t runs = test::query_int(ingested.at("sqlite"), "SELECT count(*) FROM runs");
    EXPECT_EQ(std::stoll(pg->query("ingested", "SELECT count(*) FROM runs")), runs);
    EXPECT_EQ(pg->query("ingested", "SELECT count(*) FROM metrics"),
              std::to_string(test::query_int(ingested.at("sqlite"), "SELECT count(*) FROM metrics")));
    std::cout << files.size() << " corpus reports gave " << runs << " runs on both backends\n";
    ASSERT_GT(runs, 50);

    int compared = 0;
    for (std::int64_t id = 1; id <= runs; ++id) {
        // The first run of each format and every third run shown; every fifth diffed with the next
        // (each command is a process start, slow under the sanitizers).
        const bool first_of_format = test::query_int(ingested.at("sqlite"),
                                                     fmt::format("SELECT r.id = (SELECT min(id) FROM runs s WHERE "
                                                                 "s.format = r.format) FROM runs r WHERE r.id = {}",
                                                                 id)) == 1;
        std::vector<std::vector<std::string>> commands;
        if (first_of_format || id % 3 == 0) commands.push_back({"show", std::to_string(id)});
        if (id % 5 == 0) commands.push_back({"diff", std::to_string(id), std::to_string(id % runs + 1)});
        for (const auto& command : commands) {
            const auto on_pg = run_perfwatch(with(command, {"--db", ingested.at("postgresql")}));
            const auto on_sqlite = run_perfwatch(with(command, {"--db", ingested.at("sqlite")}));
            EXPECT_EQ(on_pg.exit_code, on_sqlite.exit_code) << command[0] << " " << id;
            EXPECT_EQ(without_ingest_times(on_pg.out), without_ingest_times(on_sqlite.out)) << command[0] << " " << id;
            ++compared;
        }
    }
    for (const char* metric : {"launches", "kernels", "duration_total"}) {
        const auto on_pg = run_perfwatch({"history", "--metric", metric, "--db", ingested.at("postgresql")});
        const auto on_sqlite = run_perfwatch({"history", "--metric", metric, "--db", ingested.at("sqlite")});
        EXPECT_EQ(on_pg.out, on_sqlite.out) << metric;
        EXPECT_EQ(on_pg.exit_code, on_sqlite.exit_code) << metric;
        ++compared;
    }

    // db prune on both: the same runs go, the pinned one stays.
    for (const auto& [backend, db] : ingested) {
        ASSERT_EQ(run_perfwatch({"baseline", "pin", "3", "--db", db}).exit_code, 0) << backend;
        const auto pruned = run_perfwatch({"db", "prune", "--db", db, "--runs-days", "0", "--samples-days", "0"});
        EXPECT_EQ(pruned.exit_code, 0) << backend << pruned.err;
        EXPECT_NE(pruned.out.find(fmt::format("pruned {} run(s)", runs - 1)), std::string::npos) << backend << pruned.out;
        std::cout << backend << ": " << pruned.out;
    }
    EXPECT_EQ(pg->query("ingested", "SELECT string_agg(id::text, ',') FROM runs"), "3");
    EXPECT_EQ(test::query_int(ingested.at("sqlite"), "SELECT count(*) FROM runs WHERE id = 3"), 1);
    EXPECT_EQ(test::query_int(ingested.at("sqlite"), "SELECT count(*) FROM runs"), 1);

    // check stores and judges every report (each against the history before it).
    const auto checked_pg = run_perfwatch(with(with(in_process, {"check", "--db", pg->uri("checked")}), files));
    const auto checked_sqlite = run_perfwatch(with(with(in_process, {"check", "--db", dir.file("checked.db")}), files));
    EXPECT_EQ(checked_pg.exit_code, checked_sqlite.exit_code);
    EXPECT_EQ(checked_pg.out, checked_sqlite.out);
    EXPECT_EQ(pg->query("checked", "SELECT count(*) FROM findings"),
              std::to_string(test::query_int(dir.file("checked.db"), "SELECT count(*) FROM findings")));
    std::cout << compared + 1 << " command outputs compared; check printed " << checked_pg.out.size() << " bytes\n";

    // The dashboard's API reads the same from both: search (kernel names by LIKE, commits,
    // series), a run's kernels, the regressions with their sharpness.
    std::map<std::string, unsigned short> ports;
    std::vector<std::unique_ptr<test::BackgroundProcess>> servers;
    for (const auto& [backend, db] : std::map<std::string, std::string>{{"sqlite", dir.file("checked.db")}, {"postgresql", pg->uri("checked")}}) {
        servers.push_back(std::make_unique<test::BackgroundProcess>(std::vector<std::string>{"serve", "--db", db, "--listen", "127.0.0.1:0"},
                                                                    dir.file(backend + "-serve.log")));
        ASSERT_TRUE(servers.back()->wait_for_log("dashboard of", 30)) << servers.back()->log();
        ports[backend] = servers.back()->logged_port();
        ASSERT_NE(ports[backend], 0) << servers.back()->log();
    }
    for (const std::string target : {"/api/v1/search?q=gemm", "/api/v1/search?q=Kernel_", "/api/v1/kernels?run=5", "/api/v1/regressions?status=all",
                                     "/api/v1/series"}) {
        const auto on_pg = test::http_get(ports["postgresql"], target);
        const auto on_sqlite = test::http_get(ports["sqlite"], target);
        EXPECT_EQ(on_pg.status, 200) << target << on_pg.body;
        EXPECT_EQ(on_pg.body, on_sqlite.body) << target;
    }
    const auto searched = nlohmann::json::parse(test::http_get(ports["postgresql"], "/api/v1/search?q=gemm").body);
    EXPECT_FALSE(searched["kernels"].empty());
    EXPECT_EQ(searched["kernels"].size(),
              std::min<std::size_t>(50, static_cast<std::size_t>(test::query_int(
                                             dir.file("checked.db"),
                                             "SELECT count(DISTINCT name) FROM entities WHERE kind = 'kernel' AND lower(name) LIKE '%gemm%'"))));
}

// A wrong password fails with the server's reason and never shows the password given.
TEST(Fleet, AWrongPasswordIsAClearErrorWithoutThePassword) {
    PERFWATCH_PG_CLUSTER(pg);
    test::TempDir dir;
    const std::string secret = "not-the-password-1234";
    test::write_file(dir.path() / "pw", secret + "\n");
    test::write_file(dir.path() / "config.yaml",
                     fmt::format("database: {}\ndatabase_password_file: pw\n", pg->uri("postgres")));
    const auto r = run_perfwatch({"--config", dir.file("config.yaml"), "history", "--metric", "launches"});
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.err.find("password authentication failed"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(secret), std::string::npos) << r.err;
    // In the URI itself: masked in the error.
    const std::string uri = std::regex_replace(pg->uri("postgres"), std::regex("perfwatch@"), "perfwatch:" + secret + "@");
    const auto inline_pw = run_perfwatch({"history", "--metric", "launches", "--db", uri + "?passfile=/nonexistent"});
    EXPECT_NE(inline_pw.exit_code, 0);
    EXPECT_EQ(inline_pw.err.find(secret), std::string::npos) << inline_pw.err;
    EXPECT_NE(inline_pw.err.find("<redacted>"), std::string::npos) << inline_pw.err;
}

}  // namespace perfwatch

namespace perfwatch {

namespace {

std::string fleet_config(const std::string& uri, const fs::path& reports, const fs::path& webhook_url_file) {
    return fmt::format(R"(database: {}
watch:
  - path: {}
    path_template: "{{project}}/{{branch}}/{{commit}}/**"
listen: 127.0.0.1:0
quiet_period: 200ms
lease: 3s
receivers:
  - name: gpu-team
    type: webhook
    url_file: {}
route:
  receiver: gpu-team
  group_by: [commit]
)",
                       uri, reports.string(), webhook_url_file.string());
}

}  // namespace

// Two daemons on one PostgreSQL database, each watching its own directory: a burst of 100 reports,
// 20 of them written to both directories, and one daemon killed with SIGKILL mid-burst (then
// restarted, as systemd does). Every distinct report is one run, evaluated and whole; every alert
// message reaches the webhook, those the killed daemon had claimed included.
TEST(Fleet, TwoDaemonsShareOneHistoryAndSendEveryMessageThroughAKill) {
    PERFWATCH_PG_CLUSTER(pg);
    ASSERT_TRUE(pg->create_database("fleet"));
    // A slow receiver: a daemon holds its lease on a message while the receiver answers, so the kill
    // below lands while daemon A holds claims (a run being evaluated or a message being sent).
    test::Receiver receiver([](std::size_t) { return test::Receiver::Answer{200, "", 250ms}; });
    test::TempDir dir;
    const fs::path a = dir.path() / "a", b = dir.path() / "b";
    fs::create_directories(a);
    fs::create_directories(b);
    test::write_file(dir.path() / "webhook-url", fmt::format("http://127.0.0.1:{}/hook\n", receiver.port()));
    test::write_file(dir.path() / "a.yaml", fleet_config(pg->uri("fleet"), a, dir.path() / "webhook-url"));
    test::write_file(dir.path() / "b.yaml", fleet_config(pg->uri("fleet"), b, dir.path() / "webhook-url"));

    auto daemon_a = std::make_unique<test::BackgroundProcess>(
        std::vector<std::string>{"daemon", "--config", dir.file("a.yaml")}, dir.file("a.log"));
    test::BackgroundProcess daemon_b({"daemon", "--config", dir.file("b.yaml")}, dir.file("b.log"));
    ASSERT_TRUE(daemon_a->wait_for_log("ready:", 60)) << daemon_a->log();
    ASSERT_TRUE(daemon_b.wait_for_log("ready:", 60)) << daemon_b.log();

    constexpr int k_reports = 100, k_shared = 20;
    test::TempDir staging;
    for (int i = 0; i < k_reports; ++i) {
        const std::string bytes = test::read_file(
            test::write_kineto_trace(staging, fmt::format("r{}.json", i), 100 + i, 20 + i % 7, "NVIDIA H100", 1000 + i));
        const std::string rel = fmt::format("proj/main/c{:03}/trace.json", i);
        test::write_file((i % 2 == 0 ? a : b) / rel, bytes);
        if (i < k_shared) test::write_file((i % 2 == 0 ? b : a) / rel, bytes);
    }
    const auto runs = [&] { return std::stoll("0" + pg->query("fleet", "SELECT count(*) FROM runs")); };
    // Daemon A's claims: runs it claimed and has not finished, messages it leased and has not sent.
    const std::string owner_a = dir.file("a.yaml");
    const auto held_by_a = [&] {
        return std::stoll("0" + pg->query("fleet", fmt::format("SELECT (SELECT count(*) FROM runs WHERE claimed_by LIKE "
                                                               "'%:{0}' AND processed_at IS NULL) + (SELECT count(*) "
                                                               "FROM outbox WHERE claimed_by LIKE '%:{0}')",
                                                               owner_a)));
    };
    // Daemon A is stopped (SIGSTOP) while its claims are counted and killed only when it holds
    // some, so the kill lands on exactly the claims counted (counted, then killed, a claim could
    // end in between: a message sent).
    std::int64_t held_at_kill = 0;
    ASSERT_TRUE(eventually(
        [&] {
            if (runs() < 30) return false;
            daemon_a->signal(SIGSTOP);
            held_at_kill = held_by_a();
            if (held_at_kill > 0) return true;
            daemon_a->signal(SIGCONT);
            return false;
        },
        120s))
        << daemon_a->log();
    daemon_a->signal(SIGKILL);
    ASSERT_EQ(daemon_a->wait_exit(5), 128 + SIGKILL);
    const std::int64_t at_kill = runs();
    // The kill landed mid-burst, while daemon A held claims that others must take over.
    EXPECT_LT(at_kill, k_reports);
    EXPECT_GT(held_at_kill, 0) << "daemon A held no claim when it was killed";
    const std::string killed_log = daemon_a->log();
    // Its replacement under another configuration file is another daemon: what the killed one had
    // claimed waits for its lease (3 s) to lapse, then the replacement or daemon B takes it.
    test::write_file(dir.path() / "a2.yaml", test::read_file(dir.file("a.yaml")));
    daemon_a = std::make_unique<test::BackgroundProcess>(
        std::vector<std::string>{"daemon", "--config", dir.file("a2.yaml")}, dir.file("a2.log"));
    ASSERT_TRUE(daemon_a->wait_for_log("ready:", 60)) << daemon_a->log();

    const auto settled = [&] {
        return runs() == k_reports &&
               pg->query("fleet", "SELECT count(*) FROM runs WHERE processed_at IS NULL") == "0" &&
               pg->query("fleet", "SELECT count(*) FROM outbox WHERE state <> 'sent'") == "0";
    };
    ASSERT_TRUE(eventually(settled, 180s)) << "runs " << runs() << "\n" << daemon_a->log() << daemon_b.log();
    std::this_thread::sleep_for(1500ms);  // nothing more arrives

    EXPECT_EQ(runs(), k_reports);
    EXPECT_EQ(pg->query("fleet", "SELECT count(*) FROM (SELECT 1 FROM runs GROUP BY sha256, labels_key "
                                 "HAVING count(*) > 1) d"),
              "0");
    // Nothing half-stored: every run holds its kernels and its findings.
    EXPECT_EQ(pg->query("fleet", "SELECT count(*) FROM runs r WHERE NOT EXISTS(SELECT 1 FROM entities e "
                                 "WHERE e.run_id = COALESCE(r.content_run, r.id))"),
              "0");
    EXPECT_EQ(pg->query("fleet", "SELECT count(*) FROM runs r WHERE NOT EXISTS(SELECT 1 FROM entities e JOIN metrics m "
                                 "ON m.entity_id = e.id WHERE e.run_id = COALESCE(r.content_run, r.id))"),
              "0");
    // Each run evaluated once: one message per run and status at most (its findings fired once;
    // a run may also resolve a regression, a message of its own). Keys: perfwatch-RUN-STATUS-HASH.
    EXPECT_EQ(pg->query("fleet", "SELECT count(*) - count(DISTINCT split_part(key, '-', 2) || ':' || "
                                 "split_part(key, '-', 3)) FROM outbox"),
              "0");
    // A regression opened once per series, rule and entity.
    EXPECT_EQ(pg->query("fleet", "SELECT count(*) FROM (SELECT 1 FROM regressions WHERE status = 'open' "
                                 "GROUP BY series, rule, entity_kind, entity_name HAVING count(*) > 1) d"),
              "0");

    const std::string keys = pg->query("fleet", "SELECT string_agg(key, ',' ORDER BY key) FROM outbox");
    std::set<std::string> expected;
    for (std::size_t at = 0; at < keys.size();) {
        const auto comma = keys.find(',', at);
        expected.insert(keys.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        at = comma == std::string::npos ? keys.size() : comma + 1;
    }
    std::map<std::string, int> got;
    for (const auto& r : receiver.received()) ++got[r.key];
    std::set<std::string> got_keys;
    int repeated = 0;
    for (const auto& [key, n] : got) {
        got_keys.insert(key);
        repeated += n - 1;
    }
    ASSERT_GE(expected.size(), static_cast<std::size_t>(k_reports / 2));
    EXPECT_EQ(got_keys, expected);
    // A message is sent again only when its sender died between the receiver's answer and
    // recording it (the same key: the receiver deduplicates).
    EXPECT_LE(repeated, 1);
    // Both daemons did part of the work, the killed one before its death.
    const std::string log_b = daemon_b.log();
    const auto evaluated = [](const std::string& log) {  // "run N: PATH (kineto) in T ms: K findings (...)"
        std::size_t n = 0;
        for (auto at = log.find("(kineto) in "); at != std::string::npos; at = log.find("(kineto) in ", at + 1)) ++n;
        return n;
    };
    EXPECT_GT(evaluated(killed_log), 0u);
    EXPECT_GT(evaluated(log_b), 0u);
    std::cout << k_reports << " reports (" << k_shared << " in both directories): " << runs() << " runs, "
              << at_kill << " stored when daemon A was killed holding " << held_at_kill << " claim(s); " << expected.size() << " messages, "
              << got_keys.size() << " distinct keys received, " << repeated << " repeated; stored by A "
              << evaluated(killed_log) << " + " << evaluated(daemon_a->log()) << ", by B " << evaluated(log_b) << "\n";
    daemon_b.signal(SIGTERM);
    daemon_a->signal(SIGTERM);
    EXPECT_EQ(daemon_b.wait_exit(10), 0);
    EXPECT_EQ(daemon_a->wait_exit(10), 0);
}

}  // namespace perfwatch

namespace perfwatch {

// A SQLite history made by the daemon (runs, findings, an open regression, sent messages), a pin
// and a silence, moved into PostgreSQL by `db migrate`: every table's rows counted on both sides
// by sqlite3 and psql, and the CLI prints the same history from either.
TEST(Fleet, DbMigrateCopiesASqliteHistoryIntoPostgresql) {
    PERFWATCH_PG_CLUSTER(pg);
    ASSERT_TRUE(pg->create_database("moved"));
    test::Receiver receiver([](std::size_t) { return test::Receiver::Answer{200, "", 0ms}; });
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports";
    fs::create_directories(reports);
    const std::string sqlite = dir.file("history.db");
    test::write_file(dir.path() / "webhook-url", fmt::format("http://127.0.0.1:{}/hook\n", receiver.port()));
    test::write_file(dir.path() / "perfwatch.yaml", fleet_config(sqlite, reports, dir.path() / "webhook-url"));
    {
        test::BackgroundProcess daemon({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon.log"));
        ASSERT_TRUE(daemon.wait_for_log("ready:", 60)) << daemon.log();
        test::TempDir staging;
        // Seven commits of one benchmark; the last two 30% slower: a regression opens.
        for (int c = 1; c <= 7; ++c) {
            const std::string trace = test::write_kineto_trace(staging, fmt::format("t{}.json", c), c >= 6 ? 130 : 100,
                                                               40, "NVIDIA H100", 1000 + c);
            test::write_file(reports / "proj" / "main" / fmt::format("c{}", c) / "trace.json", test::read_file(trace));
            ASSERT_TRUE(eventually([&] { return test::query_int(sqlite, "SELECT count(*) FROM runs WHERE processed_at "
                                                                        "IS NOT NULL") == c; },
                                   60s))
                << daemon.log();
        }
        ASSERT_TRUE(eventually([&] {
            return test::query_int(sqlite, "SELECT count(*) FROM outbox WHERE state <> 'sent'") == 0;
        }, 30s)) << daemon.log();
        daemon.signal(SIGTERM);
        EXPECT_EQ(daemon.wait_exit(10), 0);
    }
    ASSERT_EQ(run_perfwatch({"baseline", "pin", "2", "--db", sqlite, "--comment", "known good"}).exit_code, 0);
    ASSERT_EQ(run_perfwatch({"silence", "add", "--db", sqlite, "--match", "project=proj", "--until", "4h"}).exit_code, 0);
    ASSERT_GE(test::query_int(sqlite, "SELECT count(*) FROM regressions WHERE status = 'open'"), 1);
    ASSERT_GE(test::query_int(sqlite, "SELECT count(*) FROM outbox"), 1);

    const auto moved = run_perfwatch({"db", "migrate", "--from", sqlite, "--to", pg->uri("moved")});
    ASSERT_EQ(moved.exit_code, 0) << moved.out << moved.err;
    std::cout << moved.out;
    for (const char* table : {"runs", "run_labels", "entities", "metrics", "entity_samples", "findings",
                              "finding_values", "finding_labels", "baseline_pins", "regressions", "watched_files",
                              "outbox", "silences", "alert_fingerprints"}) {
        const std::string count = fmt::format("SELECT count(*) FROM {}", table);
        EXPECT_EQ(pg->query("moved", count), std::to_string(test::query_int(sqlite, count))) << table;
    }
    for (const std::vector<std::string>& command :
         std::vector<std::vector<std::string>>{{"show", "7"}, {"regressions", "list"}, {"outbox"}, {"files"}, {"silence", "list"},
                                               {"baseline", "show", "2"}, {"history", "--metric", "duration",
                                                                           "--entity", "gemm"}}) {
        const auto on_pg = run_perfwatch(with(command, {"--db", pg->uri("moved")}));
        const auto on_sqlite = run_perfwatch(with(command, {"--db", sqlite}));
        EXPECT_EQ(on_pg.out, on_sqlite.out) << command[0];
        EXPECT_EQ(on_pg.exit_code, on_sqlite.exit_code) << command[0];
    }
    // The moved history goes on: new ids follow the copied ones.
    const auto next = run_perfwatch({"ingest", "--db", pg->uri("moved"), test::write_kineto_trace(dir, "next.json", 100)});
    EXPECT_NE(next.out.find("run 8:"), std::string::npos) << next.out << next.err;
    // A destination that already holds runs is refused.
    const auto again = run_perfwatch({"db", "migrate", "--from", sqlite, "--to", pg->uri("moved")});
    EXPECT_EQ(again.exit_code, 2);
    EXPECT_NE(again.err.find("already holds runs"), std::string::npos) << again.err;
}

}  // namespace perfwatch
