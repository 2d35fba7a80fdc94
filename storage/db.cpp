#include "storage/db.hpp"
#include "storage/sqlite_guard.hpp"

#include <sys/statvfs.h>
#include <filesystem>
#include <unistd.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <unordered_map>

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
};

// The labels of a run as one text ("key=value\n" in key order), part of the run's identity.
std::string labels_key(const std::map<std::string, std::string>& labels) {
    std::string out;
    for (const auto& [k, v] : labels) out += k + "=" + v + "\n";
    return out;
}

std::string now_utc() {
    return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                       std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
}

std::optional<double> nullable_double(const SQLite::Column& c) {
    if (c.isNull()) return std::nullopt;
    return c.getDouble();
}

std::optional<std::int64_t> nullable_int(const SQLite::Column& c) {
    if (c.isNull()) return std::nullopt;
    return c.getInt64();
}

void bind_optional_int(SQLite::Statement& st, int index, const std::optional<std::int64_t>& v) {
    if (v)
        st.bind(index, *v);
    else
        st.bind(index);
}

void bind_optional(SQLite::Statement& st, int index, const std::optional<double>& v) {
    if (v)
        st.bind(index, *v);
    else
        st.bind(index);
}

}  // namespace

Error database_error(const std::string& file, const SQLite::Exception& e) {
    Error out{file, 0, 0, false, fmt::format("database error: {}", e.what())};
    switch (e.getErrorCode() & 0xff) {
        case SQLITE_CONSTRAINT:
        case SQLITE_MISMATCH:
        case SQLITE_TOOBIG:
        case SQLITE_RANGE:
            out.kind = ErrorKind::report;
            out.message = fmt::format("the report holds values the database refuses: {}", e.what());
            break;
        default: out.kind = ErrorKind::database;
    }
    return out;
}

// Why a database may not open for writing: a read-only filesystem or no write permission on the
// file or its directory (SQLite writes the -wal and -shm files beside it). Empty when neither.
static std::string write_access_hint(const std::string& path) {
    const std::filesystem::path file(path);
    const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
    struct statvfs fs {};
    if (::statvfs(dir.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY) != 0)
        return fmt::format(" (the filesystem holding {} is mounted read-only; perfwatch writes the database and "
                           "its -wal and -shm files there)",
                           dir.string());
    if (::access(dir.c_str(), W_OK) != 0)
        return fmt::format(" (no write permission on the directory {}; perfwatch writes the -wal and -shm files "
                           "there)",
                           dir.string());
    if (::access(path.c_str(), F_OK) == 0 && ::access(path.c_str(), W_OK) != 0) return " (the file is read-only)";
    return {};
}

std::string_view to_string(RegressionStatus s) {
    switch (s) {
        case RegressionStatus::open: return "open";
        case RegressionStatus::resolved: return "resolved";
        case RegressionStatus::accepted: return "accepted";
    }
    return "open";
}

std::optional<RegressionStatus> regression_status_from_string(std::string_view s) {
    if (s == "open") return RegressionStatus::open;
    if (s == "resolved") return RegressionStatus::resolved;
    if (s == "accepted") return RegressionStatus::accepted;
    return std::nullopt;
}

int current_schema_version() { return static_cast<int>(std::size(k_migrations)); }

Db::Db(std::unique_ptr<SQLite::Database> db, std::string path) : m_db(std::move(db)), m_path(std::move(path)) {}
Db::Db(Db&&) noexcept = default;
Db& Db::operator=(Db&&) noexcept = default;
Db::~Db() = default;

Result<Db> Db::open(const std::string& path) {
    try {
        auto db = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        db->setBusyTimeout(5000);
        db->exec("PRAGMA journal_mode=WAL");
        db->exec("PRAGMA foreign_keys=ON");
        db->exec("PRAGMA synchronous=NORMAL");
        Db result(std::move(db), path);
        if (auto r = result.migrate(); !r) return std::unexpected(r.error());
        return result;
    } catch (const SQLite::Exception& e) {
        Error error{path, 0, 0, false, fmt::format("cannot open database: {}{}", e.what(), write_access_hint(path))};
        error.kind = ErrorKind::database;
        return std::unexpected(std::move(error));
    }
}

int Db::schema_version() const { return m_db->execAndGet("PRAGMA user_version").getInt(); }

Result<void> Db::migrate() {
    return guarded(m_path, [&]() -> Result<void> {
        const int version = schema_version();
        if (version > current_schema_version())
            return fail(m_path, 0,
                        fmt::format("database schema version {} is newer than this build supports ({})", version,
                                    current_schema_version()));
        if (version == current_schema_version()) return {};
        // A migration may rebuild a table (drop and rename), which must not cascade to the rows
        // referring to it: foreign keys are off while migrating (outside any transaction), and
        // checked before they are on again.
        m_db->exec("PRAGMA foreign_keys=OFF");
        for (int v = version; v < current_schema_version(); ++v) {
            SQLite::Transaction tx(*m_db);
            m_db->exec(k_migrations[v]);
            m_db->exec(fmt::format("PRAGMA user_version = {}", v + 1));
            SQLite::Statement check(*m_db, "PRAGMA foreign_key_check");
            if (check.executeStep())
                return fail(m_path, 0,
                            fmt::format("migration to schema version {} left a row of '{}' referring to nothing", v + 1,
                                        check.getColumn(0).getString()));
            tx.commit();
        }
        m_db->exec("PRAGMA foreign_keys=ON");
        return {};
    });
}

std::optional<std::int64_t> Db::find_by_sha256(const std::string& sha256) const {
    SQLite::Statement st(*m_db, "SELECT id FROM runs WHERE sha256 = ? ORDER BY id LIMIT 1");
    st.bind(1, sha256);
    if (st.executeStep()) return st.getColumn(0).getInt64();
    return std::nullopt;
}

