#include "storage/browse.hpp"

#include <algorithm>
#include <cctype>

#include "storage/sql.hpp"

namespace perfwatch {

using sql::guarded;
using sql::in_list;
using sql::Statement;

namespace {

constexpr std::size_t k_batch = 500;

}  // namespace

Result<std::pair<std::int64_t, std::int64_t>> BrowseReads::run_count_and_newest() const {
    return guarded(m_name, [&]() -> Result<std::pair<std::int64_t, std::int64_t>> {
        Statement st(*m_db, "SELECT count(*), COALESCE(max(id), 0) FROM runs");
        st.step();
        return std::pair{st.column(0).as_int64(), st.column(1).as_int64()};
    });
}

Result<std::vector<RunIndexRow>> BrowseReads::run_index(std::int64_t after_id) const {
    return guarded(m_name, [&]() -> Result<std::vector<RunIndexRow>> {
        Statement st(*m_db, "SELECT id, labels_key, ingested_at, format, source FROM runs WHERE id > ? ORDER BY id");
        st.bind(1, after_id);
        std::vector<RunIndexRow> out;
        while (st.step())
            out.push_back({st.column(0).as_int64(), st.column(1).as_string(), st.column(2).as_string(),
                           st.column(3).as_string(), st.column(4).as_string()});
        return out;
    });
}

Result<std::map<std::int64_t, RunValue>> BrowseReads::metric_values(EntityKind kind,
                                                                     const std::optional<std::string>& name,
                                                                     const std::string& metric,
                                                                     const std::vector<std::int64_t>& runs) const {
    return guarded(m_name, [&]() -> Result<std::map<std::int64_t, RunValue>> {
        std::map<std::int64_t, RunValue> out;
        for (std::size_t at = 0; at < runs.size(); at += k_batch) {
            const std::size_t n = std::min(k_batch, runs.size() - at);
            // The first matching entity of each run (lowest ordinal) gives the value.
            Statement st(*m_db,
                         "SELECT r.id, v.value, l.value FROM runs r "
                         "JOIN entities e ON e.run_id = COALESCE(r.content_run, r.id) "
                         "JOIN metrics v ON v.entity_id = e.id AND v.name = ? "
                         "LEFT JOIN metrics l ON l.entity_id = e.id AND l.name = 'launches' "
                         "WHERE r.id IN " + in_list(n) + " AND e.kind = ?" + (name ? " AND e.name = ?" : "") +
                             " ORDER BY r.id, e.ordinal");
            int next = 1;
            st.bind(next++, metric);
            for (std::size_t i = 0; i < n; ++i) st.bind(next++, runs[at + i]);
            st.bind(next++, std::string(to_string(kind)));
            if (name) st.bind(next++, *name);
            while (st.step()) {
                RunValue v{st.column(1).as_double(), {}};
                if (!st.column(2).is_null()) v.launches = st.column(2).as_double();
                out.emplace(st.column(0).as_int64(), v);  // the first entity of the run wins
            }
        }
        return out;
    });
}

Result<std::map<std::int64_t, std::vector<double>>> BrowseReads::samples(EntityKind kind, const std::string& name,
                                                                         const std::string& metric,
                                                                         const std::vector<std::int64_t>& runs) const {
    return guarded(m_name, [&]() -> Result<std::map<std::int64_t, std::vector<double>>> {
        std::map<std::int64_t, std::vector<double>> out;
        for (std::size_t at = 0; at < runs.size(); at += k_batch) {
            const std::size_t n = std::min(k_batch, runs.size() - at);
            Statement st(*m_db,
                         "SELECT r.id, s.data FROM runs r JOIN entities e ON e.run_id = COALESCE(r.content_run, r.id) "
                         "JOIN entity_samples s ON s.entity_id = e.id AND s.metric = ? "
                         "WHERE r.id IN " + in_list(n) + " AND e.kind = ? AND e.name = ? ORDER BY r.id, e.ordinal");
            int next = 1;
            st.bind(next++, metric);
            for (std::size_t i = 0; i < n; ++i) st.bind(next++, runs[at + i]);
            st.bind(next++, std::string(to_string(kind)));
            st.bind(next++, name);
            while (st.step()) out.emplace(st.column(0).as_int64(), st.column(1).as_doubles());  // the first entity of the run wins
        }
        return out;
    });
}

Result<std::map<std::string, std::int64_t>> BrowseReads::open_regressions_by_series() const {
    return guarded(m_name, [&]() -> Result<std::map<std::string, std::int64_t>> {
        Statement st(*m_db, "SELECT series, count(*) FROM regressions WHERE status = 'open' GROUP BY series");
        std::map<std::string, std::int64_t> out;
        while (st.step()) out[st.column(0).as_string()] = st.column(1).as_int64();
        return out;
    });
}

Result<std::map<std::int64_t, std::array<std::int64_t, 3>>> BrowseReads::finding_counts(
    const std::vector<std::int64_t>& runs) const {
    return guarded(m_name, [&]() -> Result<std::map<std::int64_t, std::array<std::int64_t, 3>>> {
        std::map<std::int64_t, std::array<std::int64_t, 3>> out;
        for (std::size_t at = 0; at < runs.size(); at += k_batch) {
            const std::size_t n = std::min(k_batch, runs.size() - at);
            Statement st(*m_db, "SELECT run_id, severity, count(*) FROM findings WHERE run_id IN " + in_list(n) +
                                    " GROUP BY run_id, severity");
            for (std::size_t i = 0; i < n; ++i) st.bind(static_cast<int>(i + 1), runs[at + i]);
            while (st.step()) {
                const auto severity = severity_from_string(st.column(1).as_string());
                if (!severity) continue;
                out[st.column(0).as_int64()][static_cast<std::size_t>(*severity)] += st.column(2).as_int64();
            }
        }
        return out;
    });
}

Result<std::set<std::int64_t>> BrowseReads::job_ranks_among(const std::vector<std::int64_t>& runs) const {
    return guarded(m_name, [&]() -> Result<std::set<std::int64_t>> {
        std::set<std::int64_t> out;
        for (std::size_t at = 0; at < runs.size(); at += k_batch) {
            const std::size_t n = std::min(k_batch, runs.size() - at);
            Statement st(*m_db, "SELECT DISTINCT run_id FROM job_ranks WHERE run_id IN " + in_list(n));
            for (std::size_t i = 0; i < n; ++i) st.bind(static_cast<int>(i + 1), runs[at + i]);
            while (st.step()) out.insert(st.column(0).as_int64());
        }
        return out;
    });
}

Result<std::map<std::int64_t, std::string>> BrowseReads::sources(const std::vector<std::int64_t>& runs) const {
    return guarded(m_name, [&]() -> Result<std::map<std::int64_t, std::string>> {
        std::map<std::int64_t, std::string> out;
        for (std::size_t at = 0; at < runs.size(); at += k_batch) {
            const std::size_t n = std::min(k_batch, runs.size() - at);
            Statement st(*m_db, "SELECT id, source FROM runs WHERE id IN " + in_list(n));
            for (std::size_t i = 0; i < n; ++i) st.bind(static_cast<int>(i + 1), runs[at + i]);
            while (st.step()) out[st.column(0).as_int64()] = st.column(1).as_string();
        }
        return out;
    });
}

Result<std::vector<std::string>> BrowseReads::top_kernels(std::int64_t run, std::size_t limit) const {
    return guarded(m_name, [&]() -> Result<std::vector<std::string>> {
        Statement st(*m_db,
                     "SELECT e.name FROM runs r JOIN entities e ON e.run_id = COALESCE(r.content_run, r.id) "
                     "JOIN metrics d ON d.entity_id = e.id AND d.name = 'duration' "
                     "LEFT JOIN metrics l ON l.entity_id = e.id AND l.name = 'launches' "
                     "WHERE r.id = ? AND e.kind = 'kernel' ORDER BY d.value * COALESCE(l.value, 1) DESC, e.name LIMIT ?");
        st.bind(1, run);
        st.bind(2, static_cast<std::int64_t>(limit));
        std::vector<std::string> out;
        while (st.step()) out.push_back(st.column(0).as_string());
        return out;
    });
}

Result<std::vector<std::pair<std::string, std::int64_t>>> BrowseReads::kernels_named(std::string_view needle, std::size_t limit) const {
    std::string pattern = "%";
    for (const char c : needle) {
        if (c == '%' || c == '_' || c == '\\') pattern += '\\';
        pattern += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    pattern += '%';
    return guarded(m_name, [&]() -> Result<std::vector<std::pair<std::string, std::int64_t>>> {
        // A run sharing another's entities (content_run) has them too: the newest such run counts.
        Statement st(*m_db,
                     "SELECT e.name, MAX(CASE WHEN c.newest > e.run_id THEN c.newest ELSE e.run_id END) FROM entities e "
                     "LEFT JOIN (SELECT content_run, MAX(id) AS newest FROM runs WHERE content_run IS NOT NULL GROUP BY content_run) c "
                     "ON c.content_run = e.run_id "
                     "WHERE e.kind = 'kernel' AND lower(e.name) LIKE ? ESCAPE '\\' GROUP BY e.name ORDER BY e.name LIMIT ?");
        st.bind(1, pattern);
        st.bind(2, static_cast<std::int64_t>(limit));
        std::vector<std::pair<std::string, std::int64_t>> out;
        while (st.step()) out.emplace_back(st.column(0).as_string(), st.column(1).as_int64());
        return out;
    });
}

}  // namespace perfwatch
