#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <iomanip>
#include <sstream>
#include <map>

#include "storage/db.hpp"
#include "storage/sql.hpp"

namespace perfwatch {

using sql::guarded;
using sql::query_int;
using sql::Statement;
using sql::Transaction;

namespace {

// `now` (ISO 8601 UTC), or the clock when it is empty.
std::chrono::sys_seconds now_or_clock(const std::string& now) {
    if (!now.empty()) {
        std::tm tm{};
        std::istringstream in(now);
        in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
        if (!in.fail()) return std::chrono::sys_seconds(std::chrono::seconds(::timegm(&tm)));
    }
    return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
}

// A time in the format runs.ingested_at uses.
std::string iso(std::chrono::sys_seconds t) { return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", t); }

// Binds `values` to `st` from the first parameter on and runs it; returns the rows changed.
template <typename... V>
std::int64_t run(Statement& st, const V&... values) {
    st.reset();
    int index = 1;
    (st.bind(index++, values), ...);
    return st.exec();
}

std::vector<std::int64_t> ids(Statement& st) {
    std::vector<std::int64_t> out;
    while (st.step()) out.push_back(st.column(0).as_int64());
    return out;
}

}  // namespace

Result<std::int64_t> Db::bytes_in_use() const {
    return guarded(m_path, [&]() -> Result<std::int64_t> {
        if (m_db->dialect() == sql::Dialect::postgresql)
            return query_int(*m_db, "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                                    "WHERE c.relkind = 'r' AND n.nspname = current_schema()");
        const std::int64_t pages = query_int(*m_db, "PRAGMA page_count");
        const std::int64_t free_pages = query_int(*m_db, "PRAGMA freelist_count");
        const std::int64_t size = query_int(*m_db, "PRAGMA page_size");
        return (pages - free_pages) * size;
    });
}

Result<void> Db::vacuum() {
    return guarded(m_path, [&]() -> Result<void> {
        // PostgreSQL: VACUUM FULL rewrites each table compactly, as SQLite's VACUUM does the file.
        m_db->exec(m_db->dialect() == sql::Dialect::postgresql ? "VACUUM FULL" : "VACUUM");
        return {};
    });
}

Result<PruneReport> Db::prune(const RetentionPolicy& policy, bool dry_run) {
    PruneReport report;
    auto before = bytes_in_use();
    if (!before) return std::unexpected(before.error());
    report.bytes_before = *before;
    auto done = guarded(m_path, [&]() -> Result<void> {
        std::set<std::int64_t> pinned;
        {
            Statement st(*m_db, "SELECT run_id FROM baseline_pins");
            for (std::int64_t id : ids(st)) pinned.insert(id);
        }
        const auto is_kept = [&](std::int64_t id) { return pinned.contains(id) || policy.keep.contains(id); };

        const std::chrono::sys_seconds now = now_or_clock(policy.now);
        if (policy.runs_days) {
            const std::chrono::sys_seconds limit = now - std::chrono::days(*policy.runs_days);
            Statement old(*m_db, "SELECT id FROM runs WHERE ingested_at < ? ORDER BY id DESC");
            old.bind(1, iso(limit));
            std::vector<std::int64_t> doomed;
            for (std::int64_t id : ids(old)) {
                if (is_kept(id)) ++report.kept_protected;
                else doomed.push_back(id);
            }
            report.runs = doomed.size();
            Statement heir_of(*m_db, "SELECT min(id) FROM runs WHERE content_run = ?");
            Statement move(*m_db, "UPDATE entities SET run_id = ? WHERE run_id = ?");
            Statement own(*m_db, "UPDATE runs SET content_run = NULL WHERE id = ?");
            Statement rest(*m_db, "UPDATE runs SET content_run = ? WHERE content_run = ?");
            Statement del(*m_db, "DELETE FROM runs WHERE id = ?");
            // Newest first: a run sharing another's entities goes before the run that owns them.
            for (std::size_t at = 0; !dry_run && at < doomed.size(); at += policy.batch_runs) {
                Transaction tx(*m_db);
                for (std::size_t i = at; i < std::min(doomed.size(), at + policy.batch_runs); ++i) {
                    const std::int64_t id = doomed[i];
                    // The oldest later run sharing this run's entities takes them over.
                    heir_of.reset();
                    heir_of.bind(1, id);
                    if (heir_of.step() && !heir_of.column(0).is_null()) {
                        const std::int64_t heir = heir_of.column(0).as_int64();
                        run(move, heir, id);
                        run(own, heir);
                        run(rest, heir, id);
                    }
                    run(del, id);
                }
                tx.commit();
            }
            const std::int64_t limit_ms = std::chrono::duration_cast<std::chrono::milliseconds>(limit.time_since_epoch()).count();
            const char* done_messages = "FROM outbox WHERE state IN ('sent', 'failed') AND done_ms < ?";
            Statement messages(*m_db, fmt::format("{} {}", dry_run ? "SELECT count(*)" : "DELETE", done_messages));
            messages.bind(1, limit_ms);
            if (dry_run) {
                messages.step();
                report.messages = static_cast<std::size_t>(messages.column(0).as_int64());
            } else {
                report.messages = static_cast<std::size_t>(messages.exec());
            }
        }

        if (policy.samples_days) {
            // Samples belong to the entities' owner run; they go once every run using them is old
            // and none of those runs is kept.
            const std::string limit = iso(now - std::chrono::days(*policy.samples_days));
            struct Owner {
                std::string newest;
                bool kept = false;
            };
            std::map<std::int64_t, Owner> owners;
            Statement users(*m_db, "SELECT COALESCE(content_run, id), id, ingested_at FROM runs");
            while (users.step()) {
                Owner& o = owners[users.column(0).as_int64()];
                o.newest = std::max(o.newest, users.column(2).as_string());
                o.kept = o.kept || is_kept(users.column(1).as_int64());
            }
            std::vector<std::int64_t> stale;
            for (const auto& [owner, o] : owners)
                if (o.newest < limit && !o.kept) stale.push_back(owner);
            Statement count(*m_db, "SELECT count(DISTINCT s.entity_id) FROM entity_samples s "
                                           "JOIN entities e ON e.id = s.entity_id WHERE e.run_id = ?");
            Statement drop(*m_db, "DELETE FROM entity_samples WHERE entity_id IN "
                                          "(SELECT id FROM entities WHERE run_id = ?)");
            for (std::size_t at = 0; at < stale.size(); at += policy.batch_runs) {
                std::optional<Transaction> tx;
                if (!dry_run) tx.emplace(*m_db);
                for (std::size_t i = at; i < std::min(stale.size(), at + policy.batch_runs); ++i) {
                    count.reset();
                    count.bind(1, stale[i]);
                    count.step();
                    report.sample_sets += static_cast<std::size_t>(count.column(0).as_int64());
                    if (!dry_run) run(drop, stale[i]);
                }
                if (tx) tx->commit();
            }
        }
        return {};
    });
    if (!done) return std::unexpected(done.error());
    auto after = bytes_in_use();
    if (!after) return std::unexpected(after.error());
    report.bytes_after = *after;
    return report;
}

}  // namespace perfwatch