std::int64_t Db::count_runs() const { return m_db->execAndGet("SELECT count(*) FROM runs").getInt64(); }

Result<StoreOutcome> Db::store(const RunBatch& batch) {
    return guarded(m_path, [&]() -> Result<StoreOutcome> {
        SQLite::Transaction tx(*m_db, SQLite::TransactionBehavior::IMMEDIATE);
        const std::string key = labels_key(batch.labels);
        SQLite::Statement same(*m_db, "SELECT id FROM runs WHERE sha256 = ? AND labels_key = ?");
        same.bind(1, batch.sha256);
        same.bind(2, key);
        if (same.executeStep()) return StoreOutcome{same.getColumn(0).getInt64(), false, std::nullopt};
        std::optional<std::int64_t> content;
        SQLite::Statement stored(*m_db, "SELECT COALESCE(content_run, id) FROM runs WHERE sha256 = ? ORDER BY id LIMIT 1");
        stored.bind(1, batch.sha256);
        if (stored.executeStep()) content = stored.getColumn(0).getInt64();

        SQLite::Statement run_st(*m_db,
                                 "INSERT INTO runs(source, sha256, format, format_detail, tool_version, "
                                 "captured_at, ingested_at, content_run, labels_key) VALUES(?,?,?,?,?,?,?,?,?)");
        run_st.bind(1, batch.source);
        run_st.bind(2, batch.sha256);
        run_st.bind(3, batch.format);
        run_st.bind(4, batch.format_detail);
        run_st.bind(5, batch.tool_version);
        if (batch.captured_at)
            run_st.bind(6, *batch.captured_at);
        else
            run_st.bind(6);
        run_st.bind(7, now_utc());
        if (content)
            run_st.bind(8, *content);
        else
            run_st.bind(8);
        run_st.bind(9, key);
        run_st.exec();
        const std::int64_t run_id = m_db->getLastInsertRowid();

        SQLite::Statement label_st(*m_db, "INSERT INTO run_labels(run_id, key, value) VALUES(?,?,?)");
        for (const auto& [k, v] : batch.labels) {
            label_st.bind(1, run_id);
            label_st.bind(2, k);
            label_st.bind(3, v);
            label_st.exec();
            label_st.reset();
        }
        SQLite::Statement note_st(*m_db, "INSERT INTO run_notes(run_id, ordinal, text) VALUES(?,?,?)");
        for (std::size_t i = 0; i < batch.notes.size(); ++i) {
            note_st.bind(1, run_id);
            note_st.bind(2, static_cast<std::int64_t>(i));
            note_st.bind(3, batch.notes[i]);
            note_st.exec();
            note_st.reset();
        }
        if (content) {
            tx.commit();
            return StoreOutcome{run_id, true, content};
        }

        SQLite::Statement ent_st(*m_db,
                                 "INSERT INTO entities(run_id, ordinal, parent_id, kind, name) VALUES(?,?,?,?,?)");
        SQLite::Statement attr_st(*m_db, "INSERT INTO entity_attributes(entity_id, key, value) VALUES(?,?,?)");
        SQLite::Statement metric_st(*m_db,
                                    "INSERT INTO metrics(entity_id, name, value, unit, tool_name, tool_unit) "
                                    "VALUES(?,?,?,?,?,?)");
        SQLite::Statement sample_st(*m_db, "INSERT INTO entity_samples(entity_id, metric, data) VALUES(?,?,?)");
        SQLite::Statement tf_st(*m_db,
                                "INSERT INTO tool_findings(entity_id, rule, type, section, text, speedup_type, "
                                "speedup_pct) VALUES(?,?,?,?,?,?,?)");
        std::vector<std::int64_t> ids(batch.entities.size(), 0);
        for (std::size_t i = 0; i < batch.entities.size(); ++i) {
            const Entity& e = batch.entities[i];
            ent_st.bind(1, run_id);
            ent_st.bind(2, static_cast<std::int64_t>(i));
            if (e.parent >= 0 && static_cast<std::size_t>(e.parent) < i)
                ent_st.bind(3, ids[static_cast<std::size_t>(e.parent)]);
            else
                ent_st.bind(3);
            ent_st.bind(4, std::string(to_string(e.kind)));
            ent_st.bind(5, e.name);
            ent_st.exec();
            ent_st.reset();
            const std::int64_t eid = m_db->getLastInsertRowid();
            ids[i] = eid;
            for (const auto& [k, v] : e.attributes) {
                attr_st.bind(1, eid);
                attr_st.bind(2, k);
                attr_st.bind(3, v);
                attr_st.exec();
                attr_st.reset();
            }
            for (const Metric& m : e.metrics) {
                metric_st.bind(1, eid);
                metric_st.bind(2, m.name);
                metric_st.bind(3, m.value);
                metric_st.bind(4, m.unit);
                metric_st.bind(5, m.tool_name);
                metric_st.bind(6, m.tool_unit);
                metric_st.exec();
                metric_st.reset();
            }
            for (const auto& [name, values] : e.samples) {
                sample_st.bind(1, eid);
                sample_st.bind(2, name);
                sample_st.bind(3, values.data(), static_cast<int>(values.size() * sizeof(double)));
                sample_st.exec();
                sample_st.reset();
            }
            for (const ToolFinding& f : e.tool_findings) {
                tf_st.bind(1, eid);
                tf_st.bind(2, f.rule);
                tf_st.bind(3, f.type);
                tf_st.bind(4, f.section);
                tf_st.bind(5, f.text);
                tf_st.bind(6, f.speedup_type);
                bind_optional(tf_st, 7, f.speedup_pct);
                tf_st.exec();
                tf_st.reset();
            }
        }
        tx.commit();
        return StoreOutcome{run_id, true, std::nullopt};
    });
}

