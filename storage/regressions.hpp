#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/model.hpp"

namespace perfwatch {

namespace sql {
class Connection;
}

// Open: the rule fired and the series has not come back. Resolved: back inside the band for
// the rule's resolve_after runs. Accepted: a user took the new level as the baseline. Invalid: a
// user found it a false alarm; its runs are baseline runs again.
enum class RegressionStatus { open, resolved, accepted, invalid };
std::string_view to_string(RegressionStatus s);
std::optional<RegressionStatus> regression_status_from_string(std::string_view s);

// What the team says of a regression (the dashboard's triage), beside its status.
enum class TriageState { untriaged, investigating, accepted, invalid, wont_fix, fixed, backed_out };
std::string_view to_string(TriageState s);
std::optional<TriageState> triage_state_from_string(std::string_view s);
// Every triage state, in the order forms offer them.
inline constexpr TriageState k_triage_states[] = {TriageState::untriaged, TriageState::investigating, TriageState::accepted,
                                                  TriageState::invalid,   TriageState::wont_fix,      TriageState::fixed,
                                                  TriageState::backed_out};

// A triage change: the fields given are set (each kept as an event), by `author` at `at` (UTC).
struct TriageChange {
    std::optional<TriageState> state;
    std::optional<std::string> assignee;
    std::optional<std::string> bug_url;
    std::string note;  // empty: none
    std::string author;
    std::string at;
};

// One kept triage change: `field` (state, assignee, bug_url, note) set to `value`.
struct TriageEvent {
    std::string at;
    std::string author;
    std::string field;
    std::string value;
};

// One regression followed over history (hysteresis): opened when its rule fires, resolved only
// after `resolve_after` comparable runs back inside the band, or accepted.
struct RegressionState {
    std::int64_t id = 0;  // 0: not stored yet
    std::string rule;
    EntityKind entity_kind = EntityKind::kernel;
    std::string entity_name;
    std::string series;  // comparable-run key plus branch
    std::string metric;
    bool higher_is_worse = true;
    double baseline = 0;    // baseline median when it opened
    double band_limit = 0;  // a value beyond this (in the worse direction) is still regressed
    std::int64_t opened_run = 0;
    std::optional<std::int64_t> first_bad_run;
    std::int64_t last_run = 0;
    std::int64_t inside_runs = 0;  // consecutive runs back inside the band
    std::optional<std::int64_t> resolved_run;
    std::string resolution;  // "back inside the band", "accepted"
    RegressionStatus status = RegressionStatus::open;
    std::int64_t last_bad_run = 0;       // the newest run still outside the band
    std::optional<double> current;       // the level that opened it
    std::optional<double> change_pct;    // its change against `baseline` when it opened
    std::string comment;                 // given when accepted
    std::string since;                   // when the opening run was ingested (read only)
    TriageState triage = TriageState::untriaged;
    std::string assignee;
    std::string bug_url;
};

// The regressions followed over history: a part of the database (Db::regressions()).
class RegressionStore {
public:
    // `name` names the database in errors.
    RegressionStore(sql::Connection& db, std::string name) : m_db(&db), m_name(std::move(name)) {}

    // Regressions of a series still open.
    Result<std::vector<RegressionState>> open(const std::string& series) const;
    // Regression `id` as stored now (one statement); nullopt when there is none.
    Result<std::optional<RegressionState>> find(std::int64_t id) const;
    // Every regression, newest first (open ones only when `open_only`).
    Result<std::vector<RegressionState>> list(bool open_only) const;
    // Every regression of a series, oldest first (the baseline window is cut by them).
    Result<std::vector<RegressionState>> of_series(const std::string& series) const;
    // Accepts an open regression: its new level becomes the baseline. nullopt when there is no
    // open regression `id`.
    Result<std::optional<RegressionState>> accept(std::int64_t id, const std::string& comment);
    // Applies `change` to regression `id` in one transaction, keeping each field it changes (a
    // field given its present value is no change) as an event. State accepted accepts an open regression (its new level becomes the baseline);
    // invalid closes it as a false alarm (resolution "invalid": its runs are baseline runs again).
    // nullopt when there is no regression `id`.
    Result<std::optional<RegressionState>> triage(std::int64_t id, const TriageChange& asked);
    // The triage changes of regression `id`, oldest first.
    Result<std::vector<TriageEvent>> events(std::int64_t id) const;
    // Inserts (id 0, then set) or updates open regression states, in one transaction.
    Result<void> save(std::vector<RegressionState>& states);

private:
    sql::Connection* m_db;
    std::string m_name;
};

}  // namespace perfwatch
