#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include "storage/db.hpp"
#include "storage/schema.hpp"
#include "storage/sql.hpp"
#include "tests/pg_cluster.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

FileMark reading_mark(const std::string& path, const std::string& reader, int deaths) {
    FileMark m{path, 100, 5000, "", std::nullopt, ""};
    m.state = ReadState::reading;
    m.reader = reader;
    m.deaths = deaths;
    return m;
}

OutboxMessage alert(const std::string& key) {
    OutboxMessage m;
    m.key = key;
    m.receiver = "team";
    m.payload = "{}";
    m.next_attempt_ms = 1;
    m.created_ms = 1;
    return m;
}

// A file's marks through its life: reading (committed before the reader starts), quarantined with
// its alert in the same transaction, retry asked for, and the marks a clean stop forgets; on
// whichever backend `db` is.
void check_transitions(Db& db) {
    FileMarks& marks = db.file_marks();
    ASSERT_TRUE(marks.save(reading_mark("/r/poison.json", "host:/a.yaml", 0)));
    ASSERT_TRUE(marks.save(reading_mark("/r/suspect.json", "host:/a.yaml", 1)));
    ASSERT_TRUE(marks.save(reading_mark("/r/innocent.json", "host:/a.yaml", 0)));
    ASSERT_TRUE(marks.save(reading_mark("/r/other.json", "host:/b.yaml", 0)));
    FileMark done{"/r/done.json", 7, 8, "abc", std::nullopt, ""};
    ASSERT_TRUE(marks.save(done));

    auto got = marks.get("/r/poison.json");
    ASSERT_TRUE(got && *got);
    EXPECT_EQ((*got)->state, ReadState::reading);
    EXPECT_EQ((*got)->reader, "host:/a.yaml");
    EXPECT_EQ((*got)->deaths, 0);
    EXPECT_EQ((*got)->quarantined_at, "");
    EXPECT_FALSE((*got)->seen_at.empty());
    // Each daemon sees its own reading marks only.
    auto mine = marks.reading_by("host:/a.yaml");
    ASSERT_TRUE(mine);
    ASSERT_EQ(mine->size(), 3u);
    EXPECT_EQ((*mine)[0].path, "/r/innocent.json");  // by path
    EXPECT_EQ((*mine)[2].path, "/r/suspect.json");
    EXPECT_EQ((*mine)[2].deaths, 1);
    ASSERT_TRUE(marks.reading_by("host:/b.yaml"));
    EXPECT_EQ(marks.reading_by("host:/b.yaml")->size(), 1u);

    // Nothing to retry in a file being read, read, or unknown.
    EXPECT_FALSE(marks.request_retry("/r/poison.json"));
    auto read_one = marks.request_retry("/r/done.json");
    ASSERT_FALSE(read_one);
    EXPECT_NE(read_one.error().message.find("nothing to retry"), std::string::npos);
    EXPECT_FALSE(marks.request_retry("/r/never-seen.json"));

    // Quarantined with its alert, in one transaction; the same alert key again adds nothing.
    FileMark q = **got;
    q.error = "the daemon crashed (SIGSEGV) while reading it";
    q.quarantined_at = "2026-12-01T10:00:00.123Z";
    auto at = marks.quarantine(q, db.outbox(), {alert("quarantine-1")});
    ASSERT_TRUE(at) << at.error().to_string();
    EXPECT_EQ(*at, "2026-12-01T10:00:00.123Z");
    ASSERT_TRUE(marks.quarantine(q, db.outbox(), {alert("quarantine-1")}));
    auto newest = db.outbox().newest(10);
    ASSERT_TRUE(newest);
    ASSERT_EQ(newest->size(), 1u);
    EXPECT_EQ(newest->front().key, "quarantine-1");
    EXPECT_EQ(newest->front().run_id, 0);
    got = marks.get("/r/poison.json");
    ASSERT_TRUE(got && *got);
    EXPECT_EQ((*got)->state, ReadState::quarantined);
    EXPECT_EQ((*got)->error, q.error);
    EXPECT_EQ((*got)->reader, "");
    EXPECT_EQ((*got)->quarantined_at, "2026-12-01T10:00:00.123Z");
    auto quarantined = marks.list(ReadState::quarantined);
    ASSERT_TRUE(quarantined);
    ASSERT_EQ(quarantined->size(), 1u);
    EXPECT_EQ(quarantined->front().path, "/r/poison.json");
    ASSERT_TRUE(marks.list());
    EXPECT_EQ(marks.list()->size(), 5u);

    // Retry: from quarantined to retry, the reason and time kept for the listing.
    auto was = marks.request_retry("/r/poison.json");
    ASSERT_TRUE(was) << was.error().to_string();
    EXPECT_EQ(*was, ReadState::quarantined);
    got = marks.get("/r/poison.json");
    ASSERT_TRUE(got && *got);
    EXPECT_EQ((*got)->state, ReadState::retry);
    EXPECT_EQ((*got)->error, q.error);
    EXPECT_EQ((*got)->quarantined_at, "2026-12-01T10:00:00.123Z");
    EXPECT_TRUE(marks.list(ReadState::quarantined)->empty());
    EXPECT_EQ(marks.list(ReadState::retry)->size(), 1u);
    // A failed file may be retried too.
    FileMark failed{"/r/failed.json", 1, 2, "", std::nullopt, "r.json:3: bad"};
    failed.state = ReadState::failed;
    ASSERT_TRUE(marks.save(failed));
    ASSERT_TRUE(marks.request_retry("/r/failed.json"));
    EXPECT_EQ(*marks.request_retry("/r/failed.json"), ReadState::retry);

    // A clean stop forgets its own reading marks with no death counted; a suspect stays one.
    auto forgotten = marks.forget_unfinished("host:/a.yaml");
    ASSERT_TRUE(forgotten) << forgotten.error().to_string();
    EXPECT_EQ(*forgotten, 1);
    EXPECT_FALSE(*marks.get("/r/innocent.json"));
    EXPECT_TRUE(*marks.get("/r/suspect.json"));
    EXPECT_TRUE(*marks.get("/r/other.json"));
    EXPECT_TRUE(*marks.get("/r/poison.json"));
}

}  // namespace

