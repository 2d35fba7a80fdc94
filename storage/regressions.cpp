#include "storage/regressions.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>

#include "storage/sql.hpp"

namespace perfwatch {

using sql::guarded;
using sql::Statement;
using sql::Transaction;

std::string_view to_string(RegressionStatus s) {
    switch (s) {
        case RegressionStatus::open: return "open";
        case RegressionStatus::resolved: return "resolved";
        case RegressionStatus::accepted: return "accepted";
        case RegressionStatus::invalid: return "invalid";
    }
    return "open";
}

std::string_view to_string(TriageState s) {
    switch (s) {
        case TriageState::untriaged: return "untriaged";
        case TriageState::investigating: return "investigating";
        case TriageState::accepted: return "accepted";
        case TriageState::invalid: return "invalid";
        case TriageState::wont_fix: return "wont_fix";
        case TriageState::fixed: return "fixed";
        case TriageState::backed_out: return "backed_out";
    }
    return "untriaged";
}

std::optional<TriageState> triage_state_from_string(std::string_view s) {
    for (const TriageState t : k_triage_states)
        if (to_string(t) == s) return t;
    return std::nullopt;
}

std::optional<RegressionStatus> regression_status_from_string(std::string_view s) {
    if (s == "open") return RegressionStatus::open;
    if (s == "resolved") return RegressionStatus::resolved;
    if (s == "accepted") return RegressionStatus::accepted;
    if (s == "invalid") return RegressionStatus::invalid;
    return std::nullopt;
}

namespace {

constexpr const char* k_regression_columns =
    "id, rule, entity_kind, entity_name, series, metric, higher_is_worse, baseline, band_limit, opened_run, "
    "first_bad_run, last_run, inside_runs, resolved_run, resolution, status, last_bad_run, current, change_pct, "
    "comment, (SELECT ingested_at FROM runs WHERE runs.id = opened_run), triage, assignee, bug_url";

RegressionState regression_from(Statement& st);

// Regression `id` as stored now; nullopt when there is none.
std::optional<RegressionState> regression_by_id(sql::Connection& db, std::int64_t id) {
    Statement st(db, fmt::format("SELECT {} FROM regressions WHERE id = ?", k_regression_columns));
    st.bind(1, id);
    if (!st.step()) return std::nullopt;
    return regression_from(st);
}

RegressionState regression_from(Statement& st) {
    RegressionState r;
    r.id = st.column(0).as_int64();
    r.rule = st.column(1).as_string();
    r.entity_kind = entity_kind_from_string(st.column(2).as_string()).value_or(EntityKind::kernel);
    r.entity_name = st.column(3).as_string();
    r.series = st.column(4).as_string();
    r.metric = st.column(5).as_string();
    r.higher_is_worse = st.column(6).as_int() != 0;
    r.baseline = st.column(7).as_double();
    r.band_limit = st.column(8).as_double();
    r.opened_run = st.column(9).as_int64();
    r.first_bad_run = st.column(10).as_optional_int64();
    r.last_run = st.column(11).as_int64();
    r.inside_runs = st.column(12).as_int64();
    r.resolved_run = st.column(13).as_optional_int64();
    r.resolution = st.column(14).as_string();
    r.status = regression_status_from_string(st.column(15).as_string()).value_or(RegressionStatus::open);
    r.last_bad_run = st.column(16).as_optional_int64().value_or(r.opened_run);
    r.current = st.column(17).as_optional_double();
    r.change_pct = st.column(18).as_optional_double();
    r.comment = st.column(19).as_string();
    r.triage = triage_state_from_string(st.column(21).as_string()).value_or(TriageState::untriaged);
    r.assignee = st.column(22).as_string();
    r.bug_url = st.column(23).as_string();
    if (!st.column(20).is_null()) r.since = st.column(20).as_string();
    return r;
}

}  // namespace

Result<std::vector<RegressionState>> RegressionStore::open(const std::string& series) const {
    return guarded(m_name, [&]() -> Result<std::vector<RegressionState>> {
        Statement st(*m_db, fmt::format("SELECT {} FROM regressions WHERE series = ? AND resolved_run IS NULL "
                                                "ORDER BY id",
                                                k_regression_columns));
        st.bind(1, series);
        std::vector<RegressionState> out;
        while (st.step()) out.push_back(regression_from(st));
        return out;
    });
}

Result<std::vector<RegressionState>> RegressionStore::list(bool open_only) const {
    return guarded(m_name, [&]() -> Result<std::vector<RegressionState>> {
        Statement st(*m_db, fmt::format("SELECT {} FROM regressions {} ORDER BY id DESC", k_regression_columns,
                                                open_only ? "WHERE resolved_run IS NULL" : ""));
        std::vector<RegressionState> out;
        while (st.step()) out.push_back(regression_from(st));
        return out;
    });
}

Result<std::vector<RegressionState>> RegressionStore::of_series(const std::string& series) const {
    return guarded(m_name, [&]() -> Result<std::vector<RegressionState>> {
        Statement st(*m_db,
                             fmt::format("SELECT {} FROM regressions WHERE series = ? ORDER BY id", k_regression_columns));
        st.bind(1, series);
        std::vector<RegressionState> out;
        while (st.step()) out.push_back(regression_from(st));
        return out;
    });
}

Result<std::optional<RegressionState>> RegressionStore::find(std::int64_t id) const {
    return guarded(m_name, [&]() -> Result<std::optional<RegressionState>> { return regression_by_id(*m_db, id); });
}

Result<std::optional<RegressionState>> RegressionStore::accept(std::int64_t id, const std::string& comment) {
    return guarded(m_name, [&]() -> Result<std::optional<RegressionState>> {
        Transaction tx(*m_db);
        Statement upd(*m_db,
                              "UPDATE regressions SET status = 'accepted', triage = 'accepted', resolved_run = last_run, "
                              "resolution = 'accepted', comment = ? WHERE id = ? AND status = 'open'");
        upd.bind(1, comment);
        upd.bind(2, id);
        if (upd.exec() == 0) return std::optional<RegressionState>{};
        std::optional<RegressionState> out = regression_by_id(*m_db, id);
        tx.commit();
        return out;
    });
}

Result<std::optional<RegressionState>> RegressionStore::triage(std::int64_t id, const TriageChange& asked) {
    return guarded(m_name, [&]() -> Result<std::optional<RegressionState>> {
        Transaction tx(*m_db);
        Statement exists(*m_db, "SELECT status, triage, assignee, bug_url FROM regressions WHERE id = ?");
        exists.bind(1, id);
        if (!exists.step()) return std::optional<RegressionState>{};
        const bool open = exists.column(0).as_string() == "open";
        // Only what changes is set and kept as an event.
        TriageChange change = asked;
        if (change.state && to_string(*change.state) == exists.column(1).as_string()) change.state.reset();
        if (change.assignee == exists.column(2).as_string()) change.assignee.reset();
        if (change.bug_url == exists.column(3).as_string()) change.bug_url.reset();
        exists.reset();
        Statement event(*m_db, "INSERT INTO regression_events(regression_id, at, author, field, value) VALUES(?,?,?,?,?)");
        const auto keep = [&](const std::string& field, const std::string& value) {
            event.bind(1, id);
            event.bind(2, change.at);
            event.bind(3, change.author);
            event.bind(4, field);
            event.bind(5, value);
            event.exec();
            event.reset();
        };
        // Each field's statement is fixed here; only values are bound.
        const auto set = [&](const char* sql, const std::string& value) {
            Statement st(*m_db, sql);
            st.bind(1, value);
            st.bind(2, id);
            st.exec();
        };
        if (change.state) {
            const std::string state(to_string(*change.state));
            set("UPDATE regressions SET triage = ? WHERE id = ?", state);
            // Accepted and invalid end an open regression: the baseline moves to its level, or
            // takes its runs back.
            if (open && (*change.state == TriageState::accepted || *change.state == TriageState::invalid)) {
                Statement close(*m_db, "UPDATE regressions SET status = ?, resolved_run = last_run, resolution = ?, "
                                       "comment = ? WHERE id = ? AND status = 'open'");
                close.bind(1, state);
                close.bind(2, state);
                close.bind(3, change.note);
                close.bind(4, id);
                close.exec();
            }
            keep("state", state);
        }
        if (change.assignee) {
            set("UPDATE regressions SET assignee = ? WHERE id = ?", *change.assignee);
            keep("assignee", *change.assignee);
        }
        if (change.bug_url) {
            set("UPDATE regressions SET bug_url = ? WHERE id = ?", *change.bug_url);
            keep("bug_url", *change.bug_url);
        }
        if (!change.note.empty()) keep("note", change.note);
        std::optional<RegressionState> out = regression_by_id(*m_db, id);
        tx.commit();
        return out;
    });
}

Result<std::vector<TriageEvent>> RegressionStore::events(std::int64_t id) const {
    return guarded(m_name, [&]() -> Result<std::vector<TriageEvent>> {
        Statement st(*m_db, "SELECT at, author, field, value FROM regression_events WHERE regression_id = ? ORDER BY id");
        st.bind(1, id);
        std::vector<TriageEvent> out;
        while (st.step()) out.push_back({st.column(0).as_string(), st.column(1).as_string(), st.column(2).as_string(), st.column(3).as_string()});
        return out;
    });
}

Result<void> RegressionStore::save(std::vector<RegressionState>& states) {
    return guarded(m_name, [&]() -> Result<void> {
        Transaction tx(*m_db);
        // Two daemons of a fleet may judge two runs of one series at once: the check for an open
        // regression of the same rule and entity and the insert are serialised per series (SQLite's
        // write transaction does it already; PostgreSQL takes a lock on the series until commit).
        Statement find_open(*m_db, "SELECT id FROM regressions WHERE series = ? AND rule = ? AND entity_kind = ? "
                                   "AND entity_name = ? AND status = 'open' ORDER BY id LIMIT 1");
        Statement ins(*m_db,
                              "INSERT INTO regressions(rule, entity_kind, entity_name, series, metric, higher_is_worse, "
                              "baseline, band_limit, opened_run, first_bad_run, last_run, inside_runs, resolved_run, "
                              "resolution, status, last_bad_run, current, change_pct) "
                              "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id");
        // An accepted regression stays accepted: a run processed after the acceptance does not reopen it.
        Statement upd(*m_db,
                              "UPDATE regressions SET last_run = ?, inside_runs = ?, resolved_run = ?, resolution = ?, "
                              "status = ?, last_bad_run = ? WHERE id = ? AND status = 'open'");
        for (RegressionState& r : states) {
            if (r.id != 0) {
                upd.bind(1, r.last_run);
                upd.bind(2, r.inside_runs);
                upd.bind(3, r.resolved_run);
                upd.bind(4, r.resolution);
                upd.bind(5, std::string(to_string(r.status)));
                upd.bind(6, r.last_bad_run);
                upd.bind(7, r.id);
                upd.exec();
                upd.reset();
                continue;
            }
            if (m_db->dialect() == sql::Dialect::postgresql) {
                Statement lock(*m_db, "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))");
                lock.bind(1, r.series);
                lock.step();
            }
            find_open.bind(1, r.series);
            find_open.bind(2, r.rule);
            find_open.bind(3, std::string(to_string(r.entity_kind)));
            find_open.bind(4, r.entity_name);
            if (find_open.step()) {
                r.id = find_open.column(0).as_int64();  // opened meanwhile by another daemon: the same one
                find_open.reset();
                continue;
            }
            find_open.reset();
            ins.bind(1, r.rule);
            ins.bind(2, std::string(to_string(r.entity_kind)));
            ins.bind(3, r.entity_name);
            ins.bind(4, r.series);
            ins.bind(5, r.metric);
            ins.bind(6, r.higher_is_worse ? 1 : 0);
            ins.bind(7, r.baseline);
            ins.bind(8, r.band_limit);
            ins.bind(9, r.opened_run);
            ins.bind(10, r.first_bad_run);
            ins.bind(11, r.last_run);
            ins.bind(12, r.inside_runs);
            ins.bind(13, r.resolved_run);
            ins.bind(14, r.resolution);
            ins.bind(15, std::string(to_string(r.status)));
            ins.bind(16, r.last_bad_run);
            ins.bind(17, r.current);
            ins.bind(18, r.change_pct);
            r.id = ins.insert_returning_id();
        }
        tx.commit();
        return {};
    });
}

}  // namespace perfwatch
