#include "storage/db.hpp"
#include "storage/pg_connection.hpp"
#include "storage/schema.hpp"
#include "storage/sql.hpp"
#include "storage/sqlite_connection.hpp"

#include <sys/statvfs.h>
#include <filesystem>
#include <unistd.h>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <span>
#include <unordered_map>

namespace perfwatch {

using sql::guarded;
using sql::now_utc;
using sql::query_int;
using sql::Statement;
using sql::Transaction;

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

Db::Db(std::unique_ptr<sql::Connection> db, std::string path)
    : m_db(std::move(db)),
      m_path(std::move(path)),
      m_outbox(*m_db, m_path),
      m_history(*m_db, m_path),
      m_browse(*m_db, m_path),
      m_regressions(*m_db, m_path),
      m_pins(*m_db, m_path),
      m_silences(*m_db, m_path),
      m_file_marks(*m_db, m_path),
      m_jobs(*m_db, m_path) {}
Db::Db(Db&&) noexcept = default;
Db& Db::operator=(Db&&) noexcept = default;
Db::~Db() = default;

Result<Db> Db::open(const DbLocation& where) {
    const bool server = sql::is_postgresql_uri(where.location);
    const std::string name = server ? sql::redact_uri(where.location) : where.location;
    try {
        Db result(server ? sql::open_postgresql(where.location, where.password_file) : sql::open_sqlite(where.location),
                  name);
        if (auto r = migrate(*result.m_db, name); !r) return std::unexpected(r.error());
        return result;
    } catch (const sql::SqlError& e) {
        Error error{name, 0, 0, false,
                    fmt::format("cannot open database: {}{}", e.what(), server ? "" : write_access_hint(where.location))};
        error.kind = ErrorKind::database;
        return std::unexpected(std::move(error));
    }
}

Result<Db> Db::open(const std::string& location) {
    const char* file = std::getenv("PERFWATCH_DB_PASSWORD_FILE");
    return open(DbLocation{location, file != nullptr ? file : ""});
}

std::vector<std::int64_t> Db::allocate_entity_ids(std::size_t count) {
    std::vector<std::int64_t> ids;
    ids.reserve(count);
    if (count == 0) return ids;
    if (m_db->dialect() == sql::Dialect::postgresql) {
        // From the identity's sequence: unique across the fleet's concurrent writers.
        Statement st(*m_db, "SELECT nextval(pg_get_serial_sequence('entities', 'id')) FROM generate_series(1, ?)");
        st.bind(1, static_cast<std::int64_t>(count));
        while (st.step()) ids.push_back(st.column(0).as_int64());
        return ids;
    }
    // SQLite: the writer holds the write lock (BEGIN IMMEDIATE), so the ids after the highest are free.
    const std::int64_t top = query_int(*m_db, "SELECT COALESCE(max(id), 0) FROM entities");
    for (std::size_t i = 1; i <= count; ++i) ids.push_back(top + static_cast<std::int64_t>(i));
    return ids;
}

int Db::schema_version() const { return perfwatch::schema_version(*m_db); }

bool Db::is_postgresql() const { return m_db->dialect() == sql::Dialect::postgresql; }

std::uint64_t Db::statements_run() const { return m_db->statements_run(); }


std::int64_t Db::count_runs() const {
    auto count = guarded(m_path, [&]() -> Result<std::int64_t> { return query_int(*m_db, "SELECT count(*) FROM runs"); });
    return count ? *count : -1;
}

Result<StoreOutcome> Db::store(const RunBatch& batch) {
    return guarded(m_path, [&]() -> Result<StoreOutcome> {
        Transaction tx(*m_db);
        // Two servers storing the same content at once: the second waits for the first, then
        // finds it (SQLite's IMMEDIATE transaction already serialises writers).
        if (m_db->dialect() == sql::Dialect::postgresql) {
            Statement lock(*m_db, "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))");
            lock.bind(1, batch.sha256);
            lock.step();
        }
        const std::string key = labels_key(batch.labels);
        Statement same(*m_db, "SELECT id FROM runs WHERE sha256 = ? AND labels_key = ?");
        same.bind(1, batch.sha256);
        same.bind(2, key);
        if (same.step()) return StoreOutcome{same.column(0).as_int64(), false, std::nullopt};
        std::optional<std::int64_t> content;
        Statement stored(*m_db, "SELECT COALESCE(content_run, id) FROM runs WHERE sha256 = ? ORDER BY id LIMIT 1");
        stored.bind(1, batch.sha256);
        if (stored.step()) content = stored.column(0).as_int64();

        Statement run_st(*m_db,
                                 "INSERT INTO runs(source, sha256, format, format_detail, tool_version, "
                                 "captured_at, ingested_at, content_run, labels_key) VALUES(?,?,?,?,?,?,?,?,?) RETURNING id");
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
        const std::int64_t run_id = run_st.insert_returning_id();

        Statement label_st(*m_db, "INSERT INTO run_labels(run_id, key, value) VALUES(?,?,?)");
        for (const auto& [k, v] : batch.labels) {
            label_st.bind(1, run_id);
            label_st.bind(2, k);
            label_st.bind(3, v);
            label_st.exec();
            label_st.reset();
        }
        Statement note_st(*m_db, "INSERT INTO run_notes(run_id, ordinal, text) VALUES(?,?,?)");
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

        // Rows go many per statement (one round trip each on PostgreSQL), the entity ids drawn first
        // so a row can name its entity and parent before they are sent.
        const std::vector<std::int64_t> ids = allocate_entity_ids(batch.entities.size());
        sql::BatchInsert entities(*m_db, "entities", {"id", "run_id", "ordinal", "parent_id", "kind", "name"});
        sql::BatchInsert attributes(*m_db, "entity_attributes", {"entity_id", "key", "value"});
        sql::BatchInsert metrics(*m_db, "metrics", {"entity_id", "name", "value", "unit", "tool_name", "tool_unit"});
        sql::BatchInsert samples(*m_db, "entity_samples", {"entity_id", "metric", "data"}, 16);
        sql::BatchInsert tool_findings(*m_db, "tool_findings", {"entity_id", "rule", "type", "section", "text",
                                                                "speedup_type", "speedup_pct"});
        for (std::size_t i = 0; i < batch.entities.size(); ++i) {
            const Entity& e = batch.entities[i];
            const std::int64_t eid = ids[i];
            std::optional<std::int64_t> parent;
            if (e.parent >= 0 && static_cast<std::size_t>(e.parent) < i) parent = ids[static_cast<std::size_t>(e.parent)];
            entities.add(eid, run_id, static_cast<std::int64_t>(i), parent, std::string(to_string(e.kind)), e.name);
        }
        entities.flush();
        for (std::size_t i = 0; i < batch.entities.size(); ++i) {
            const Entity& e = batch.entities[i];
            const std::int64_t eid = ids[i];
            for (const auto& [k, v] : e.attributes) attributes.add(eid, k, v);
            for (const Metric& m : e.metrics) metrics.add(eid, m.name(), m.value, m.unit(), m.tool_name(), m.tool_unit());
            for (const auto& [name, values] : e.samples)
                samples.add(eid, name,
                            sql::Blob{std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double))});
            for (const ToolFinding& f : e.tool_findings)
                tool_findings.add(eid, f.rule, f.type, f.section, f.text, f.speedup_type, f.speedup_pct);
        }
        attributes.flush();
        metrics.flush();
        samples.flush();
        tool_findings.flush();
        tx.commit();
        return StoreOutcome{run_id, true, std::nullopt};
    });
}

