#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <iomanip>
#include <sstream>
#include <map>

#include "storage/db.hpp"
#include "storage/sqlite_guard.hpp"

namespace perfwatch {

namespace {

// `now` (ISO 8601 UTC, or the clock when empty) minus `days`, in the format runs.ingested_at uses.
std::string cutoff(const std::string& now, int days) {
    std::chrono::sys_seconds t = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
    if (!now.empty()) {
        std::tm tm{};
        std::istringstream in(now);
        in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
        if (!in.fail()) t = std::chrono::sys_seconds(std::chrono::seconds(::timegm(&tm)));
    }
    return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", t - std::chrono::days(days));
}

std::vector<std::int64_t> ids(SQLite::Statement& st) {
    std::vector<std::int64_t> out;
    while (st.executeStep()) out.push_back(st.getColumn(0).getInt64());
    return out;
}

}  // namespace

Result<std::int64_t> Db::bytes_in_use() const {
    return guarded(m_path, [&]() -> Result<std::int64_t> {
        const std::int64_t pages = m_db->execAndGet("PRAGMA page_count").getInt64();
        const std::int64_t free_pages = m_db->execAndGet("PRAGMA freelist_count").getInt64();
        const std::int64_t size = m_db->execAndGet("PRAGMA page_size").getInt64();
        return (pages - free_pages) * size;
    });
}

Result<void> Db::vacuum() {
    return guarded(m_path, [&]() -> Result<void> {
        m_db->exec("VACUUM");
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
            SQLite::Statement st(*m_db, "SELECT run_id FROM baseline_pins");
            for (std::int64_t id : ids(st)) pinned.insert(id);
        }
        const auto is_kept = [&](std::int64_t id) { return pinned.contains(id) || policy.keep.contains(id); };

        if (policy.runs_days) {
            const std::string limit = cutoff(policy.now, *policy.runs_days);
            SQLite::Statement old(*m_db, "SELECT id FROM runs WHERE ingested_at < ? ORDER BY id DESC");
            old.bind(1, limit);
            std::vector<std::int64_t> doomed;
            for (std::int64_t id : ids(old)) {
                if (is_kept(id)) ++report.kept_protected;
                else doomed.push_back(id);
            }
            report.runs = doomed.size();
            // Newest first: a run sharing another's entities goes before the run that owns them.
            for (std::size_t at = 0; !dry_run && at < doomed.size(); at += policy.batch_runs) {
                SQLite::Transaction tx(*m_db, SQLite::TransactionBehavior::IMMEDIATE);
                const std::size_t end = std::min(doomed.size(), at + policy.batch_runs);
                for (std::size_t i = at; i < end; ++i) {
                    const std::int64_t id = doomed[i];
                    // Later runs that share this run's entities take them over.
                    SQLite::Statement heirs(*m_db, "SELECT id FROM runs WHERE content_run = ? ORDER BY id");
                    heirs.bind(1, id);
                    const auto sharing = ids(heirs);
                    if (!sharing.empty()) {
                        const std::int64_t heir = sharing.front();
                        SQLite::Statement move(*m_db, "UPDATE entities SET run_id = ? WHERE run_id = ?");
                        move.bind(1, heir);
                        move.bind(2, id);
                        move.exec();
                        SQLite::Statement own(*m_db, "UPDATE runs SET content_run = NULL WHERE id = ?");
                        own.bind(1, heir);
                        own.exec();
                        SQLite::Statement rest(*m_db, "UPDATE runs SET content_run = ? WHERE content_run = ?");
                        rest.bind(1, heir);
                        rest.bind(2, id);
                        rest.exec();
                    }
                    SQLite::Statement del(*m_db, "DELETE FROM runs WHERE id = ?");
                    del.bind(1, id);
                    del.exec();
                }
                tx.commit();
            }
            const std::int64_t limit_ms =
                std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
                    .count() -
                std::int64_t{*policy.runs_days} * 86'400'000;
            SQLite::Statement messages(*m_db, dry_run ? "SELECT count(*) FROM outbox WHERE state IN ('sent', 'failed') "
                                                        "AND done_ms < ?"
                                                      : "DELETE FROM outbox WHERE state IN ('sent', 'failed') AND done_ms < ?");
            messages.bind(1, limit_ms);
            if (dry_run) {
                messages.executeStep();
                report.messages = static_cast<std::size_t>(messages.getColumn(0).getInt64());
            } else {
                report.messages = static_cast<std::size_t>(messages.exec());
            }
        }

        if (policy.samples_days) {
            // Samples belong to the entities' owner run; they go once every run using them is old.
            const std::string limit = cutoff(policy.now, *policy.samples_days);
            SQLite::Statement owners(*m_db,
                                     "SELECT COALESCE(content_run, id) AS owner, max(ingested_at), group_concat(id) "
                                     "FROM runs GROUP BY owner ORDER BY owner");
            std::vector<std::int64_t> stale;
            while (owners.executeStep()) {
                if (owners.getColumn(1).getString() >= limit) continue;
                bool kept = false;
                const std::string users = owners.getColumn(2).getString();
                std::size_t start = 0;
                while (!kept && start < users.size()) {
                    std::size_t comma = users.find(',', start);
                    if (comma == std::string::npos) comma = users.size();
                    kept = is_kept(std::stoll(users.substr(start, comma - start)));
                    start = comma + 1;
                }
                if (!kept) stale.push_back(owners.getColumn(0).getInt64());
            }
            for (std::size_t at = 0; at < stale.size(); at += policy.batch_runs) {
                const std::size_t end = std::min(stale.size(), at + policy.batch_runs);
                std::optional<SQLite::Transaction> tx;
                if (!dry_run) tx.emplace(*m_db, SQLite::TransactionBehavior::IMMEDIATE);
                for (std::size_t i = at; i < end; ++i) {
                    SQLite::Statement count(*m_db, "SELECT count(DISTINCT s.entity_id) FROM entity_samples s "
                                                   "JOIN entities e ON e.id = s.entity_id WHERE e.run_id = ?");
                    count.bind(1, stale[i]);
                    count.executeStep();
                    report.sample_sets += static_cast<std::size_t>(count.getColumn(0).getInt64());
                    if (dry_run) continue;
                    SQLite::Statement del(*m_db, "DELETE FROM entity_samples WHERE entity_id IN "
                                                 "(SELECT id FROM entities WHERE run_id = ?)");
                    del.bind(1, stale[i]);
                    del.exec();
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
