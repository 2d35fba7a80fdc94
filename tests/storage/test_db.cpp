#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include <algorithm>

#include "storage/db.hpp"
#include "storage/schema.hpp"
#include "core/vocabulary.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

RunBatch sample_batch(const std::string& sha) {
    RunBatch b;
    b.source = "report.csv";
    b.sha256 = sha;
    b.format = "ncu-csv";
    b.captured_at = "2022-06-03T11:31:08";
    b.labels = {{"branch", "main"}, {"project", "demo"}};
    b.notes = {"a note"};
    const std::size_t run = b.run_entity();
    b.entities[run].set(Metric{"gpu_time", 1000, "ns", "", ""});
    Entity k;
    k.kind = EntityKind::kernel;
    k.name = "k";
    k.parent = static_cast<std::int64_t>(run);
    k.set(Metric{"duration_total", 1000, "ns", "Duration", "us"});
    k.attributes["grid"] = "1x1x1";
    b.entities.push_back(k);
    Entity l;
    l.kind = EntityKind::launch;
    l.name = "k #0";
    l.parent = 1;
    l.set(Metric{"duration", 1000, "ns", "Duration", "us"});
    l.tool_findings.push_back(ToolFinding{"LaunchConfiguration", "OPT", "LaunchStats", "tail", "global", 50.0});
    b.entities.push_back(l);
    return b;
}

}  // namespace

TEST(Db, MigratesToCurrentVersionInWalMode) {
    TempDir dir;
    auto db = Db::open(dir.file("a.db"));
    ASSERT_TRUE(db) << db.error().to_string();
    EXPECT_EQ(db->schema_version(), current_schema_version());
    SQLite::Database raw(dir.file("a.db"));
    EXPECT_EQ(raw.execAndGet("PRAGMA journal_mode").getString(), "wal");
    // Reopening applies nothing twice.
    auto again = Db::open(dir.file("a.db"));
    ASSERT_TRUE(again);
    EXPECT_EQ(again->schema_version(), current_schema_version());
}

TEST(Db, RefusesADatabaseFromANewerVersion) {
    TempDir dir;
    {
        SQLite::Database raw(dir.file("new.db"), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        raw.exec("PRAGMA user_version = 999");
    }
    auto db = Db::open(dir.file("new.db"));
    ASSERT_FALSE(db);
    EXPECT_NE(db.error().message.find("newer"), std::string::npos);
}

TEST(Db, StoresAndLoadsARunWhole) {
    TempDir dir;
    auto db = Db::open(dir.file("a.db"));
    ASSERT_TRUE(db);
    auto stored = db->store(sample_batch("aa"));
    ASSERT_TRUE(stored) << stored.error().to_string();
    EXPECT_TRUE(stored->inserted);
    auto run = db->load(stored->run_id);
    ASSERT_TRUE(run && *run);
    const RunBatch& b = (*run)->batch;
    EXPECT_EQ(b.labels.at("project"), "demo");
    EXPECT_EQ(b.captured_at.value_or(""), "2022-06-03T11:31:08");
    EXPECT_EQ(b.notes, std::vector<std::string>{"a note"});
    ASSERT_EQ(b.entities.size(), 3u);
    EXPECT_EQ(b.entities[2].parent, 1);
    EXPECT_EQ(b.entities[1].attributes.at("grid"), "1x1x1");
    const Metric* m = b.entities[1].metric("duration_total");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->tool_name(), "Duration");
    EXPECT_EQ(m->tool_unit(), "us");
    ASSERT_EQ(b.entities[2].tool_findings.size(), 1u);
    EXPECT_DOUBLE_EQ(b.entities[2].tool_findings[0].speedup_pct.value_or(0), 50.0);
}

TEST(Db, SameContentIsStoredOnce) {
    TempDir dir;
    auto db = Db::open(dir.file("a.db"));
    ASSERT_TRUE(db);
    auto first = db->store(sample_batch("same"));
    auto second = db->store(sample_batch("same"));
    ASSERT_TRUE(first && second);
    EXPECT_FALSE(second->inserted);
    EXPECT_EQ(first->run_id, second->run_id);
    EXPECT_EQ(db->count_runs(), 1);
}

