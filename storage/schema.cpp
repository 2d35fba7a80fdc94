#include "storage/schema.hpp"
#include "storage/db.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <iterator>

namespace perfwatch {

namespace {

// Migration N (1-based) brings a database from user_version N-1 to N. Append only.
const char* const k_migrations[] = {
    R"sql(
CREATE TABLE runs(
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL,
    sha256 TEXT NOT NULL UNIQUE,
    format TEXT NOT NULL,
    format_detail TEXT NOT NULL DEFAULT '',
    tool_version TEXT NOT NULL DEFAULT '',
    captured_at TEXT,
    ingested_at TEXT NOT NULL
);
CREATE TABLE run_labels(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY(run_id, key)
) WITHOUT ROWID;
CREATE INDEX run_labels_kv ON run_labels(key, value);
CREATE TABLE run_notes(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY(run_id, ordinal)
) WITHOUT ROWID;
CREATE TABLE entities(
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    parent_id INTEGER REFERENCES entities(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    name TEXT NOT NULL
);
CREATE INDEX entities_run ON entities(run_id, ordinal);
CREATE INDEX entities_kind_name ON entities(kind, name);
CREATE TABLE entity_attributes(
    entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY(entity_id, key)
) WITHOUT ROWID;
CREATE TABLE metrics(
    entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    tool_unit TEXT NOT NULL,
    PRIMARY KEY(entity_id, name)
) WITHOUT ROWID;
CREATE TABLE tool_findings(
    id INTEGER PRIMARY KEY,
    entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    rule TEXT NOT NULL,
    type TEXT NOT NULL,
    section TEXT NOT NULL,
    text TEXT NOT NULL,
    speedup_type TEXT NOT NULL,
    speedup_pct REAL
);
CREATE INDEX tool_findings_entity ON tool_findings(entity_id);
CREATE TABLE findings(
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    rule TEXT NOT NULL,
    title TEXT NOT NULL,
    severity TEXT NOT NULL,
    entity_kind TEXT NOT NULL,
    entity_name TEXT NOT NULL,
    message TEXT NOT NULL,
    speedup_pct REAL,
    share_pct REAL,
    impact REAL
);
CREATE INDEX findings_run ON findings(run_id);
CREATE TABLE finding_values(
    finding_id INTEGER NOT NULL REFERENCES findings(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY(finding_id, name)
) WITHOUT ROWID;
CREATE TABLE finding_labels(
    finding_id INTEGER NOT NULL REFERENCES findings(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY(finding_id, key)
) WITHOUT ROWID;
)sql",
    R"sql(
CREATE TABLE entity_samples(
    entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    metric TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY(entity_id, metric)
) WITHOUT ROWID;
CREATE TABLE baseline_pins(
    run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    pinned_at TEXT NOT NULL,
    comment TEXT NOT NULL DEFAULT ''
);
CREATE TABLE regressions(
    id INTEGER PRIMARY KEY,
    rule TEXT NOT NULL,
    entity_kind TEXT NOT NULL,
    entity_name TEXT NOT NULL,
    series TEXT NOT NULL,
    metric TEXT NOT NULL,
    higher_is_worse INTEGER NOT NULL,
    baseline REAL NOT NULL,
    band_limit REAL NOT NULL,
    opened_run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    first_bad_run INTEGER,
    last_run INTEGER NOT NULL,
    inside_runs INTEGER NOT NULL DEFAULT 0,
    resolved_run INTEGER,
    resolution TEXT NOT NULL DEFAULT ''
);
CREATE INDEX regressions_series ON regressions(series, resolved_run);
)sql",
    R"sql(
ALTER TABLE runs ADD COLUMN processed_at TEXT;
UPDATE runs SET processed_at = ingested_at WHERE id IN (SELECT DISTINCT run_id FROM findings);
CREATE TABLE watched_files(
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL DEFAULT '',
    run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,
    error TEXT NOT NULL DEFAULT '',
    seen_at TEXT NOT NULL
) WITHOUT ROWID;
)sql",
    R"sql(
CREATE TABLE outbox(
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    receiver TEXT NOT NULL,
    run_id INTEGER,
    payload TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms INTEGER NOT NULL,
    last_error TEXT NOT NULL DEFAULT '',
    created_ms INTEGER NOT NULL,
    done_ms INTEGER
);
CREATE INDEX outbox_due ON outbox(state, next_attempt_ms);
CREATE TABLE silences(
    id INTEGER PRIMARY KEY,
    matchers TEXT NOT NULL,
    until_ms INTEGER NOT NULL,
    comment TEXT NOT NULL DEFAULT '',
    created_ms INTEGER NOT NULL
);
CREATE TABLE alert_fingerprints(
    receiver TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    last_ms INTEGER NOT NULL,
    PRIMARY KEY(receiver, fingerprint)
) WITHOUT ROWID;
)sql",
    // Outbox messages of a route with group_wait/group_interval: the group they belong to, and
    // whether later runs of that group may still join them (until they are handed to a sender).
    R"sql(
ALTER TABLE outbox ADD COLUMN group_key TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN open INTEGER NOT NULL DEFAULT 0;
CREATE INDEX outbox_group ON outbox(receiver, group_key, state);
)sql",
    // A run is a report's content under its labels: the same bytes under another commit are a
    // new run sharing the entities of the run that stored them first (content_run).
    R"sql(
CREATE TABLE runs_new(
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    format TEXT NOT NULL,
    format_detail TEXT NOT NULL DEFAULT '',
    tool_version TEXT NOT NULL DEFAULT '',
    captured_at TEXT,
    ingested_at TEXT NOT NULL,
    processed_at TEXT,
    content_run INTEGER REFERENCES runs(id),
    labels_key TEXT NOT NULL DEFAULT '',
    UNIQUE(sha256, labels_key)
);
INSERT INTO runs_new(id, source, sha256, format, format_detail, tool_version, captured_at, ingested_at,
                     processed_at, content_run, labels_key)
SELECT id, source, sha256, format, format_detail, tool_version, captured_at, ingested_at, processed_at, NULL,
       COALESCE((SELECT group_concat(key || '=' || value || char(10), '')
                 FROM (SELECT key, value FROM run_labels l WHERE l.run_id = runs.id ORDER BY key)), '')
FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_content ON runs(content_run);
)sql",
    // Regressions get a status (open, resolved, accepted), the last run that was still bad, the
    // change when they opened and an acceptance comment; findings carry their comparison.
    R"sql(
