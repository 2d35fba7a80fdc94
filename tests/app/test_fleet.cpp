#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
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

// ingest, show, check, diff and history on PostgreSQL print what they print on SQLite, for every
// report of the shared corpus.
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
    for (const auto& [backend, db] : ingested) ingest[backend] = run_perfwatch(with({"ingest", "--db", db}, files));
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
        // Every run shown; every fifth diffed with the next (each command is a process start).
        std::vector<std::vector<std::string>> commands{{"show", std::to_string(id)}};
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

    // check stores and judges every report (each against the history before it).
    const auto checked_pg = run_perfwatch(with({"check", "--db", pg->uri("checked")}, files));
    const auto checked_sqlite = run_perfwatch(with({"check", "--db", dir.file("checked.db")}, files));
    EXPECT_EQ(checked_pg.exit_code, checked_sqlite.exit_code);
    EXPECT_EQ(checked_pg.out, checked_sqlite.out);
    EXPECT_EQ(pg->query("checked", "SELECT count(*) FROM findings"),
              std::to_string(test::query_int(dir.file("checked.db"), "SELECT count(*) FROM findings")));
    std::cout << compared + 1 << " command outputs compared; check printed " << checked_pg.out.size() << " bytes\n";
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