TEST(Db, SameContentUnderOtherLabelsIsANewRunSharingIt) {
    TempDir dir;
    auto db = Db::open(dir.file("a.db"));
    ASSERT_TRUE(db);
    RunBatch a = sample_batch("same"), b = sample_batch("same");
    b.labels["commit"] = "c2";
    auto first = db->store(a);
    auto second = db->store(b);
    auto third = db->store(b);
    ASSERT_TRUE(first && second && third);
    EXPECT_TRUE(second->inserted);
    EXPECT_NE(first->run_id, second->run_id);
    EXPECT_EQ(second->content_run, first->run_id);
    EXPECT_FALSE(third->inserted);
    EXPECT_EQ(third->run_id, second->run_id);
    EXPECT_EQ(query_int(dir.file("a.db"), "SELECT count(*) FROM entities"), static_cast<std::int64_t>(a.entities.size()));
    auto one = db->load(first->run_id), two = db->load(second->run_id);
    ASSERT_TRUE(one && *one && two && *two);
    EXPECT_EQ((*two)->content_run, first->run_id);
    EXPECT_EQ((*two)->batch.labels.at("commit"), "c2");
    ASSERT_EQ((*two)->batch.entities.size(), (*one)->batch.entities.size());
    for (std::size_t i = 0; i < a.entities.size(); ++i) {
        EXPECT_EQ((*two)->batch.entities[i].name, (*one)->batch.entities[i].name);
        EXPECT_EQ((*two)->batch.entities[i].metrics.size(), (*one)->batch.entities[i].metrics.size());
    }
    EXPECT_EQ((*two)->batch.notes, a.notes);
}

// A history window is read in a fixed number of statements whatever its length, and each run
// read in the batch equals the run read alone (shared content, samples and findings included).
TEST(Db, LoadRunsReadsAWindowInEightStatementsEqualToLoadingEachRun) {
    TempDir dir;
    auto db = Db::open(dir.file("a.db"));
    ASSERT_TRUE(db);
    std::vector<std::int64_t> ids;
    for (int i = 0; i < 25; ++i) {
        // Every fifth run shares the content of the one before it (same bytes, another commit).
        RunBatch b = sample_batch(fmt::format("sha{}", i % 5 == 4 ? i - 1 : i));
        b.labels["commit"] = fmt::format("c{}", i);
        if (i % 5 != 4) {
            b.entities[1].metrics[0].value = 1000 + i;
            b.entities[2].samples["duration"] = {1.0 * i, 2.0 * i};
        }
        auto stored = db->store(b);
        ASSERT_TRUE(stored) << stored.error().to_string();
        ids.push_back(stored->run_id);
    }
    std::vector<std::int64_t> asked(ids.rbegin(), ids.rend());
    asked.insert(asked.begin() + 3, 9999);  // no such run: skipped
    for (const std::size_t n : {std::size_t{3}, asked.size()}) {
        const std::vector<std::int64_t> part(asked.begin(), asked.begin() + static_cast<std::ptrdiff_t>(n));
        const std::uint64_t before = db->statements_run();
        auto runs = db->history().load_runs(part);
        ASSERT_TRUE(runs) << runs.error().to_string();
        EXPECT_EQ(db->statements_run() - before, 8u) << n << " runs";
        ASSERT_EQ(runs->size(), static_cast<std::size_t>(std::count_if(part.begin(), part.end(), [](std::int64_t id) { return id != 9999; })));
        std::size_t k = 0;
        for (const std::int64_t id : part) {
            if (id == 9999) continue;
            const StoredRun& got = (*runs)[k++];
            auto alone = db->load(id);
            ASSERT_TRUE(alone && *alone);
            const StoredRun& want = **alone;
            EXPECT_EQ(got.id, id);
            EXPECT_EQ(got.content_run, want.content_run);
            EXPECT_EQ(got.batch.labels, want.batch.labels);
            EXPECT_EQ(got.batch.notes, want.batch.notes);
            ASSERT_EQ(got.batch.entities.size(), want.batch.entities.size());
            for (std::size_t e = 0; e < want.batch.entities.size(); ++e) {
                const Entity& a = got.batch.entities[e];
                const Entity& b = want.batch.entities[e];
                EXPECT_EQ(a.name, b.name);
                EXPECT_EQ(a.parent, b.parent);
                EXPECT_EQ(a.attributes, b.attributes);
                EXPECT_EQ(a.samples, b.samples);
                ASSERT_EQ(a.metrics.size(), b.metrics.size());
                for (std::size_t m = 0; m < a.metrics.size(); ++m) EXPECT_EQ(a.metrics[m].value, b.metrics[m].value);
                ASSERT_EQ(a.tool_findings.size(), b.tool_findings.size());
            }
        }
    }
}