TEST(FileMarks, ReadingQuarantineRetryAndForgetOnSqlite) {
    TempDir dir;
    auto db = Db::open(dir.file("a.db"));
    ASSERT_TRUE(db) << db.error().to_string();
    check_transitions(*db);
    // The states are stored as their names.
    EXPECT_EQ(query_int(dir.file("a.db"), "SELECT count(*) FROM watched_files WHERE state = 'retry'"), 2);
    EXPECT_EQ(query_int(dir.file("a.db"), "SELECT count(*) FROM watched_files WHERE state = 'reading'"), 2);
}

TEST(FileMarks, ReadingQuarantineRetryAndForgetOnPostgresql) {
    PERFWATCH_PG_CLUSTER(pg);
    ASSERT_TRUE(pg->create_database("marks"));
    auto db = Db::open(pg->uri("marks"));
    ASSERT_TRUE(db) << db.error().to_string();
    check_transitions(*db);
    EXPECT_EQ(pg->query("marks", "SELECT count(*) FROM watched_files WHERE state = 'retry'"), "2");
}

// A database of schema version 5 (before reading states) keeps its marks: one with an error is
// failed, one without is read, and neither is read again while unchanged.
TEST(FileMarks, MigratedMarksAreReadOrFailed) {
    TempDir dir;
    const std::string path = dir.file("v5.db");
    {
        SQLite::Database raw(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        raw.exec(read_file(fixture("storage/schema_v5.sql")));
        raw.exec("INSERT INTO watched_files(path, size, mtime_ns, sha256, run_id, error, seen_at) VALUES "
                 "('/r/good.csv', 10, 20, 'abc', 1, '', '2026-11-24T11:09:06Z'), "
                 "('/r/bad.csv', 11, 21, '', NULL, '/r/bad.csv:2: not a report', '2026-11-24T11:09:07Z')");
    }
    auto db = Db::open(path);
    ASSERT_TRUE(db) << db.error().to_string();
    auto good = db->file_marks().get("/r/good.csv");
    auto bad = db->file_marks().get("/r/bad.csv");
    ASSERT_TRUE(good && *good && bad && *bad);
    EXPECT_EQ((*good)->state, ReadState::read);
    EXPECT_EQ((*good)->run_id, 1);
    EXPECT_EQ((*bad)->state, ReadState::failed);
    EXPECT_EQ((*bad)->error, "/r/bad.csv:2: not a report");
    EXPECT_EQ((*bad)->deaths, 0);
    EXPECT_EQ((*bad)->reader, "");
}

// PostgreSQL's migration to the reading states: a database at version 10 (the columns and
// index removed again, its version row with them) gets them back with its marks kept.
TEST(FileMarks, PostgresqlMigratesVersion10Marks) {
    PERFWATCH_PG_CLUSTER(pg);
    ASSERT_TRUE(pg->create_database("old"));
    ASSERT_TRUE(Db::open(pg->uri("old")));
    pg->query("old", "DROP INDEX watched_files_state; ALTER TABLE watched_files DROP COLUMN state, DROP COLUMN "
                     "reader, DROP COLUMN deaths, DROP COLUMN quarantined_at; DELETE FROM perfwatch_schema WHERE "
                     "version > 10; INSERT INTO perfwatch_schema(version) SELECT 10 WHERE NOT EXISTS (SELECT 1 FROM "
                     "perfwatch_schema WHERE version = 10); INSERT INTO watched_files(path, size, mtime_ns, error, "
                     "seen_at) VALUES ('/r/bad.csv', 1, 2, 'bad', 'now'), ('/r/good.csv', 3, 4, '', 'now')");
    ASSERT_EQ(pg->query("old", "SELECT max(version) FROM perfwatch_schema"), "10");
    auto db = Db::open(pg->uri("old"));
    ASSERT_TRUE(db) << db.error().to_string();
    EXPECT_EQ(db->schema_version(), current_schema_version());
    auto bad = db->file_marks().get("/r/bad.csv");
    auto good = db->file_marks().get("/r/good.csv");
    ASSERT_TRUE(bad && *bad && good && *good);
    EXPECT_EQ((*bad)->state, ReadState::failed);
    EXPECT_EQ((*good)->state, ReadState::read);
    EXPECT_EQ(pg->query("old", "SELECT count(*) FROM pg_indexes WHERE indexname = 'watched_files_state'"), "1");
}

}  // namespace perfwatch::test
