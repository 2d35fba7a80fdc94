#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include <iostream>
#include <random>
#include <regex>

#include "engine/pipeline.hpp"
#include "engine/rules.hpp"
#include "storage/db.hpp"
#include "tests/support.hpp"

namespace perfwatch {

namespace {

// One generated run of `benchmark`: kernel "gemm", 40 launches around `level_ns`, per-launch samples.
RunBatch make_run(const std::string& benchmark, int commit, double level_ns, std::mt19937_64& rng) {
    RunBatch b;
    b.format = "generated";
    b.source = fmt::format("{}-{}", benchmark, commit);
    b.labels = {{"gpu", "NVIDIA H100"}, {"benchmark", benchmark}, {"commit", fmt::format("c{}", commit)}};
    std::normal_distribution<double> noise(1.0, 0.01);
    const std::size_t run = b.run_entity();
    Entity e;
    e.kind = EntityKind::kernel;
    e.name = "gemm";
    e.parent = static_cast<std::int64_t>(run);
    std::vector<double> samples;
    double total = 0;
    for (int i = 0; i < 40; ++i) {
        samples.push_back(level_ns * noise(rng));
        total += samples.back();
    }
    e.set(Metric{"launches", 40, "count", "", ""});
    e.set(Metric{"duration", total / 40, "ns", "", ""});
    e.set(Metric{"duration_total", total, "ns", "", ""});
    e.samples["duration"] = samples;
    b.entities.push_back(std::move(e));
    b.entities[run].set(Metric{"gpu_time", total, "ns", "", ""});
    b.entities[run].set(Metric{"launches", 40, "count", "", ""});
    b.sha256 = fmt::format("{}-{}-{}", benchmark, commit, total);
    return b;
}

std::int64_t q(const std::filesystem::path& db, const std::string& sql) { return test::query_int(db, sql); }

}  // namespace

// A history of 203 runs over 200 days: benchmark "steady" stable; benchmark "slowed" 20% slower
// from its 25th run on, a regression still open; three runs of "shared" with the same content.
// `db prune --runs-days 30 --samples-days 10` drops old runs and samples but keeps the open
// regression's baseline window, first bad run and every bad run, and hands shared entities on.
TEST(RetentionCli, PruneKeepsWhatAnOpenRegressionNeedsAndFreesTheRest) {
    test::TempDir dir;
    const std::filesystem::path path = dir.path() / "history.db";
    {
        auto db = Db::open(path.string());
        ASSERT_TRUE(db);
        const RuleSet rules = compile_rules(load_rule_files({}));
        std::mt19937_64 rng(7);
        for (int i = 1; i <= 100; ++i) {
            for (const std::string bench : {"steady", "slowed"}) {
                const double level = bench == std::string("slowed") && i >= 25 ? 120'000 : 100'000;
                auto stored = db->store(make_run(bench, i, level, rng));
                ASSERT_TRUE(stored);
                auto run = db->load(stored->run_id);
                ASSERT_TRUE(run && *run);
                ASSERT_TRUE(process_run(*db, rules, **run));
            }
        }
        // The same content under three commits: one stored run of entities, shared.
        RunBatch shared = make_run("shared", 1, 50'000, rng);
        for (int c = 1; c <= 3; ++c) {
            shared.labels["commit"] = fmt::format("s{}", c);
            ASSERT_TRUE(db->store(shared));
        }
    }
    // Age the history: run id k was ingested (203 - k) days ago.
    {
        SQLite::Database d(path.string(), SQLite::OPEN_READWRITE);
        d.exec("UPDATE runs SET ingested_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-' || (203 - id) || ' days', "
               "'-1 hours')");
        // The first shared run is old; the two sharing it are recent.
        d.exec("UPDATE runs SET ingested_at = '2025-01-01T00:00:00Z' WHERE content_run IS NULL AND source = 'shared-1'");
    }
    const std::int64_t open = q(path, "SELECT count(*) FROM regressions WHERE status = 'open'");
    ASSERT_GE(open, 1);  // the kernel's, and the run's total
    // What the policy must keep, read from the database: the open regression's first bad run, and
    // the 20 runs of its series before it (baseline window 10 + long-horizon reference 10).
    const std::int64_t first_bad =
        q(path, "SELECT min(COALESCE(first_bad_run, opened_run)) FROM regressions WHERE status = 'open'");
    const std::string slowed = "SELECT r.id FROM runs r JOIN run_labels l ON l.run_id = r.id AND l.key = 'benchmark' "
                               "AND l.value = 'slowed'";
    const std::int64_t window_start =
        q(path, fmt::format("SELECT min(id) FROM (SELECT id FROM ({}) WHERE id < {} ORDER BY id DESC LIMIT 20)", slowed, first_bad));
    const std::string old = "ingested_at < strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-30 days')";
    const std::int64_t doomed_steady = q(path, "SELECT count(*) FROM runs r JOIN run_labels l ON l.run_id = r.id AND "
                                               "l.key = 'benchmark' AND l.value = 'steady' WHERE " + old);
    const std::int64_t doomed_slowed = q(path, fmt::format("SELECT count(*) FROM ({}) WHERE id < {}", slowed, window_start));
    const std::int64_t runs_before = q(path, "SELECT count(*) FROM runs");
    const std::string needed = fmt::format("SELECT count(*) FROM ({}) WHERE id >= {}", slowed, window_start);
    const std::int64_t needed_before = q(path, needed);
    ASSERT_GT(doomed_steady, 0);
    ASSERT_GT(doomed_slowed, 0);

    const auto dry = test::run_perfwatch({"db", "prune", "--db", path.string(), "--runs-days", "30", "--samples-days",
                                          "10", "--dry-run"});
    ASSERT_EQ(dry.exit_code, 0) << dry.err;
    EXPECT_NE(dry.out.find(fmt::format("would prune {} run(s)", doomed_steady + doomed_slowed + 1)), std::string::npos) << dry.out;
    EXPECT_EQ(q(path, "SELECT count(*) FROM runs"), runs_before);

    const auto r = test::run_perfwatch(
        {"db", "prune", "--db", path.string(), "--runs-days", "30", "--samples-days", "10", "--vacuum"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::cout << r.out;  // the database's size before and after
    EXPECT_NE(r.out.find(fmt::format("pruned {} run(s)", doomed_steady + doomed_slowed + 1)), std::string::npos) << r.out;
    EXPECT_EQ(q(path, "SELECT count(*) FROM runs"), runs_before - doomed_steady - doomed_slowed - 1);
    // The open regression and everything it needs are there.
    EXPECT_EQ(q(path, "SELECT count(*) FROM regressions WHERE status = 'open'"), open);
    EXPECT_EQ(q(path, fmt::format("SELECT count(*) FROM runs WHERE id = {}", first_bad)), 1);
    EXPECT_EQ(q(path, fmt::format("SELECT count(*) FROM ({}) WHERE id < {}", slowed, window_start)), 0);
    EXPECT_EQ(q(path, needed), needed_before);
    EXPECT_EQ(q(path, fmt::format("SELECT count(*) FROM entity_samples s JOIN entities e ON e.id = s.entity_id "
                                  "WHERE e.run_id >= {} AND e.run_id IN ({})", window_start, slowed)),
              q(path, fmt::format("SELECT count(*) FROM ({}) WHERE id >= {}", slowed, window_start)));
    // Steady runs between 10 and 30 days old lost their samples; the newest kept them.
    EXPECT_EQ(q(path, "SELECT count(*) FROM entity_samples s JOIN entities e ON e.id = s.entity_id JOIN runs r ON "
                      "r.id = e.run_id WHERE r.ingested_at < strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-10 days') AND "
                      "r.source LIKE 'steady%'"), 0);
    EXPECT_GT(q(path, "SELECT count(*) FROM entity_samples s JOIN entities e ON e.id = s.entity_id JOIN runs r ON "
                      "r.id = e.run_id WHERE r.source LIKE 'steady%'"), 0);
    // The old shared run went; the two recent ones still read their entities.
    EXPECT_EQ(q(path, "SELECT count(*) FROM runs WHERE source = 'shared-1'"), 2);
    EXPECT_EQ(q(path, "SELECT count(*) FROM entities e JOIN runs r ON r.id = e.run_id WHERE r.source = 'shared-1'"), 2);
    const auto show = test::run_perfwatch({"show", "--db", path.string(),
                                           std::to_string(q(path, "SELECT max(id) FROM runs WHERE source = 'shared-1'"))});
    EXPECT_NE(show.out.find("kernel 'gemm'"), std::string::npos) << show.out;
    // Less in use than before.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m, std::regex("database in use: ([0-9.]+) KB -> ([0-9.]+) KB")));
    // About half the runs went, and half their bytes with them: of the bytes above what an empty
    // database holds (one page per table and index whatever it stores), under three quarters stay.
    auto empty = Db::open((dir.path() / "empty.db").string());
    ASSERT_TRUE(empty);
    auto fixed_bytes = empty->bytes_in_use();
    ASSERT_TRUE(fixed_bytes);
    const double fixed_kb = static_cast<double>(*fixed_bytes) / 1000.0;
    EXPECT_LT(std::stod(m[2]) - fixed_kb, 0.75 * (std::stod(m[1]) - fixed_kb)) << r.out << "(empty: " << fixed_kb << " KB)";
    {
        SQLite::Database d(path.string(), SQLite::OPEN_READONLY);
        EXPECT_EQ(d.execAndGet("PRAGMA integrity_check").getString(), "ok");
        SQLite::Statement fk(d, "PRAGMA foreign_key_check");
        EXPECT_FALSE(fk.executeStep());
    }
}

}  // namespace perfwatch