Result<std::optional<StoredRun>> Db::load(std::int64_t run_id) const {
    return guarded(m_path, [&]() -> Result<std::optional<StoredRun>> {
        SQLite::Statement run_st(*m_db,
                                 "SELECT source, sha256, format, format_detail, tool_version, captured_at, "
                                 "ingested_at, COALESCE(content_run, id) FROM runs WHERE id = ?");
        run_st.bind(1, run_id);
        if (!run_st.executeStep()) return std::optional<StoredRun>{};
        StoredRun run;
        run.id = run_id;
        RunBatch& b = run.batch;
        b.source = run_st.getColumn(0).getString();
        b.sha256 = run_st.getColumn(1).getString();
        b.format = run_st.getColumn(2).getString();
        b.format_detail = run_st.getColumn(3).getString();
        b.tool_version = run_st.getColumn(4).getString();
        if (!run_st.getColumn(5).isNull()) b.captured_at = run_st.getColumn(5).getString();
        run.ingested_at = run_st.getColumn(6).getString();
        // Entities live with the run that stored the content first.
        const std::int64_t content_id = run_st.getColumn(7).getInt64();
        if (content_id != run_id) run.content_run = content_id;

        SQLite::Statement label_st(*m_db, "SELECT key, value FROM run_labels WHERE run_id = ?");
        label_st.bind(1, run_id);
        while (label_st.executeStep()) b.labels[label_st.getColumn(0).getString()] = label_st.getColumn(1).getString();
        SQLite::Statement note_st(*m_db, "SELECT text FROM run_notes WHERE run_id = ? ORDER BY ordinal");
        note_st.bind(1, run_id);
        while (note_st.executeStep()) b.notes.push_back(note_st.getColumn(0).getString());

        std::unordered_map<std::int64_t, std::size_t> index_of;
        SQLite::Statement ent_st(*m_db,
                                 "SELECT id, parent_id, kind, name FROM entities WHERE run_id = ? ORDER BY ordinal");
        ent_st.bind(1, content_id);
        while (ent_st.executeStep()) {
            Entity e;
            const std::int64_t id = ent_st.getColumn(0).getInt64();
            if (!ent_st.getColumn(1).isNull()) {
                auto it = index_of.find(ent_st.getColumn(1).getInt64());
                if (it != index_of.end()) e.parent = static_cast<std::int64_t>(it->second);
            }
            e.kind = entity_kind_from_string(ent_st.getColumn(2).getString()).value_or(EntityKind::kernel);
            e.name = ent_st.getColumn(3).getString();
            index_of[id] = b.entities.size();
            b.entities.push_back(std::move(e));
        }

        SQLite::Statement attr_st(*m_db,
                                  "SELECT a.entity_id, a.key, a.value FROM entity_attributes a "
                                  "JOIN entities e ON e.id = a.entity_id WHERE e.run_id = ?");
        attr_st.bind(1, content_id);
        while (attr_st.executeStep())
            b.entities[index_of.at(attr_st.getColumn(0).getInt64())].attributes[attr_st.getColumn(1).getString()] =
                attr_st.getColumn(2).getString();

        SQLite::Statement metric_st(*m_db,
                                    "SELECT m.entity_id, m.name, m.value, m.unit, m.tool_name, m.tool_unit "
                                    "FROM metrics m JOIN entities e ON e.id = m.entity_id WHERE e.run_id = ?");
        metric_st.bind(1, content_id);
        while (metric_st.executeStep()) {
            Metric m{metric_st.getColumn(1).getString(), metric_st.getColumn(2).getDouble(),
                     metric_st.getColumn(3).getString(), metric_st.getColumn(4).getString(),
                     metric_st.getColumn(5).getString()};
            b.entities[index_of.at(metric_st.getColumn(0).getInt64())].metrics.push_back(std::move(m));
        }

        SQLite::Statement sample_st(*m_db,
                                    "SELECT s.entity_id, s.metric, s.data FROM entity_samples s "
                                    "JOIN entities e ON e.id = s.entity_id WHERE e.run_id = ?");
        sample_st.bind(1, content_id);
        while (sample_st.executeStep()) {
            const SQLite::Column data = sample_st.getColumn(2);
            std::vector<double> values(static_cast<std::size_t>(data.getBytes()) / sizeof(double));
            if (!values.empty()) std::memcpy(values.data(), data.getBlob(), values.size() * sizeof(double));
            b.entities[index_of.at(sample_st.getColumn(0).getInt64())].samples[sample_st.getColumn(1).getString()] =
                std::move(values);
        }

        SQLite::Statement tf_st(*m_db,
                                "SELECT t.entity_id, t.rule, t.type, t.section, t.text, t.speedup_type, "
                                "t.speedup_pct FROM tool_findings t JOIN entities e ON e.id = t.entity_id "
                                "WHERE e.run_id = ? ORDER BY t.id");
        tf_st.bind(1, content_id);
        while (tf_st.executeStep()) {
            ToolFinding f{tf_st.getColumn(1).getString(), tf_st.getColumn(2).getString(),
                          tf_st.getColumn(3).getString(), tf_st.getColumn(4).getString(),
                          tf_st.getColumn(5).getString(), nullable_double(tf_st.getColumn(6))};
            b.entities[index_of.at(tf_st.getColumn(0).getInt64())].tool_findings.push_back(std::move(f));
        }
        return std::optional<StoredRun>(std::move(run));
    });
}

Result<std::vector<RunSummary>> Db::list_runs() const {
    return guarded(m_path, [&]() -> Result<std::vector<RunSummary>> {
        SQLite::Statement st(*m_db,
                             "SELECT r.id, r.source, r.format, r.ingested_at, "
                             "(SELECT count(*) FROM entities e WHERE e.run_id = COALESCE(r.content_run, r.id) AND e.kind = 'kernel') "
                             "FROM runs r ORDER BY r.id");
        std::vector<RunSummary> out;
        while (st.executeStep())
            out.push_back({st.getColumn(0).getInt64(), st.getColumn(1).getString(), st.getColumn(2).getString(),
                           st.getColumn(3).getString(), st.getColumn(4).getInt64()});
        return out;
    });
}

