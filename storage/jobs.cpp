#include "storage/jobs.hpp"

#include <algorithm>
#include <charconv>

#include "storage/sql.hpp"

namespace perfwatch {

using sql::guarded;
using sql::in_list;
using sql::Statement;

Result<std::vector<UnjoinedRank>> Jobs::unjoined(std::size_t limit) const {
    return guarded(m_name, [&]() -> Result<std::vector<UnjoinedRank>> {
        Statement ids(*m_db,
                      "SELECT r.id FROM runs r JOIN run_labels l ON l.run_id = r.id AND l.key = 'rank' "
                      "JOIN run_labels w ON w.run_id = r.id AND w.key = 'world_size' "
                      "WHERE r.format <> 'job' AND NOT EXISTS (SELECT 1 FROM job_ranks j WHERE j.run_id = r.id) "
                      "ORDER BY r.id LIMIT ?");
        ids.bind(1, static_cast<std::int64_t>(limit));
        std::vector<UnjoinedRank> out;
        while (ids.step()) out.push_back({ids.column(0).as_int64(), {}});
        // Labels a page of runs at a time.
        for (std::size_t at = 0; at < out.size(); at += 500) {
            const std::size_t n = std::min<std::size_t>(500, out.size() - at);
            Statement labels(*m_db, "SELECT run_id, key, value FROM run_labels WHERE run_id IN " + in_list(n));
            for (std::size_t i = 0; i < n; ++i) labels.bind(static_cast<int>(i + 1), out[at + i].run_id);
            while (labels.step()) {
                const std::int64_t id = labels.column(0).as_int64();
                auto it = std::lower_bound(out.begin() + static_cast<std::ptrdiff_t>(at), out.end(), id,
                                           [](const UnjoinedRank& r, std::int64_t v) { return r.run_id < v; });
                if (it != out.end() && it->run_id == id) it->labels[labels.column(1).as_string()] = labels.column(2).as_string();
            }
        }
        return out;
    });
}

Result<void> Jobs::add(std::int64_t job_run, const std::vector<JobRank>& ranks) {
    return guarded(m_name, [&]() -> Result<void> {
        sql::Transaction tx(*m_db);
        Statement st(*m_db, "INSERT INTO job_ranks(job_run, rank_no, run_id) VALUES(?,?,?) ON CONFLICT DO NOTHING");
        for (const JobRank& r : ranks) {
            st.bind(1, job_run);
            st.bind(2, static_cast<std::int64_t>(r.rank));
            st.bind(3, r.run_id);
            st.exec();
            st.reset();
        }
        tx.commit();
        return {};
    });
}

Result<std::vector<StoredJob>> Jobs::read(const std::string& where, std::int64_t value, std::size_t limit) const {
    return guarded(m_name, [&]() -> Result<std::vector<StoredJob>> {
        Statement runs(*m_db, "SELECT id, source, ingested_at FROM runs WHERE format = 'job'" + where +
                                  " ORDER BY id DESC LIMIT ?");
        int next = 1;
        if (!where.empty()) runs.bind(next++, value);
        runs.bind(next, static_cast<std::int64_t>(limit));
        std::vector<StoredJob> out;
        while (runs.step())
            out.push_back({runs.column(0).as_int64(), runs.column(1).as_string(), runs.column(2).as_string(), {}, {}});
        if (out.empty()) return out;
        auto find = [&](std::int64_t id) {
            return std::find_if(out.begin(), out.end(), [&](const StoredJob& j) { return j.job_run == id; });
        };
        const std::string list = in_list(out.size());
        Statement labels(*m_db, "SELECT run_id, key, value FROM run_labels WHERE run_id IN " + list);
        Statement ranks(*m_db, "SELECT job_run, rank_no, run_id FROM job_ranks WHERE job_run IN " + list +
                                   " ORDER BY job_run, rank_no");
        for (std::size_t i = 0; i < out.size(); ++i) {
            labels.bind(static_cast<int>(i + 1), out[i].job_run);
            ranks.bind(static_cast<int>(i + 1), out[i].job_run);
        }
        while (labels.step())
            if (auto it = find(labels.column(0).as_int64()); it != out.end())
                it->labels[labels.column(1).as_string()] = labels.column(2).as_string();
        while (ranks.step())
            if (auto it = find(ranks.column(0).as_int64()); it != out.end())
                it->ranks.push_back({static_cast<int>(ranks.column(1).as_int64()), ranks.column(2).as_int64()});
        return out;
    });
}

Result<std::vector<StoredJob>> Jobs::list(std::size_t limit) const { return read("", 0, limit); }

Result<StoredJob> Jobs::get(std::int64_t job_run) const {
    auto jobs = read(" AND id = ?", job_run, 1);
    if (!jobs) return std::unexpected(jobs.error());
    if (jobs->empty()) return StoredJob{};
    return std::move(jobs->front());
}

}  // namespace perfwatch