ALTER TABLE regressions ADD COLUMN status TEXT NOT NULL DEFAULT 'open';
ALTER TABLE regressions ADD COLUMN last_bad_run INTEGER;
ALTER TABLE regressions ADD COLUMN current REAL;
ALTER TABLE regressions ADD COLUMN change_pct REAL;
ALTER TABLE regressions ADD COLUMN comment TEXT NOT NULL DEFAULT '';
UPDATE regressions SET status = 'resolved' WHERE resolved_run IS NOT NULL;
UPDATE regressions SET last_bad_run = opened_run;
CREATE INDEX regressions_series_all ON regressions(series, id);
ALTER TABLE findings ADD COLUMN cmp_metric TEXT;
ALTER TABLE findings ADD COLUMN cmp_baseline REAL;
ALTER TABLE findings ADD COLUMN cmp_current REAL;
ALTER TABLE findings ADD COLUMN cmp_change_pct REAL;
ALTER TABLE findings ADD COLUMN cmp_confidence_pct REAL;
ALTER TABLE findings ADD COLUMN cmp_first_bad_run INTEGER;
ALTER TABLE findings ADD COLUMN cmp_reference TEXT;
)sql",
    // A fleet of daemons on one database: a run's rules and an outbox message's delivery are
    // claimed by one daemon for a lease; a dead daemon's claims lapse and another takes them.
    R"sql(
ALTER TABLE runs ADD COLUMN claimed_by TEXT;
ALTER TABLE runs ADD COLUMN claim_until_ms INTEGER;
ALTER TABLE outbox ADD COLUMN claimed_by TEXT;
ALTER TABLE outbox ADD COLUMN lease_until_ms INTEGER;
)sql",
    // Distributed jobs: a job's own run (format "job") and the rank runs it was built from.
    R"sql(
CREATE TABLE job_ranks(
    job_run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    rank_no INTEGER NOT NULL,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    PRIMARY KEY(job_run, rank_no)
) WITHOUT ROWID;
CREATE INDEX job_ranks_run ON job_ranks(run_id);
)sql",
    // Bisection-ready findings: the last good run and both ends' commits and levels.
    R"sql(