namespace {

// Every table's columns (name, type, not null, default, key), indexes (with their columns and
// uniqueness) and references, as SQLite describes them, one line each.
std::vector<std::string> describe_schema(const std::string& path) {
    SQLite::Database raw(path);
    std::vector<std::string> out;
    SQLite::Statement tables(raw, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    while (tables.executeStep()) {
        const std::string table = tables.getColumn(0).getString();
        SQLite::Statement cols(raw, "SELECT name, type, \"notnull\", COALESCE(dflt_value, ''), pk FROM pragma_table_info(?) ORDER BY name");
        cols.bind(1, table);
        while (cols.executeStep())
            out.push_back(fmt::format("{} column {} {} notnull={} default={} pk={}", table, cols.getColumn(0).getString(),
                                      cols.getColumn(1).getString(), cols.getColumn(2).getInt(),
                                      cols.getColumn(3).getString(), cols.getColumn(4).getInt()));
        SQLite::Statement idx(raw, "SELECT l.name, l.\"unique\", group_concat(i.name, ',') FROM pragma_index_list(?) l, "
                                   "pragma_index_info(l.name) i GROUP BY l.name ORDER BY l.name");
        idx.bind(1, table);
        while (idx.executeStep()) {
            std::string name = idx.getColumn(0).getString();
            if (name.starts_with("sqlite_autoindex_")) name = "autoindex";
            out.push_back(fmt::format("{} index {} unique={} on {}", table, name, idx.getColumn(1).getInt(),
                                      idx.getColumn(2).getString()));
        }
        SQLite::Statement fks(raw, "SELECT \"from\", \"table\", \"to\", on_delete FROM pragma_foreign_key_list(?) ORDER BY \"from\"");
        fks.bind(1, table);
        while (fks.executeStep())
            out.push_back(fmt::format("{} references {} -> {}({}) on delete {}", table, fks.getColumn(0).getString(),
                                      fks.getColumn(1).getString(), fks.getColumn(2).getString(),
                                      fks.getColumn(3).getString()));
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

// The one schema description (a new database) and the migrations (an old database) end at the same
// schema: the same tables, columns, indexes and references.
TEST(Db, FreshAndMigratedSqliteSchemasAreTheSame) {
    TempDir dir;
    const std::string fresh = dir.file("fresh.db"), old = dir.file("v5.db");
    ASSERT_TRUE(Db::open(fresh));
    {
        SQLite::Database raw(old, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        raw.exec(read_file(fixture("storage/schema_v5.sql")));
    }
    auto migrated = Db::open(old);
    ASSERT_TRUE(migrated) << migrated.error().to_string();
    EXPECT_EQ(query_int(fresh, "PRAGMA user_version"), current_schema_version());
    const auto a = describe_schema(fresh), b = describe_schema(old);
    EXPECT_EQ(a, b);
    EXPECT_GT(a.size(), 100u);
    // The copy order of `db migrate` is the description's: every table, each after those it refers to.
    std::vector<std::string> names;
    for (const SchemaTable& t : schema_tables()) names.push_back(t.name);
    EXPECT_EQ(names.size(), static_cast<std::size_t>(query_int(fresh, "SELECT count(*) FROM sqlite_master WHERE type = 'table'")));
    EXPECT_EQ(names.front(), "runs");
}

// A database written by schema version 5 (runs unique by content) keeps every row through the
// migration that rebuilds the runs table: nothing cascades away.
TEST(Db, MigratesAVersion5DatabaseKeepingEveryRow) {
    TempDir dir;
    const std::string path = dir.file("v5.db");
    {
        SQLite::Database raw(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        raw.exec(read_file(fixture("storage/schema_v5.sql")));
    }
    auto count = [&](const char* table) { return query_int(path, fmt::format("SELECT count(*) FROM {}", table)); };
    const std::int64_t entities = count("entities"), metrics = count("metrics"), findings = count("findings"),
                       labels = count("run_labels"), pins = count("baseline_pins");
    ASSERT_GT(entities, 0);
    ASSERT_GT(findings, 0);
    auto db = Db::open(path);
    ASSERT_TRUE(db) << db.error().to_string();
    EXPECT_EQ(db->schema_version(), current_schema_version());
    EXPECT_EQ(count("runs"), 1);
    EXPECT_EQ(count("entities"), entities);
    EXPECT_EQ(count("metrics"), metrics);
    EXPECT_EQ(count("findings"), findings);
    EXPECT_EQ(count("run_labels"), labels);
    EXPECT_EQ(count("baseline_pins"), pins);
    EXPECT_EQ(query_int(path, "PRAGMA foreign_keys"), 0);  // a fresh connection's default
    // The run's labels became its identity: the same content under the same labels is the same run.
    auto run = db->load(1);
    ASSERT_TRUE(run && *run);
    auto again = db->store((*run)->batch);
    ASSERT_TRUE(again);
    EXPECT_FALSE(again->inserted);
    EXPECT_EQ(again->run_id, 1);
    // Deleting the run still cascades (foreign keys are on again for the connection).
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    raw.exec("PRAGMA foreign_keys=ON");
    raw.exec("DELETE FROM baseline_pins; DELETE FROM runs");
    EXPECT_EQ(count("entities"), 0);
}

TEST(Db, AFailureHalfWayLeavesNothing) {
    TempDir dir;
    auto db = Db::open(dir.file("a.db"));
    ASSERT_TRUE(db);
    RunBatch bad = sample_batch("bad");
    // Two metrics of one name in one entity violate the primary key after the run row and
    // the first entities were written.
    bad.entities[2].metrics.push_back(Metric{"duration", 2, "ns", "", ""});
    auto r = db->store(bad);
    ASSERT_FALSE(r);
    // The report's content is at fault, not the database: that report fails, the database is healthy.
    EXPECT_EQ(r.error().kind, ErrorKind::report);
    EXPECT_NE(r.error().message.find("the report holds values the database refuses"), std::string::npos);
    EXPECT_EQ(db->count_runs(), 0);
    SQLite::Database raw(dir.file("a.db"));
    EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM entities").getInt(), 0);
    EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM metrics").getInt(), 0);
}

TEST(Db, FindingsRoundTrip) {
    TempDir dir;
    auto db = Db::open(dir.file("a.db"));
    ASSERT_TRUE(db);
    auto stored = db->store(sample_batch("f"));
    ASSERT_TRUE(stored);
    Finding f;
    f.rule = "r";
    f.title = "R";
    f.severity = Severity::warning;
    f.run_id = stored->run_id;
    f.entity_name = "k";
    f.message = "m";
    f.metrics = {{"duration_total", 1000}};
    f.labels = {{"concern", "x"}};
    f.estimated_speedup_pct = 50;
    f.share_pct = 100;
    f.impact = 50;
    ASSERT_TRUE(db->store_findings(stored->run_id, {f, f}));
    ASSERT_TRUE(db->store_findings(stored->run_id, {f}));  // replaces, not appends
    auto back = db->load_findings(stored->run_id);
    ASSERT_TRUE(back);
    ASSERT_EQ(back->size(), 1u);
    EXPECT_EQ((*back)[0].metrics.at("duration_total"), 1000);
    EXPECT_EQ((*back)[0].labels.at("concern"), "x");
    EXPECT_DOUBLE_EQ((*back)[0].impact.value_or(0), 50);
}

TEST(Vocabulary, NamesAreUniqueAndUnitsAreBaseUnits) {
    std::set<std::string_view> names;
    for (const MetricDef& d : metric_vocabulary()) {
        EXPECT_TRUE(names.insert(d.name).second) << d.name;
        const std::set<std::string_view> units{"ns", "byte", "hz", "byte/s", "percent", "count", "byte/cycle",
                                                  "flop", "flop/s", "flop/byte"};
        EXPECT_TRUE(units.contains(d.unit)) << d.name << " " << d.unit;
    }
}

}  // namespace perfwatch::test