Result<std::optional<StoredRun>> Db::load(std::int64_t run_id) const {
    auto runs = m_history.load_runs({run_id});
    if (!runs) return std::unexpected(runs.error());
    if (runs->empty()) return std::optional<StoredRun>{};
    return std::optional<StoredRun>(std::move(runs->front()));
}

Result<std::vector<RunSummary>> Db::list_runs() const {
    return guarded(m_path, [&]() -> Result<std::vector<RunSummary>> {
        Statement st(*m_db,
                             "SELECT r.id, r.source, r.format, r.ingested_at, "
                             "(SELECT count(*) FROM entities e WHERE e.run_id = COALESCE(r.content_run, r.id) AND e.kind = 'kernel') "
                             "FROM runs r ORDER BY r.id");
        std::vector<RunSummary> out;
        while (st.step())
            out.push_back({st.column(0).as_int64(), st.column(1).as_string(), st.column(2).as_string(),
                           st.column(3).as_string(), st.column(4).as_int64()});
        return out;
    });
}

Result<void> Db::store_findings(std::int64_t run_id, const std::vector<Finding>& findings) {
    return guarded(m_path, [&]() -> Result<void> {
        Transaction tx(*m_db);
        Statement del(*m_db, "DELETE FROM findings WHERE run_id = ?");
        del.bind(1, run_id);
        del.exec();
        Statement ins(*m_db,
                              "INSERT INTO findings(run_id, rule, title, severity, entity_kind, entity_name, "
                              "message, speedup_pct, share_pct, impact, cmp_metric, cmp_baseline, cmp_current, "
                              "cmp_change_pct, cmp_confidence_pct, cmp_first_bad_run, cmp_reference, cmp_last_good_run, "
                              "cmp_last_good_value, cmp_last_good_commit, cmp_first_bad_value, cmp_first_bad_commit) "
                              "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id");
        Statement val(*m_db, "INSERT INTO finding_values(finding_id, name, value) VALUES(?,?,?)");
        Statement lab(*m_db, "INSERT INTO finding_labels(finding_id, key, value) VALUES(?,?,?)");
        for (const Finding& f : findings) {
            ins.bind(1, run_id);
            ins.bind(2, f.rule);
            ins.bind(3, f.title);
            ins.bind(4, std::string(to_string(f.severity)));
            ins.bind(5, std::string(to_string(f.entity_kind)));
            ins.bind(6, f.entity_name);
            ins.bind(7, f.message);
            ins.bind(8, f.estimated_speedup_pct);
            ins.bind(9, f.share_pct);
            ins.bind(10, f.impact);
            if (const auto& c = f.comparison) {
                ins.bind(11, c->metric);
                ins.bind(12, c->baseline);
                ins.bind(13, c->current);
                ins.bind(14, c->change_pct);
                ins.bind(15, c->confidence_pct);
                ins.bind(16, c->first_bad_run);
                ins.bind(17, c->reference);
                ins.bind(18, c->last_good_run);
                ins.bind(19, c->last_good_value);
                ins.bind(20, c->last_good_commit);
                ins.bind(21, c->first_bad_value);
                ins.bind(22, c->first_bad_commit);
            } else {
                for (int i = 11; i <= 22; ++i) ins.bind(i);
            }
            const std::int64_t fid = ins.insert_returning_id();
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
        Statement st(*m_db,
                             "SELECT id, rule, title, severity, entity_kind, entity_name, message, speedup_pct, "
                             "share_pct, impact, cmp_metric, cmp_baseline, cmp_current, cmp_change_pct, "
                             "cmp_confidence_pct, cmp_first_bad_run, cmp_reference, cmp_last_good_run, cmp_last_good_value, "
                             "cmp_last_good_commit, cmp_first_bad_value, cmp_first_bad_commit FROM findings WHERE run_id = ? "
                             "ORDER BY id");
        st.bind(1, run_id);
        Statement val(*m_db, "SELECT name, value FROM finding_values WHERE finding_id = ?");
        Statement lab(*m_db, "SELECT key, value FROM finding_labels WHERE finding_id = ?");
        std::vector<Finding> out;
        while (st.step()) {
            Finding f;
            const std::int64_t fid = st.column(0).as_int64();
            f.run_id = run_id;
            f.rule = st.column(1).as_string();
            f.title = st.column(2).as_string();
            f.severity = severity_from_string(st.column(3).as_string()).value_or(Severity::info);
            f.entity_kind = entity_kind_from_string(st.column(4).as_string()).value_or(EntityKind::kernel);
            f.entity_name = st.column(5).as_string();
            f.message = st.column(6).as_string();
            f.estimated_speedup_pct = st.column(7).as_optional_double();
            f.share_pct = st.column(8).as_optional_double();
            f.impact = st.column(9).as_optional_double();
            if (!st.column(10).is_null()) {
                FindingComparison c;
                c.metric = st.column(10).as_string();
                c.baseline = st.column(11).as_double();
                c.current = st.column(12).as_double();
                c.change_pct = st.column(13).as_double();
                c.confidence_pct = st.column(14).as_optional_double();
                c.first_bad_run = st.column(15).as_optional_int64();
                c.reference = st.column(16).as_string();
                c.last_good_run = st.column(17).as_optional_int64();
                c.last_good_value = st.column(18).as_optional_double();
                c.last_good_commit = st.column(19).is_null() ? "" : st.column(19).as_string();
                c.first_bad_value = st.column(20).as_optional_double();
                c.first_bad_commit = st.column(21).is_null() ? "" : st.column(21).as_string();
                f.comparison = std::move(c);
            }
            val.bind(1, fid);
            while (val.step()) f.metrics[val.column(0).as_string()] = val.column(1).as_double();
            val.reset();
            lab.bind(1, fid);
            while (lab.step()) f.labels[lab.column(0).as_string()] = lab.column(1).as_string();
            lab.reset();
            out.push_back(std::move(f));
        }
        return out;
    });
}

Result<void> Db::mark_processed(std::int64_t run_id) {
    return guarded(m_path, [&]() -> Result<void> {
        Statement st(*m_db, "UPDATE runs SET processed_at = ? WHERE id = ?");
        st.bind(1, now_utc());
        st.bind(2, run_id);
        st.exec();
        return {};
    });
}

Result<bool> Db::is_processed(std::int64_t run_id) const {
    return guarded(m_path, [&]() -> Result<bool> {
        Statement st(*m_db, "SELECT CASE WHEN processed_at IS NULL THEN 0 ELSE 1 END FROM runs WHERE id = ?");
        st.bind(1, run_id);
        return st.step() && st.column(0).as_int() != 0;
    });
}

Result<Db::RunClaim> Db::claim_run(std::int64_t run_id, const std::string& owner, std::int64_t until_ms,
                                   std::int64_t now_ms) {
    return guarded(m_path, [&]() -> Result<RunClaim> {
        // One statement: two daemons claiming at once are serialised on the row, and the second
        // finds the first's claim.
        Statement st(*m_db, "UPDATE runs SET claimed_by = ?, claim_until_ms = ? WHERE id = ? AND processed_at IS NULL "
                            "AND (claim_until_ms IS NULL OR claim_until_ms <= ? OR claimed_by = ?)");
        st.bind(1, owner);
        st.bind(2, until_ms);
        st.bind(3, run_id);
        st.bind(4, now_ms);
        st.bind(5, owner);
        if (st.exec() > 0) return RunClaim::claimed;
        auto processed = is_processed(run_id);
        if (!processed) return std::unexpected(processed.error());
        return *processed ? RunClaim::processed : RunClaim::held;
    });
}

Result<std::size_t> Db::complete_run(std::int64_t run_id, const std::vector<OutboxMessage>& messages) {
    return guarded(m_path, [&]() -> Result<std::size_t> {
        Transaction tx(*m_db);
        const std::size_t added = m_outbox.enqueue(messages);
        if (auto marked = mark_processed(run_id); !marked) return std::unexpected(marked.error());
        tx.commit();
        return added;
    });
}

}  // namespace perfwatch