ALTER TABLE findings ADD COLUMN cmp_last_good_run INTEGER;
ALTER TABLE findings ADD COLUMN cmp_last_good_value REAL;
ALTER TABLE findings ADD COLUMN cmp_last_good_commit TEXT;
ALTER TABLE findings ADD COLUMN cmp_first_bad_value REAL;
ALTER TABLE findings ADD COLUMN cmp_first_bad_commit TEXT;
)sql",
    // Poison files: a watched file's reading state (reading is committed before a reader starts),
    // which daemon reads it, the unexplained daemon ends while it was read, and its quarantine.
    R"sql(
ALTER TABLE watched_files ADD COLUMN state TEXT NOT NULL DEFAULT 'read';
ALTER TABLE watched_files ADD COLUMN reader TEXT NOT NULL DEFAULT '';
ALTER TABLE watched_files ADD COLUMN deaths INTEGER NOT NULL DEFAULT 0;
ALTER TABLE watched_files ADD COLUMN quarantined_at TEXT;
UPDATE watched_files SET state = 'failed' WHERE error <> '';
CREATE INDEX watched_files_state ON watched_files(state);
)sql",
    // Triage: a regression's state as the team sets it, its assignee and bug, and every change
    // kept with who made it and when.
    R"sql(
ALTER TABLE regressions ADD COLUMN triage TEXT NOT NULL DEFAULT 'untriaged';
ALTER TABLE regressions ADD COLUMN assignee TEXT NOT NULL DEFAULT '';
ALTER TABLE regressions ADD COLUMN bug_url TEXT NOT NULL DEFAULT '';
UPDATE regressions SET triage = 'accepted' WHERE status = 'accepted';
CREATE TABLE regression_events(
    id INTEGER PRIMARY KEY,
    regression_id INTEGER NOT NULL REFERENCES regressions(id) ON DELETE CASCADE,
    at TEXT NOT NULL,
    author TEXT NOT NULL,
    field TEXT NOT NULL,
    value TEXT NOT NULL
);
CREATE INDEX regression_events_regression ON regression_events(regression_id, id);
)sql",
};