Result<void> Db::store_findings(std::int64_t run_id, const std::vector<Finding>& findings) {
    return guarded(m_path, [&]() -> Result<void> {
        SQLite::Transaction tx(*m_db, SQLite::TransactionBehavior::IMMEDIATE);
        SQLite::Statement del(*m_db, "DELETE FROM findings WHERE run_id = ?");
        del.bind(1, run_id);
        del.exec();
        SQLite::Statement ins(*m_db,
                              "INSERT INTO findings(run_id, rule, title, severity, entity_kind, entity_name, "
                              "message, speedup_pct, share_pct, impact, cmp_metric, cmp_baseline, cmp_current, "
                              "cmp_change_pct, cmp_confidence_pct, cmp_first_bad_run, cmp_reference) "
                              "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
        SQLite::Statement val(*m_db, "INSERT INTO finding_values(finding_id, name, value) VALUES(?,?,?)");
        SQLite::Statement lab(*m_db, "INSERT INTO finding_labels(finding_id, key, value) VALUES(?,?,?)");
        for (const Finding& f : findings) {
            ins.bind(1, run_id);
            ins.bind(2, f.rule);
            ins.bind(3, f.title);
            ins.bind(4, std::string(to_string(f.severity)));
            ins.bind(5, std::string(to_string(f.entity_kind)));
            ins.bind(6, f.entity_name);
            ins.bind(7, f.message);
            bind_optional(ins, 8, f.estimated_speedup_pct);
            bind_optional(ins, 9, f.share_pct);
            bind_optional(ins, 10, f.impact);
            if (const auto& c = f.comparison) {
                ins.bind(11, c->metric);
                ins.bind(12, c->baseline);
                ins.bind(13, c->current);
                ins.bind(14, c->change_pct);
                bind_optional(ins, 15, c->confidence_pct);
                bind_optional_int(ins, 16, c->first_bad_run);
                ins.bind(17, c->reference);
            } else {
                for (int i = 11; i <= 17; ++i) ins.bind(i);
            }
            ins.exec();
            ins.reset();
            const std::int64_t fid = m_db->getLastInsertRowid();
            for (const auto& [k, v] : f.metrics) {
                val.bind(1, fid);
                val.bind(2, k);
                val.bind(3, v);
                val.exec();
                val.reset();
            }
            for (const auto& [k, v] : f.labels) {
                lab.bind(1, fid);
                lab.bind(2, k);
                lab.bind(3, v);
                lab.exec();
                lab.reset();
            }
        }
        tx.commit();
        return {};
    });
}

Result<std::vector<Finding>> Db::load_findings(std::int64_t run_id) const {
    return guarded(m_path, [&]() -> Result<std::vector<Finding>> {
        SQLite::Statement st(*m_db,
                             "SELECT id, rule, title, severity, entity_kind, entity_name, message, speedup_pct, "
                             "share_pct, impact, cmp_metric, cmp_baseline, cmp_current, cmp_change_pct, "
                             "cmp_confidence_pct, cmp_first_bad_run, cmp_reference FROM findings WHERE run_id = ? "
                             "ORDER BY id");
        st.bind(1, run_id);
        SQLite::Statement val(*m_db, "SELECT name, value FROM finding_values WHERE finding_id = ?");
        SQLite::Statement lab(*m_db, "SELECT key, value FROM finding_labels WHERE finding_id = ?");
        std::vector<Finding> out;
        while (st.executeStep()) {
            Finding f;
            const std::int64_t fid = st.getColumn(0).getInt64();
            f.run_id = run_id;
            f.rule = st.getColumn(1).getString();
            f.title = st.getColumn(2).getString();
            f.severity = severity_from_string(st.getColumn(3).getString()).value_or(Severity::info);
            f.entity_kind = entity_kind_from_string(st.getColumn(4).getString()).value_or(EntityKind::kernel);
            f.entity_name = st.getColumn(5).getString();
            f.message = st.getColumn(6).getString();
            f.estimated_speedup_pct = nullable_double(st.getColumn(7));
            f.share_pct = nullable_double(st.getColumn(8));
            f.impact = nullable_double(st.getColumn(9));
            if (!st.getColumn(10).isNull())
                f.comparison = FindingComparison{st.getColumn(10).getString(),
                                                 st.getColumn(11).getDouble(),
                                                 st.getColumn(12).getDouble(),
                                                 st.getColumn(13).getDouble(),
                                                 nullable_double(st.getColumn(14)),
                                                 nullable_int(st.getColumn(15)),
                                                 st.getColumn(16).getString()};
            val.bind(1, fid);
            while (val.executeStep()) f.metrics[val.getColumn(0).getString()] = val.getColumn(1).getDouble();
            val.reset();
            lab.bind(1, fid);
            while (lab.executeStep()) f.labels[lab.getColumn(0).getString()] = lab.getColumn(1).getString();
            lab.reset();
            out.push_back(std::move(f));
        }
        return out;
    });
}

Result<std::vector<RunLabels>> Db::find_runs(const std::map<std::string, std::string>& must_match,
                                             std::int64_t before_id, std::size_t limit) const {
    return guarded(m_path, [&]() -> Result<std::vector<RunLabels>> {
        std::string sql = "SELECT r.id FROM runs r WHERE (? = 0 OR r.id < ?)";
        for (std::size_t i = 0; i < must_match.size(); ++i)
            sql += " AND EXISTS(SELECT 1 FROM run_labels l WHERE l.run_id = r.id AND l.key = ? AND l.value = ?)";
        sql += " ORDER BY r.id DESC";
        if (limit > 0) sql += " LIMIT ?";
        SQLite::Statement st(*m_db, sql);
        int i = 1;
        st.bind(i++, before_id);
        st.bind(i++, before_id);
        for (const auto& [k, v] : must_match) {
            st.bind(i++, k);
            st.bind(i++, v);
        }
        if (limit > 0) st.bind(i, static_cast<std::int64_t>(limit));
        std::vector<RunLabels> out;
        std::unordered_map<std::int64_t, std::size_t> index_of;
        while (st.executeStep()) {
            index_of[st.getColumn(0).getInt64()] = out.size();
            out.push_back({st.getColumn(0).getInt64(), {}});
        }
        if (out.empty()) return out;
        // The labels of all of them in one query over their id range (newest first: back is lowest).
        SQLite::Statement lab(*m_db, "SELECT run_id, key, value FROM run_labels WHERE run_id BETWEEN ? AND ?");
        lab.bind(1, out.back().id);
        lab.bind(2, out.front().id);
        while (lab.executeStep())
            if (auto it = index_of.find(lab.getColumn(0).getInt64()); it != index_of.end())
                out[it->second].labels[lab.getColumn(1).getString()] = lab.getColumn(2).getString();
        return out;
    });
}

Result<std::vector<SeriesPoint>> Db::metric_series(EntityKind kind, const std::string& name, const std::string& metric,
                                                   const std::vector<std::int64_t>& runs) const {
    return guarded(m_path, [&]() -> Result<std::vector<SeriesPoint>> {
        SQLite::Statement st(*m_db,
                             "SELECT m.value FROM runs r JOIN entities e ON e.run_id = COALESCE(r.content_run, r.id) "
                             "JOIN metrics m ON m.entity_id = e.id "
                             "WHERE r.id = ? AND e.kind = ? AND e.name = ? AND m.name = ? LIMIT 1");
        std::vector<SeriesPoint> out;
        for (std::int64_t run : runs) {
            st.bind(1, run);
            st.bind(2, std::string(to_string(kind)));
            st.bind(3, name);
            st.bind(4, metric);
            if (st.executeStep()) out.push_back({run, st.getColumn(0).getDouble()});
            st.reset();
        }
        return out;
    });
}

Result<bool> Db::pin_baseline(std::int64_t run_id, const std::string& comment) {
    return guarded(m_path, [&]() -> Result<bool> {
        SQLite::Statement exists(*m_db, "SELECT 1 FROM runs WHERE id = ?");
        exists.bind(1, run_id);
        if (!exists.executeStep()) return false;
        SQLite::Statement st(*m_db, "INSERT OR REPLACE INTO baseline_pins(run_id, pinned_at, comment) VALUES(?,?,?)");
        st.bind(1, run_id);
        st.bind(2, now_utc());
        st.bind(3, comment);
        st.exec();
        return true;
    });
}

Result<bool> Db::unpin_baseline(std::int64_t run_id) {
    return guarded(m_path, [&]() -> Result<bool> {
        SQLite::Statement st(*m_db, "DELETE FROM baseline_pins WHERE run_id = ?");
        st.bind(1, run_id);
        return st.exec() > 0;
    });
}

Result<std::vector<BaselinePin>> Db::baseline_pins() const {
    return guarded(m_path, [&]() -> Result<std::vector<BaselinePin>> {
        SQLite::Statement st(*m_db, "SELECT run_id, pinned_at, comment FROM baseline_pins ORDER BY pinned_at DESC, run_id DESC");
        std::vector<BaselinePin> out;
        while (st.executeStep())
            out.push_back({st.getColumn(0).getInt64(), st.getColumn(1).getString(), st.getColumn(2).getString()});
        return out;
    });
}

namespace {

constexpr const char* k_regression_columns =
    "id, rule, entity_kind, entity_name, series, metric, higher_is_worse, baseline, band_limit, opened_run, "
    "first_bad_run, last_run, inside_runs, resolved_run, resolution, status, last_bad_run, current, change_pct, "
    "comment, (SELECT ingested_at FROM runs WHERE runs.id = opened_run)";

RegressionState regression_from(SQLite::Statement& st) {
    RegressionState r;
    r.id = st.getColumn(0).getInt64();
    r.rule = st.getColumn(1).getString();
    r.entity_kind = entity_kind_from_string(st.getColumn(2).getString()).value_or(EntityKind::kernel);
    r.entity_name = st.getColumn(3).getString();
    r.series = st.getColumn(4).getString();
    r.metric = st.getColumn(5).getString();
    r.higher_is_worse = st.getColumn(6).getInt() != 0;
    r.baseline = st.getColumn(7).getDouble();
    r.band_limit = st.getColumn(8).getDouble();
    r.opened_run = st.getColumn(9).getInt64();
    r.first_bad_run = nullable_int(st.getColumn(10));
    r.last_run = st.getColumn(11).getInt64();
    r.inside_runs = st.getColumn(12).getInt64();
    r.resolved_run = nullable_int(st.getColumn(13));
    r.resolution = st.getColumn(14).getString();
    r.status = regression_status_from_string(st.getColumn(15).getString()).value_or(RegressionStatus::open);
    r.last_bad_run = nullable_int(st.getColumn(16)).value_or(r.opened_run);
    r.current = nullable_double(st.getColumn(17));
    r.change_pct = nullable_double(st.getColumn(18));
    r.comment = st.getColumn(19).getString();
    if (!st.getColumn(20).isNull()) r.since = st.getColumn(20).getString();
    return r;
}

}  // namespace

Result<std::vector<RegressionState>> Db::open_regressions(const std::string& series) const {
    return guarded(m_path, [&]() -> Result<std::vector<RegressionState>> {
        SQLite::Statement st(*m_db, fmt::format("SELECT {} FROM regressions WHERE series = ? AND resolved_run IS NULL "
                                                "ORDER BY id",
                                                k_regression_columns));
        st.bind(1, series);
        std::vector<RegressionState> out;
        while (st.executeStep()) out.push_back(regression_from(st));
        return out;
    });
}

Result<std::vector<RegressionState>> Db::regressions(bool open_only) const {
    return guarded(m_path, [&]() -> Result<std::vector<RegressionState>> {
        SQLite::Statement st(*m_db, fmt::format("SELECT {} FROM regressions {} ORDER BY id DESC", k_regression_columns,
                                                open_only ? "WHERE resolved_run IS NULL" : ""));
        std::vector<RegressionState> out;
        while (st.executeStep()) out.push_back(regression_from(st));
        return out;
    });
}

Result<std::vector<RegressionState>> Db::series_regressions(const std::string& series) const {
    return guarded(m_path, [&]() -> Result<std::vector<RegressionState>> {
        SQLite::Statement st(*m_db,
                             fmt::format("SELECT {} FROM regressions WHERE series = ? ORDER BY id", k_regression_columns));
        st.bind(1, series);
        std::vector<RegressionState> out;
        while (st.executeStep()) out.push_back(regression_from(st));
        return out;
    });
}

Result<std::optional<RegressionState>> Db::accept_regression(std::int64_t id, const std::string& comment) {
    return guarded(m_path, [&]() -> Result<std::optional<RegressionState>> {
        SQLite::Transaction tx(*m_db, SQLite::TransactionBehavior::IMMEDIATE);
        SQLite::Statement upd(*m_db,
                              "UPDATE regressions SET status = 'accepted', resolved_run = last_run, "
                              "resolution = 'accepted', comment = ? WHERE id = ? AND status = 'open'");
        upd.bind(1, comment);
        upd.bind(2, id);
        if (upd.exec() == 0) return std::optional<RegressionState>{};
        SQLite::Statement st(*m_db, fmt::format("SELECT {} FROM regressions WHERE id = ?", k_regression_columns));
        st.bind(1, id);
        std::optional<RegressionState> out;
        if (st.executeStep()) out = regression_from(st);
        tx.commit();
        return out;
    });
}

Result<void> Db::save_regressions(std::vector<RegressionState>& states) {
    return guarded(m_path, [&]() -> Result<void> {
        SQLite::Transaction tx(*m_db, SQLite::TransactionBehavior::IMMEDIATE);
        SQLite::Statement ins(*m_db,
                              "INSERT INTO regressions(rule, entity_kind, entity_name, series, metric, higher_is_worse, "
                              "baseline, band_limit, opened_run, first_bad_run, last_run, inside_runs, resolved_run, "
                              "resolution, status, last_bad_run, current, change_pct) "
                              "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
        // An accepted regression stays accepted: a run processed after the acceptance does not reopen it.
        SQLite::Statement upd(*m_db,
                              "UPDATE regressions SET last_run = ?, inside_runs = ?, resolved_run = ?, resolution = ?, "
                              "status = ?, last_bad_run = ? WHERE id = ? AND status = 'open'");
        for (RegressionState& r : states) {
            if (r.id != 0) {
                upd.bind(1, r.last_run);
                upd.bind(2, r.inside_runs);
                bind_optional_int(upd, 3, r.resolved_run);
                upd.bind(4, r.resolution);
                upd.bind(5, std::string(to_string(r.status)));
                upd.bind(6, r.last_bad_run);
                upd.bind(7, r.id);
                upd.exec();
                upd.reset();
                continue;
            }
            ins.bind(1, r.rule);
            ins.bind(2, std::string(to_string(r.entity_kind)));
            ins.bind(3, r.entity_name);
            ins.bind(4, r.series);
            ins.bind(5, r.metric);
            ins.bind(6, r.higher_is_worse ? 1 : 0);
            ins.bind(7, r.baseline);
            ins.bind(8, r.band_limit);
            ins.bind(9, r.opened_run);
            bind_optional_int(ins, 10, r.first_bad_run);
            ins.bind(11, r.last_run);
            ins.bind(12, r.inside_runs);
            bind_optional_int(ins, 13, r.resolved_run);
            ins.bind(14, r.resolution);
            ins.bind(15, std::string(to_string(r.status)));
            ins.bind(16, r.last_bad_run);
            bind_optional(ins, 17, r.current);
            bind_optional(ins, 18, r.change_pct);
            ins.exec();
            ins.reset();
            r.id = m_db->getLastInsertRowid();
        }
        tx.commit();
        return {};
    });
}

Result<void> Db::mark_processed(std::int64_t run_id) {
    return guarded(m_path, [&]() -> Result<void> {
        SQLite::Statement st(*m_db, "UPDATE runs SET processed_at = ? WHERE id = ?");
        st.bind(1, now_utc());
        st.bind(2, run_id);
        st.exec();
        return {};
    });
}

Result<bool> Db::is_processed(std::int64_t run_id) const {
    return guarded(m_path, [&]() -> Result<bool> {
        SQLite::Statement st(*m_db, "SELECT processed_at IS NOT NULL FROM runs WHERE id = ?");
        st.bind(1, run_id);
        return st.executeStep() && st.getColumn(0).getInt() != 0;
    });
}

Result<std::optional<FileMark>> Db::file_mark(const std::string& path) const {
    return guarded(m_path, [&]() -> Result<std::optional<FileMark>> {
        SQLite::Statement st(*m_db, "SELECT size, mtime_ns, sha256, run_id, error FROM watched_files WHERE path = ?");
        st.bind(1, path);
        if (!st.executeStep()) return std::optional<FileMark>{};
        FileMark m;
        m.path = path;
        m.size = st.getColumn(0).getInt64();
        m.mtime_ns = st.getColumn(1).getInt64();
        m.sha256 = st.getColumn(2).getString();
        if (!st.getColumn(3).isNull()) m.run_id = st.getColumn(3).getInt64();
        m.error = st.getColumn(4).getString();
        return std::optional<FileMark>{std::move(m)};
    });
}

Result<void> Db::save_file_mark(const FileMark& mark) {
    return guarded(m_path, [&]() -> Result<void> {
        SQLite::Statement st(*m_db,
                             "INSERT OR REPLACE INTO watched_files(path, size, mtime_ns, sha256, run_id, error, seen_at) "
                             "VALUES(?,?,?,?,?,?,?)");
        st.bind(1, mark.path);
        st.bind(2, mark.size);
        st.bind(3, mark.mtime_ns);
        st.bind(4, mark.sha256);
        bind_optional_int(st, 5, mark.run_id);
        st.bind(6, mark.error);
        st.bind(7, now_utc());
        st.exec();
        return {};
    });
}

Result<std::size_t> Db::complete_run(std::int64_t run_id, const std::vector<OutboxMessage>& messages) {
    return guarded(m_path, [&]() -> Result<std::size_t> {
        SQLite::Transaction tx(*m_db, SQLite::TransactionBehavior::IMMEDIATE);
        SQLite::Statement ins(*m_db,
                              "INSERT OR IGNORE INTO outbox(key, receiver, run_id, payload, next_attempt_ms, created_ms, "
                              "group_key, open) VALUES(?,?,?,?,?,?,?,?)");
        SQLite::Statement join(*m_db, "UPDATE outbox SET payload = ? WHERE id = ? AND open = 1 AND state = 'pending'");
        SQLite::Statement fp(*m_db,
                             "INSERT OR REPLACE INTO alert_fingerprints(receiver, fingerprint, last_ms) VALUES(?,?,?)");
        std::size_t added = 0;
        for (const OutboxMessage& m : messages) {
            bool joined = false;
            if (m.join_id > 0) {
                join.bind(1, m.payload);
                join.bind(2, m.join_id);
                joined = join.exec() > 0;
                join.reset();
            }
            if (!joined) {
                ins.bind(1, m.key);
                ins.bind(2, m.receiver);
                ins.bind(3, m.run_id);
                ins.bind(4, m.join_id > 0 ? m.own_payload : m.payload);
                ins.bind(5, m.next_attempt_ms);
                ins.bind(6, m.created_ms);
                ins.bind(7, m.group_key);
                ins.bind(8, m.open ? 1 : 0);
                added += static_cast<std::size_t>(ins.exec());
                ins.reset();
            }
            for (const std::string& f : m.fingerprints) {
                fp.bind(1, m.receiver);
                fp.bind(2, f);
                fp.bind(3, m.created_ms);
                fp.exec();
                fp.reset();
            }
        }
        if (auto marked = mark_processed(run_id); !marked) return std::unexpected(marked.error());
        tx.commit();
        return added;
    });
}

Result<std::optional<std::int64_t>> Db::fingerprint_sent_at(const std::string& receiver,
                                                          const std::string& fingerprint) const {
    return guarded(m_path, [&]() -> Result<std::optional<std::int64_t>> {
        SQLite::Statement st(*m_db, "SELECT last_ms FROM alert_fingerprints WHERE receiver = ? AND fingerprint = ?");
        st.bind(1, receiver);
        st.bind(2, fingerprint);
        if (!st.executeStep()) return std::optional<std::int64_t>{};
        return std::optional<std::int64_t>{st.getColumn(0).getInt64()};
    });
}

namespace {

OutboxMessage read_message(SQLite::Statement& st) {
    OutboxMessage m;
    m.id = st.getColumn(0).getInt64();
    m.key = st.getColumn(1).getString();
    m.receiver = st.getColumn(2).getString();
    m.run_id = st.getColumn(3).isNull() ? 0 : st.getColumn(3).getInt64();
    m.payload = st.getColumn(4).getString();
    m.state = message_state_from_string(st.getColumn(5).getString()).value_or(MessageState::pending);
    m.attempts = st.getColumn(6).getInt();
    m.next_attempt_ms = st.getColumn(7).getInt64();
    m.last_error = st.getColumn(8).getString();
    m.created_ms = st.getColumn(9).getInt64();
    m.group_key = st.getColumn(10).getString();
    m.open = st.getColumn(11).getInt() != 0;
    return m;
}

constexpr const char* k_outbox_columns =
    "id, key, receiver, run_id, payload, state, attempts, next_attempt_ms, last_error, created_ms, group_key, open";

}  // namespace

Result<std::vector<OutboxMessage>> Db::due_messages(std::int64_t now_ms, std::size_t limit) const {
    return guarded(m_path, [&]() -> Result<std::vector<OutboxMessage>> {
        SQLite::Statement st(*m_db, fmt::format("SELECT {} FROM outbox WHERE state = 'pending' AND next_attempt_ms <= ? "
                                                "ORDER BY next_attempt_ms, id LIMIT ?",
                                                k_outbox_columns));
        st.bind(1, now_ms);
        st.bind(2, static_cast<std::int64_t>(limit));
        std::vector<OutboxMessage> out;
        while (st.executeStep()) out.push_back(read_message(st));
        return out;
    });
}

Result<std::vector<OutboxMessage>> Db::outbox(std::size_t limit) const {
    return guarded(m_path, [&]() -> Result<std::vector<OutboxMessage>> {
        SQLite::Statement st(*m_db, fmt::format("SELECT {} FROM outbox ORDER BY id DESC LIMIT ?", k_outbox_columns));
        st.bind(1, static_cast<std::int64_t>(limit));
        std::vector<OutboxMessage> out;
        while (st.executeStep()) out.push_back(read_message(st));
        return out;
    });
}

Result<std::optional<std::int64_t>> Db::next_due_ms() const {
    return guarded(m_path, [&]() -> Result<std::optional<std::int64_t>> {
        SQLite::Statement st(*m_db, "SELECT min(next_attempt_ms) FROM outbox WHERE state = 'pending'");
        if (!st.executeStep() || st.getColumn(0).isNull()) return std::optional<std::int64_t>{};
        return std::optional<std::int64_t>{st.getColumn(0).getInt64()};
    });
}

std::string_view to_string(MessageState state) {
    switch (state) {
        case MessageState::pending: return "pending";
        case MessageState::sent: return "sent";
        case MessageState::failed: return "failed";
    }
    return "pending";
}

std::optional<MessageState> message_state_from_string(std::string_view text) {
    for (MessageState s : {MessageState::pending, MessageState::sent, MessageState::failed})
        if (to_string(s) == text) return s;
    return std::nullopt;
}

Result<void> Db::message_attempted(std::int64_t id, MessageState state, std::int64_t next_attempt_ms,
                                   const std::string& error, std::int64_t now_ms) {
    return guarded(m_path, [&]() -> Result<void> {
        SQLite::Statement st(*m_db,
                             "UPDATE outbox SET state = ?, attempts = attempts + 1, next_attempt_ms = ?, last_error = ?, "
                             "done_ms = CASE WHEN ? = 'pending' THEN NULL ELSE ? END WHERE id = ?");
        const std::string text(to_string(state));
        st.bind(1, text);
        st.bind(2, next_attempt_ms);
        st.bind(3, error);
        st.bind(4, text);
        st.bind(5, now_ms);
        st.bind(6, id);
        st.exec();
        return {};
    });
}

Result<std::optional<OutboxMessage>> Db::open_group_message(const std::string& receiver,
                                                            const std::string& group_key) const {
    return guarded(m_path, [&]() -> Result<std::optional<OutboxMessage>> {
        SQLite::Statement st(*m_db, fmt::format("SELECT {} FROM outbox WHERE receiver = ? AND group_key = ? AND "
                                                "state = 'pending' AND open = 1 ORDER BY id LIMIT 1",
                                                k_outbox_columns));
        st.bind(1, receiver);
        st.bind(2, group_key);
        if (!st.executeStep()) return std::optional<OutboxMessage>{};
        return std::optional<OutboxMessage>{read_message(st)};
    });
}

Result<std::optional<std::int64_t>> Db::group_last_ms(const std::string& receiver, const std::string& group_key) const {
    return guarded(m_path, [&]() -> Result<std::optional<std::int64_t>> {
        SQLite::Statement st(*m_db,
                             "SELECT max(CASE WHEN state = 'sent' THEN done_ms ELSE next_attempt_ms END) FROM outbox "
                             "WHERE receiver = ? AND group_key = ? AND open = 0 AND state IN ('sent', 'pending')");
        st.bind(1, receiver);
        st.bind(2, group_key);
        if (!st.executeStep() || st.getColumn(0).isNull()) return std::optional<std::int64_t>{};
        return std::optional<std::int64_t>{st.getColumn(0).getInt64()};
    });
}

Result<void> Db::close_message(std::int64_t id) {
    return guarded(m_path, [&]() -> Result<void> {
        SQLite::Statement st(*m_db, "UPDATE outbox SET open = 0 WHERE id = ?");
        st.bind(1, id);
        st.exec();
        return {};
    });
}

Result<std::int64_t> Db::outbox_depth() const {
    return guarded(m_path, [&]() -> Result<std::int64_t> {
        return m_db->execAndGet("SELECT count(*) FROM outbox WHERE state = 'pending'").getInt64();
    });
}

namespace {

// Matchers are stored as lines of KEY=VALUE (keys hold no '=' or newline).
std::string encode_matchers(const std::map<std::string, std::string>& matchers) {
    std::string out;
    for (const auto& [k, v] : matchers) out += k + "=" + v + "\n";
    return out;
}

std::map<std::string, std::string> decode_matchers(const std::string& text) {
    std::map<std::string, std::string> out;
    std::size_t at = 0;
    while (at < text.size()) {
        const auto nl = text.find('\n', at);
        const std::string line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
        if (const auto eq = line.find('='); eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
        if (nl == std::string::npos) break;
        at = nl + 1;
    }
    return out;
}

}  // namespace

Result<std::int64_t> Db::add_silence(const Silence& silence) {
    return guarded(m_path, [&]() -> Result<std::int64_t> {
        SQLite::Statement st(*m_db, "INSERT INTO silences(matchers, until_ms, comment, created_ms) VALUES(?,?,?,?)");
        st.bind(1, encode_matchers(silence.matchers));
        st.bind(2, silence.until_ms);
        st.bind(3, silence.comment);
        st.bind(4, silence.created_ms);
        st.exec();
        return m_db->getLastInsertRowid();
    });
}

Result<std::vector<Silence>> Db::silences(std::optional<std::int64_t> active_at) const {
    return guarded(m_path, [&]() -> Result<std::vector<Silence>> {
        SQLite::Statement st(*m_db, active_at ? "SELECT id, matchers, until_ms, comment, created_ms FROM silences "
                                                "WHERE until_ms > ? ORDER BY id"
                                              : "SELECT id, matchers, until_ms, comment, created_ms FROM silences "
                                                "ORDER BY id");
        if (active_at) st.bind(1, *active_at);
        std::vector<Silence> out;
        while (st.executeStep())
            out.push_back(Silence{st.getColumn(0).getInt64(), decode_matchers(st.getColumn(1).getString()),
                                  st.getColumn(2).getInt64(), st.getColumn(3).getString(), st.getColumn(4).getInt64()});
        return out;
    });
}

Result<bool> Db::expire_silence(std::int64_t id, std::int64_t now_ms) {
    return guarded(m_path, [&]() -> Result<bool> {
        SQLite::Statement st(*m_db, "UPDATE silences SET until_ms = min(until_ms, ?) WHERE id = ?");
        st.bind(1, now_ms);
        st.bind(2, id);
        return st.exec() > 0;
    });
}

}  // namespace perfwatch
