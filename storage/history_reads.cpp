#include "storage/history_reads.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <unordered_map>

#include "storage/sql.hpp"

namespace perfwatch {

using sql::guarded;
using sql::in_list;
using sql::Statement;

namespace {

// Ids bound in one IN list: a history window or a page of runs fits in one statement per table.
constexpr std::size_t k_ids_per_statement = 500;


void bind_ids(Statement& st, std::span<const std::int64_t> ids) {
    for (std::size_t i = 0; i < ids.size(); ++i) st.bind(static_cast<int>(i + 1), ids[i]);
}

// The entities of the stored contents `content_ids` (runs that stored their entities), with their
// attributes, metrics, samples and tool findings: five statements whatever their number.
std::unordered_map<std::int64_t, EntityList> load_contents(sql::Connection& db,
                                                                    std::span<const std::int64_t> content_ids) {
    std::unordered_map<std::int64_t, EntityList> out;
    if (content_ids.empty()) return out;
    const std::string ids = in_list(content_ids.size());
    // Entity id -> where it lives: its content's list and its index there.
    std::unordered_map<std::int64_t, std::pair<EntityList*, std::size_t>> where;
    auto entity = [&](std::int64_t id) -> Entity& {
        const auto& [list, index] = where.at(id);
        return (*list)[index];
    };
    Statement ent_st(db, "SELECT id, parent_id, kind, name, run_id FROM entities WHERE run_id IN " + ids +
                             " ORDER BY run_id, ordinal");
    bind_ids(ent_st, content_ids);
    while (ent_st.step()) {
        EntityList& list = out[ent_st.column(4).as_int64()];
        Entity e;
        const std::int64_t id = ent_st.column(0).as_int64();
        if (!ent_st.column(1).is_null()) {
            auto it = where.find(ent_st.column(1).as_int64());
            if (it != where.end()) e.parent = static_cast<std::int64_t>(it->second.second);
        }
        e.kind = entity_kind_from_string(ent_st.column(2).as_string()).value_or(EntityKind::kernel);
        e.name = ent_st.column(3).as_string();
        where[id] = {&list, list.size()};
        list.push_back(std::move(e));
    }
    Statement attr_st(db, "SELECT a.entity_id, a.key, a.value FROM entity_attributes a "
                          "JOIN entities e ON e.id = a.entity_id WHERE e.run_id IN " + ids +
                              " ORDER BY a.entity_id, a.key");
    bind_ids(attr_st, content_ids);
    while (attr_st.step())
        entity(attr_st.column(0).as_int64()).attributes[attr_st.column(1).as_string()] = attr_st.column(2).as_string();
    Statement metric_st(db, "SELECT m.entity_id, m.name, m.value, m.unit, m.tool_name, m.tool_unit "
                            "FROM metrics m JOIN entities e ON e.id = m.entity_id WHERE e.run_id IN " + ids +
                                " ORDER BY m.entity_id, m.name");
    bind_ids(metric_st, content_ids);
    while (metric_st.step())
        entity(metric_st.column(0).as_int64())
            .metrics.push_back(Metric{metric_st.column(1).as_string(), metric_st.column(2).as_double(),
                                      metric_st.column(3).as_string(), metric_st.column(4).as_string(),
                                      metric_st.column(5).as_string()});
    // Runs read back are kept as history (the daemon's run cache), without spare room.
    for (auto& [content, list] : out)
        for (Entity& e : list) e.shrink_to_fit();
    Statement sample_st(db, "SELECT s.entity_id, s.metric, s.data FROM entity_samples s "
                            "JOIN entities e ON e.id = s.entity_id WHERE e.run_id IN " + ids);
    bind_ids(sample_st, content_ids);
    while (sample_st.step())
        entity(sample_st.column(0).as_int64()).samples[sample_st.column(1).as_string()] = sample_st.column(2).as_doubles();
    Statement tf_st(db, "SELECT t.entity_id, t.rule, t.type, t.section, t.text, t.speedup_type, "
                        "t.speedup_pct FROM tool_findings t JOIN entities e ON e.id = t.entity_id "
                        "WHERE e.run_id IN " + ids + " ORDER BY t.id");
    bind_ids(tf_st, content_ids);
    while (tf_st.step())
        entity(tf_st.column(0).as_int64())
            .tool_findings.push_back(ToolFinding{tf_st.column(1).as_string(), tf_st.column(2).as_string(),
                                                 tf_st.column(3).as_string(), tf_st.column(4).as_string(),
                                                 tf_st.column(5).as_string(), tf_st.column(6).as_optional_double()});
    return out;
}

}  // namespace

Result<std::vector<StoredRun>> HistoryReads::load_runs(const std::vector<std::int64_t>& run_ids) const {
    return guarded(m_name, [&]() -> Result<std::vector<StoredRun>> {
        std::vector<StoredRun> out;
        for (std::size_t from = 0; from < run_ids.size(); from += k_ids_per_statement) {
            const std::span<const std::int64_t> ids(run_ids.data() + from,
                                                    std::min(k_ids_per_statement, run_ids.size() - from));
            const std::string list = in_list(ids.size());
            std::unordered_map<std::int64_t, StoredRun> runs;
            std::unordered_map<std::int64_t, std::int64_t> content_of;
            std::vector<std::int64_t> content_ids;
            Statement run_st(*m_db, "SELECT id, source, sha256, format, format_detail, tool_version, captured_at, "
                                    "ingested_at, COALESCE(content_run, id) FROM runs WHERE id IN " + list);
            bind_ids(run_st, ids);
            while (run_st.step()) {
                StoredRun run;
                run.id = run_st.column(0).as_int64();
                RunBatch& b = run.batch;
                b.source = run_st.column(1).as_string();
                b.sha256 = run_st.column(2).as_string();
                b.format = run_st.column(3).as_string();
                b.format_detail = run_st.column(4).as_string();
                b.tool_version = run_st.column(5).as_string();
                if (!run_st.column(6).is_null()) b.captured_at = run_st.column(6).as_string();
                run.ingested_at = run_st.column(7).as_string();
                // Entities live with the run that stored the content first.
                const std::int64_t content_id = run_st.column(8).as_int64();
                if (content_id != run.id) run.content_run = content_id;
                if (std::find(content_ids.begin(), content_ids.end(), content_id) == content_ids.end())
                    content_ids.push_back(content_id);
                content_of[run.id] = content_id;
                runs.emplace(run.id, std::move(run));
            }
            Statement label_st(*m_db, "SELECT run_id, key, value FROM run_labels WHERE run_id IN " + list);
            bind_ids(label_st, ids);
            while (label_st.step())
                runs.at(label_st.column(0).as_int64()).batch.labels[label_st.column(1).as_string()] =
                    label_st.column(2).as_string();
            Statement note_st(*m_db,
                              "SELECT run_id, text FROM run_notes WHERE run_id IN " + list + " ORDER BY run_id, ordinal");
            bind_ids(note_st, ids);
            while (note_st.step())
                runs.at(note_st.column(0).as_int64()).batch.notes.push_back(note_st.column(1).as_string());
            auto contents = load_contents(*m_db, content_ids);
            // Each content's entities go to the runs sharing it (moved to the last of them).
            std::unordered_map<std::int64_t, std::size_t> users;
            for (const std::int64_t id : ids)
                if (runs.contains(id)) ++users[content_of.at(id)];
            for (const std::int64_t id : ids) {
                auto it = runs.find(id);
                if (it == runs.end()) continue;
                const std::int64_t content = content_of.at(id);
                EntityList& entities = contents[content];
                if (--users[content] > 0) {
                    it->second.batch.entities = entities;
                    out.push_back(it->second);
                    continue;
                }
                it->second.batch.entities = std::move(entities);
                out.push_back(std::move(it->second));
                runs.erase(it);
            }
        }
        return out;
    });
}


Result<std::vector<RunLabels>> HistoryReads::find_runs(const std::map<std::string, std::string>& must_match,
                                             std::int64_t before_id, std::size_t limit) const {
    return guarded(m_name, [&]() -> Result<std::vector<RunLabels>> {
        std::string sql = "SELECT r.id FROM runs r WHERE (? = 0 OR r.id < ?)";
        for (std::size_t i = 0; i < must_match.size(); ++i)
            sql += " AND EXISTS(SELECT 1 FROM run_labels l WHERE l.run_id = r.id AND l.key = ? AND l.value = ?)";
        sql += " ORDER BY r.id DESC";
        if (limit > 0) sql += " LIMIT ?";
        Statement st(*m_db, sql);
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
        while (st.step()) {
            index_of[st.column(0).as_int64()] = out.size();
            out.push_back({st.column(0).as_int64(), {}});
        }
        if (out.empty()) return out;
        // The labels of all of them in one query over their id range (newest first: back is lowest).
        Statement lab(*m_db, "SELECT run_id, key, value FROM run_labels WHERE run_id BETWEEN ? AND ?");
        lab.bind(1, out.back().id);
        lab.bind(2, out.front().id);
        while (lab.step())
            if (auto it = index_of.find(lab.column(0).as_int64()); it != index_of.end())
                out[it->second].labels[lab.column(1).as_string()] = lab.column(2).as_string();
        return out;
    });
}

}  // namespace perfwatch