// The schema at current_schema_version(), once for both backends, tables in the order their
// references need (the copy order of `db migrate` too). The dialect differences, all of them:
// {id} an identity column, {int} a 64-bit integer, {real} a double, {blob} bytes,
// {without_rowid} SQLite's clustered tables, and k_postgresql_only below. A new SQLite file and a
// new PostgreSQL database are created from it; older SQLite files reach it through k_migrations
// (Db.FreshAndMigratedSqliteSchemasAreTheSame checks that both roads end at the same schema).
constexpr const char* k_schema = R"sql(
CREATE TABLE runs(
    id {id},
    source TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    format TEXT NOT NULL,
    format_detail TEXT NOT NULL DEFAULT '',
    tool_version TEXT NOT NULL DEFAULT '',
    captured_at TEXT,
    ingested_at TEXT NOT NULL,
    processed_at TEXT,
    content_run {int} REFERENCES runs(id),
    labels_key TEXT NOT NULL DEFAULT '',
    claimed_by TEXT,
    claim_until_ms {int},
    UNIQUE(sha256, labels_key)
);
CREATE INDEX runs_content ON runs(content_run);
CREATE TABLE run_labels(
    run_id {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY(run_id, key)
){without_rowid};
CREATE INDEX run_labels_kv ON run_labels(key, value);
CREATE TABLE run_notes(
    run_id {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    ordinal {int} NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY(run_id, ordinal)
){without_rowid};
CREATE TABLE entities(
    id {id},
    run_id {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    ordinal {int} NOT NULL,
    parent_id {int} REFERENCES entities(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    name TEXT NOT NULL
);
CREATE INDEX entities_run ON entities(run_id, ordinal);
CREATE INDEX entities_kind_name ON entities(kind, name);
CREATE TABLE entity_attributes(
    entity_id {int} NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY(entity_id, key)
){without_rowid};
CREATE TABLE metrics(
    entity_id {int} NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    value {real} NOT NULL,
    unit TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    tool_unit TEXT NOT NULL,
    PRIMARY KEY(entity_id, name)
){without_rowid};
CREATE TABLE tool_findings(
    id {id},
    entity_id {int} NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    rule TEXT NOT NULL,
    type TEXT NOT NULL,
    section TEXT NOT NULL,
    text TEXT NOT NULL,
    speedup_type TEXT NOT NULL,
    speedup_pct {real}
);
CREATE INDEX tool_findings_entity ON tool_findings(entity_id);
CREATE TABLE findings(
    id {id},
    run_id {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    rule TEXT NOT NULL,
    title TEXT NOT NULL,
    severity TEXT NOT NULL,
    entity_kind TEXT NOT NULL,
    entity_name TEXT NOT NULL,
    message TEXT NOT NULL,
    speedup_pct {real},
    share_pct {real},
    impact {real},
    cmp_metric TEXT,
    cmp_baseline {real},
    cmp_current {real},
    cmp_change_pct {real},
    cmp_confidence_pct {real},
    cmp_first_bad_run {int},
    cmp_reference TEXT,
    cmp_last_good_run {int},
    cmp_last_good_value {real},
    cmp_last_good_commit TEXT,
    cmp_first_bad_value {real},
    cmp_first_bad_commit TEXT
);
CREATE INDEX findings_run ON findings(run_id);
CREATE TABLE finding_values(
    finding_id {int} NOT NULL REFERENCES findings(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    value {real} NOT NULL,
    PRIMARY KEY(finding_id, name)
){without_rowid};
CREATE TABLE finding_labels(
    finding_id {int} NOT NULL REFERENCES findings(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY(finding_id, key)
){without_rowid};
CREATE TABLE entity_samples(
    entity_id {int} NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    metric TEXT NOT NULL,
    data {blob} NOT NULL,
    PRIMARY KEY(entity_id, metric)
){without_rowid};
CREATE TABLE baseline_pins(
    run_id {int} PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    pinned_at TEXT NOT NULL,
    comment TEXT NOT NULL DEFAULT ''
);
CREATE TABLE regressions(
    id {id},
    rule TEXT NOT NULL,
    entity_kind TEXT NOT NULL,
    entity_name TEXT NOT NULL,
    series TEXT NOT NULL,
    metric TEXT NOT NULL,
    higher_is_worse {int} NOT NULL,
    baseline {real} NOT NULL,
    band_limit {real} NOT NULL,
    opened_run {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    first_bad_run {int},
    last_run {int} NOT NULL,
    inside_runs {int} NOT NULL DEFAULT 0,
    resolved_run {int},
    resolution TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'open',
    last_bad_run {int},
    current {real},
    change_pct {real},
    comment TEXT NOT NULL DEFAULT '',
    triage TEXT NOT NULL DEFAULT 'untriaged',
    assignee TEXT NOT NULL DEFAULT '',
    bug_url TEXT NOT NULL DEFAULT ''
);
CREATE INDEX regressions_series ON regressions(series, resolved_run);
CREATE INDEX regressions_series_all ON regressions(series, id);
CREATE TABLE regression_events(
    id {id},
    regression_id {int} NOT NULL REFERENCES regressions(id) ON DELETE CASCADE,
    at TEXT NOT NULL,
    author TEXT NOT NULL,
    field TEXT NOT NULL,
    value TEXT NOT NULL
);
CREATE INDEX regression_events_regression ON regression_events(regression_id, id);
CREATE TABLE watched_files(
    path TEXT PRIMARY KEY,
    size {int} NOT NULL,
    mtime_ns {int} NOT NULL,
    sha256 TEXT NOT NULL DEFAULT '',
    run_id {int} REFERENCES runs(id) ON DELETE SET NULL,
    error TEXT NOT NULL DEFAULT '',
    seen_at TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'read',
    reader TEXT NOT NULL DEFAULT '',
    deaths {int} NOT NULL DEFAULT 0,
    quarantined_at TEXT
){without_rowid};
CREATE INDEX watched_files_state ON watched_files(state);
CREATE TABLE outbox(
    id {id},
    key TEXT NOT NULL UNIQUE,
    receiver TEXT NOT NULL,
    run_id {int},
    payload TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    attempts {int} NOT NULL DEFAULT 0,
    next_attempt_ms {int} NOT NULL,
    last_error TEXT NOT NULL DEFAULT '',
    created_ms {int} NOT NULL,
    done_ms {int},
    group_key TEXT NOT NULL DEFAULT '',
    open {int} NOT NULL DEFAULT 0,
    claimed_by TEXT,
    lease_until_ms {int}
);
CREATE INDEX outbox_due ON outbox(state, next_attempt_ms);
CREATE INDEX outbox_group ON outbox(receiver, group_key, state);
CREATE TABLE silences(
    id {id},
    matchers TEXT NOT NULL,
    until_ms {int} NOT NULL,
    comment TEXT NOT NULL DEFAULT '',
    created_ms {int} NOT NULL
);
CREATE TABLE alert_fingerprints(
    receiver TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    last_ms {int} NOT NULL,
    PRIMARY KEY(receiver, fingerprint)
){without_rowid};
CREATE TABLE job_ranks(
    job_run {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    rank_no {int} NOT NULL,
    run_id {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    PRIMARY KEY(job_run, rank_no)
){without_rowid};
CREATE INDEX job_ranks_run ON job_ranks(run_id);
)sql";

// PostgreSQL does not index a referencing column by itself: deleting an entity's children
// (retention) needs this index there.
constexpr const char* k_postgresql_only = "CREATE INDEX entities_parent ON entities(parent_id);";

std::string schema_ddl(sql::Dialect dialect) {
    const bool pg = dialect == sql::Dialect::postgresql;
    std::string out = fmt::format(
        fmt::runtime(k_schema), fmt::arg("id", pg ? "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY" : "INTEGER PRIMARY KEY"),
        fmt::arg("int", pg ? "BIGINT" : "INTEGER"), fmt::arg("real", pg ? "DOUBLE PRECISION" : "REAL"),
        fmt::arg("blob", pg ? "BYTEA" : "BLOB"), fmt::arg("without_rowid", pg ? "" : " WITHOUT ROWID"));
    if (pg) out += k_postgresql_only;
    return out;
}

// PostgreSQL databases older than the schema above (the backend began at version 7): the
// migrations after that version. Append one here and to k_migrations alike, and change k_schema.
struct PgMigration {
    int version;
    const char* sql;
};

const PgMigration k_pg_migrations[] = {
    {8, R"sql(
ALTER TABLE runs ADD COLUMN claimed_by TEXT;
ALTER TABLE runs ADD COLUMN claim_until_ms BIGINT;
ALTER TABLE outbox ADD COLUMN claimed_by TEXT;
ALTER TABLE outbox ADD COLUMN lease_until_ms BIGINT;
)sql"},
    {9, R"sql(
CREATE TABLE job_ranks(
    job_run BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    rank_no BIGINT NOT NULL,
    run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    PRIMARY KEY(job_run, rank_no)
);
CREATE INDEX job_ranks_run ON job_ranks(run_id);
)sql"},
    {10, R"sql(
ALTER TABLE findings ADD COLUMN cmp_last_good_run BIGINT;
ALTER TABLE findings ADD COLUMN cmp_last_good_value DOUBLE PRECISION;
ALTER TABLE findings ADD COLUMN cmp_last_good_commit TEXT;
ALTER TABLE findings ADD COLUMN cmp_first_bad_value DOUBLE PRECISION;
ALTER TABLE findings ADD COLUMN cmp_first_bad_commit TEXT;
)sql"},
    {11, R"sql(
ALTER TABLE watched_files ADD COLUMN state TEXT NOT NULL DEFAULT 'read';
ALTER TABLE watched_files ADD COLUMN reader TEXT NOT NULL DEFAULT '';
ALTER TABLE watched_files ADD COLUMN deaths BIGINT NOT NULL DEFAULT 0;
ALTER TABLE watched_files ADD COLUMN quarantined_at TEXT;
UPDATE watched_files SET state = 'failed' WHERE error <> '';
CREATE INDEX watched_files_state ON watched_files(state);
)sql"},
    {12, R"sql(
ALTER TABLE regressions ADD COLUMN IF NOT EXISTS triage TEXT NOT NULL DEFAULT 'untriaged';
ALTER TABLE regressions ADD COLUMN IF NOT EXISTS assignee TEXT NOT NULL DEFAULT '';
ALTER TABLE regressions ADD COLUMN IF NOT EXISTS bug_url TEXT NOT NULL DEFAULT '';
UPDATE regressions SET triage = 'accepted' WHERE status = 'accepted';
CREATE TABLE IF NOT EXISTS regression_events(
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    regression_id BIGINT NOT NULL REFERENCES regressions(id) ON DELETE CASCADE,
    at TEXT NOT NULL,
    author TEXT NOT NULL,
    field TEXT NOT NULL,
    value TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS regression_events_regression ON regression_events(regression_id, id);
)sql"},
};

// Any fixed number: the advisory lock a fleet's daemons take while one migrates.
constexpr std::int64_t k_migration_lock = 0x7065726677617463;  // "perfwatc"

int sqlite_version(sql::Connection& db) { return static_cast<int>(sql::query_int(db, "PRAGMA user_version")); }

// 0 while the version table does not exist (reading never creates it).
int pg_version(sql::Connection& db) {
    if (sql::query_int(db, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND "
                           "tablename = 'perfwatch_schema'") == 0)
        return 0;
    return static_cast<int>(sql::query_int(db, "SELECT max(version) FROM perfwatch_schema"));
}

Result<void> migrate_sqlite(sql::Connection& db, const std::string& name) {
    const int version = sqlite_version(db);
    if (version == 0 && sql::query_int(db, "SELECT count(*) FROM sqlite_master") == 0) {
        sql::Transaction tx(db);
        db.exec(schema_ddl(sql::Dialect::sqlite));
        db.exec(fmt::format("PRAGMA user_version = {}", current_schema_version()));
        tx.commit();
        return {};
    }
    // A migration may rebuild a table (drop and rename), which must not cascade to the rows
    // referring to it: foreign keys are off while migrating (outside any transaction), and
    // checked before they are on again.
    db.exec("PRAGMA foreign_keys=OFF");
    for (int v = version; v < current_schema_version(); ++v) {
        sql::Transaction tx(db);
        db.exec(k_migrations[v]);
        db.exec(fmt::format("PRAGMA user_version = {}", v + 1));
        sql::Statement check(db, "PRAGMA foreign_key_check");
        if (check.step())
            return fail(name, 0,
                        fmt::format("migration to schema version {} left a row of '{}' referring to nothing", v + 1,
                                    check.column(0).as_string()));
        tx.commit();
    }
    db.exec("PRAGMA foreign_keys=ON");
    return {};
}

Result<void> migrate_pg(sql::Connection& db, const std::string& name) {
    sql::Transaction tx(db);
    // Held until the transaction ends: a second daemon waits here, then finds the work done.
    db.exec(fmt::format("SELECT pg_advisory_xact_lock({})", k_migration_lock));
    db.exec("CREATE TABLE IF NOT EXISTS perfwatch_schema(version BIGINT NOT NULL)");
    const int version = pg_version(db);
    if (version > current_schema_version())
        return fail(name, 0, fmt::format("database schema version {} is newer than this build supports ({})", version,
                                         current_schema_version()));
    if (version == 0) {
        db.exec(schema_ddl(sql::Dialect::postgresql));
        sql::Statement mark(db, "INSERT INTO perfwatch_schema(version) VALUES(?)");
        mark.bind(1, current_schema_version());
        mark.exec();
        tx.commit();
        return {};
    }
    for (const PgMigration& m : k_pg_migrations) {
        if (m.version <= version) continue;
        db.exec(m.sql);
        sql::Statement mark(db, "INSERT INTO perfwatch_schema(version) VALUES(?)");
        mark.bind(1, m.version);
        mark.exec();
    }
    tx.commit();
    return {};
}

}  // namespace

int current_schema_version() { return static_cast<int>(std::size(k_migrations)); }

std::vector<SchemaTable> schema_tables() {
    std::vector<SchemaTable> out;
    const std::string_view schema = k_schema;
    constexpr std::string_view k_create = "CREATE TABLE ";
    for (auto at = schema.find(k_create); at != std::string_view::npos; at = schema.find(k_create, at + 1)) {
        const auto name_start = at + k_create.size();
        const auto paren = schema.find('(', name_start);
        const auto end = schema.find(";", paren);
        const std::string_view body = schema.substr(paren, end - paren);
        out.push_back({std::string(schema.substr(name_start, paren - name_start)),
                       body.find("id {id}") != std::string_view::npos});
    }
    return out;
}

int schema_version(sql::Connection& db) {
    return db.dialect() == sql::Dialect::sqlite ? sqlite_version(db) : pg_version(db);
}

Result<void> migrate(sql::Connection& db, const std::string& name) {
    return sql::guarded(name, [&]() -> Result<void> {
        if (db.dialect() == sql::Dialect::postgresql) return migrate_pg(db, name);
        const int version = sqlite_version(db);
        if (version > current_schema_version())
            return fail(name, 0,
                        fmt::format("database schema version {} is newer than this build supports ({})", version,
                                    current_schema_version()));
        if (version == current_schema_version()) return {};
        return migrate_sqlite(db, name);
    });
}

}  // namespace perfwatch
