#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <map>
#include "core/vocabulary.hpp"
#include "engine/series_index.hpp"
#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

// `perfwatch regressions list`: every regression followed over history, newest first (only the
// open ones with `open_only`), as a table or JSON. Exit 0, or 2 when the database cannot be read.
// `perfwatch regressions accept ID`: the open regression's new level becomes its series' baseline
// (the runs from its first bad run on), so it stops alerting. Exit 0, or 2 when there is no open
// regression ID.
namespace {

// "commit abc123 (run 7)", or "run 7" without a commit.
std::string run_text(std::int64_t run_id, const std::string& commit) {
    return commit.empty() ? fmt::format("run {}", run_id) : fmt::format("commit {} (run {})", commit, run_id);
}

// "commit abc123 (run 7) at 1.2 ms" for one end of a bisection.
std::string end_text(std::int64_t run, const std::string& commit, const std::optional<double>& value, const std::string& metric) {
    return run_text(run, commit) + (value ? " at " + format_metric(metric, *value) : "");
}

nlohmann::json end_json(const std::optional<std::int64_t>& run, const std::string& commit, const std::optional<double>& value) {
    if (!run) return nullptr;
    return {{"run", *run}, {"commit", commit}, {"value", value ? nlohmann::json(*value) : nlohmann::json(nullptr)}};
}

}  // namespace

int run_regressions_list(const std::string& db_path, bool open_only, const std::string& format) {
    auto db = open_db(db_path);
    if (!db) return 2;
    auto regressions = db->regressions().list(open_only);
    if (!regressions) {
        print_error(regressions.error());
        return 2;
    }
    auto rows = db->browse().run_index();
    if (!rows) {
        print_error(rows.error());
        return 2;
    }
    const SeriesIndex index(*rows);
    std::vector<const RegressionState*> listed;
    for (const RegressionState& r : *regressions) listed.push_back(&r);
    auto ends = bisect_ends(*db, index, listed);
    if (!ends) {
        print_error(ends.error());
        return 2;
    }
    if (format == "json") {
        nlohmann::json doc = nlohmann::json::array();
        for (std::size_t i = 0; i < listed.size(); ++i) {
            const RegressionState& r = *listed[i];
            const BisectEnds& e = (*ends)[i];
            const std::int64_t first = r.first_bad_run.value_or(r.opened_run);
            doc.push_back({
                {"id", r.id},
                {"state", std::string(to_string(r.status))},
                {"series", r.series},
                {"rule", r.rule},
                {"entity", {{"kind", std::string(to_string(r.entity_kind))}, {"name", r.entity_name}}},
                {"metric", r.metric},
                {"baseline", r.baseline},
                {"band_limit", r.band_limit},
                {"current", r.current ? nlohmann::json(*r.current) : nlohmann::json(nullptr)},
                {"change_pct", r.change_pct ? nlohmann::json(*r.change_pct) : nlohmann::json(nullptr)},
                {"first_bad_run", first},
                {"first_bad", run_text(first, e.first_bad_commit)},
                {"bisect", {{"last_good", end_json(e.last_good_run, e.last_good_commit, e.last_good_value)},
                            {"first_bad", end_json(e.first_bad_run, e.first_bad_commit, e.first_bad_value)}}},
                {"opened_run", r.opened_run},
                {"last_bad_run", r.last_bad_run},
                {"resolved_run", r.resolved_run ? nlohmann::json(*r.resolved_run) : nlohmann::json(nullptr)},
                {"resolution", r.resolution},
                {"comment", r.comment},
                {"since", r.since},
            });
        }
        fmt::print("{}\n", doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
        return 0;
    }
    if (regressions->empty()) {
        fmt::print("no {}regressions\n", open_only ? "open " : "");
        return 0;
    }
    for (std::size_t i = 0; i < listed.size(); ++i) {
        const RegressionState& r = *listed[i];
        const BisectEnds& e = (*ends)[i];
        const std::int64_t first = r.first_bad_run.value_or(r.opened_run);
        std::string change;
        if (r.change_pct) change = fmt::format(" {:+.1f}%", *r.change_pct);
        if (r.current) change += fmt::format(" ({} -> {})", format_metric(r.metric, r.baseline), format_metric(r.metric, *r.current));
        else change += fmt::format(" (baseline {})", format_metric(r.metric, r.baseline));
        fmt::print("#{} {:<8} {} '{}' {} {}{}\n", r.id, to_string(r.status), to_string(r.entity_kind),
                   r.entity_kind == EntityKind::run ? "run" : r.entity_name, r.rule, r.metric, change);
        fmt::print("    series: {}\n    first bad: {}; opened at run {}{}; last bad run {}\n", series_title(r.series),
                   run_text(first, e.first_bad_commit), r.opened_run, r.since.empty() ? "" : " on " + r.since, r.last_bad_run);
        fmt::print("    bisect: last good {} .. first bad {}\n",
                   e.last_good_run ? end_text(*e.last_good_run, e.last_good_commit, e.last_good_value, r.metric) : "(none before)",
                   end_text(e.first_bad_run, e.first_bad_commit, e.first_bad_value, r.metric));
        if (r.status != RegressionStatus::open)
            fmt::print("    {} at run {}{}\n", r.resolution, r.resolved_run.value_or(0),
                       r.comment.empty() ? "" : fmt::format(": {}", r.comment));
    }
    return 0;
}

// `perfwatch regressions show ID`: the regression and its series around the change, run by run
// (10 runs before the first bad one to 5 after the last bad one), each with its commit and value.
// Exit 0, or 2 when there is no regression ID.
int run_regressions_show(const std::string& db_path, std::int64_t id) {
    auto db = open_db(db_path);
    if (!db) return 2;
    auto found = db->regressions().find(id);
    if (!found) {
        print_error(found.error());
        return 2;
    }
    if (!*found) {
        fmt::print(stderr, "perfwatch: error: {}: no regression #{} (see `perfwatch regressions list`)\n", db->name(), id);
        return 2;
    }
    const RegressionState& r = **found;
    auto rows = db->browse().run_index();
    if (!rows) {
        print_error(rows.error());
        return 2;
    }
    const SeriesIndex index(*rows);
    auto ends = bisect_ends(*db, index, {&r});
    if (!ends) {
        print_error(ends.error());
        return 2;
    }
    const BisectEnds& e = ends->front();
    fmt::print("#{} {} {} '{}' {} {}{}\n", r.id, to_string(r.status), to_string(r.entity_kind),
               r.entity_kind == EntityKind::run ? "run" : r.entity_name, r.rule, r.metric,
               r.change_pct ? fmt::format(" {:+.1f}%", *r.change_pct) : "");
    fmt::print("series: {}\nbisect: last good {} .. first bad {}\n", series_title(r.series),
               e.last_good_run ? end_text(*e.last_good_run, e.last_good_commit, e.last_good_value, r.metric) : "(none before)",
               end_text(e.first_bad_run, e.first_bad_commit, e.first_bad_value, r.metric));
    const SeriesEntry* s = index.find(r.series);
    if (s == nullptr) {
        fmt::print("(the series' runs are not in this database any more)\n");
        return 0;
    }
    const std::size_t first_at = s->position_from(e.first_bad_run);
    const std::int64_t end_run = std::max(r.last_bad_run, r.resolved_run.value_or(0));
    const std::size_t from = first_at > 10 ? first_at - 10 : 0;
    const std::size_t to = std::min(s->runs.size(), s->position_from(end_run) + 6);
    std::vector<std::int64_t> runs;
    for (std::size_t i = from; i < to; ++i) runs.push_back(s->runs[i].id);
    auto values = db->browse().metric_values(r.entity_kind,
                                             r.entity_kind == EntityKind::run ? std::nullopt : std::optional(r.entity_name),
                                             r.metric, runs);
    if (!values) {
        print_error(values.error());
        return 2;
    }
    fmt::print("\n{:>7}  {:<14} {:>12}  {}\n", "run", "commit", r.metric, "");
    for (std::size_t i = from; i < to; ++i) {
        const SeriesRun& run = s->runs[i];
        const auto v = values->find(run.id);
        std::string mark;
        if (e.last_good_run && run.id == *e.last_good_run) mark = "last good";
        else if (run.id == e.first_bad_run) mark = "first bad";
        else if (run.id > e.first_bad_run && run.id <= r.last_bad_run) mark = "bad";
        if (r.resolved_run && run.id == *r.resolved_run) mark += (mark.empty() ? "" : ", ") + r.resolution;
        fmt::print("{:>7}  {:<14} {:>12}  {}\n", run.id, run.commit, v == values->end() ? "-" : format_metric(r.metric, v->second.value), mark);
    }
    return 0;
}

int run_regressions_accept(const std::string& db_path, long long id, const std::string& comment) {
    auto db = open_db(db_path);
    if (!db) return 2;
    auto accepted = db->regressions().accept(id, comment);
    if (!accepted) {
        print_error(accepted.error());
        return 2;
    }
    if (!*accepted) {
        fmt::print(stderr, "perfwatch: error: {}: no open regression #{} (see `perfwatch regressions list --open`)\n",
                   db->name(), id);
        return 2;
    }
    const RegressionState& r = **accepted;
    const std::int64_t first = r.first_bad_run.value_or(r.opened_run);
    std::string commit;
    if (auto runs = db->history().find_runs({}, first + 1, 1); runs && !runs->empty() && runs->front().id == first)
        commit = label_value(runs->front().labels, "commit");
    fmt::print("regression #{} accepted: {} '{}' ({}){}; its series' baseline is now the runs from {} on\n", r.id,
               to_string(r.entity_kind), r.entity_kind == EntityKind::run ? "run" : r.entity_name, r.rule,
               r.change_pct ? fmt::format(" at {:+.1f}%", *r.change_pct) : "", run_text(first, commit));
    return 0;
}

class RegressionsCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("regressions", "Regressions followed over history: list, show, accept");
        cmd->require_subcommand(1);
        cmd->add_option("--db", m_db, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");
        m_list = cmd->add_subcommand(
            "list", "Every regression, newest first: series, rule, entity, baseline, change, first bad run, state, since");
        m_list->add_flag("--open", m_open, "Only the open ones");
        m_list->add_option("--format", m_format, "text or json")->check(CLI::IsMember({"text", "json"}));
        auto* accept = cmd->add_subcommand(
            "accept", "Accept an open regression's new level: its series' baseline becomes the runs from its first bad run on");
        accept->add_option("id", m_id, "Regression id (regressions list)")->required();
        accept->add_option("--comment", m_comment, "Why (shown by regressions list)");
        m_show = cmd->add_subcommand("show", "A regression and its series around the change, run by run");
        m_show->add_option("id", m_show_id, "Regression id (regressions list)")->required();
        return cmd;
    }
    int run(const Context& c) override {
        const std::string db = c.db_or_default(m_db);
        if (m_list->parsed()) return run_regressions_list(db, m_open, m_format);
        if (m_show->parsed()) return run_regressions_show(db, m_show_id);
        return run_regressions_accept(db, m_id, m_comment);
    }

private:
    CLI::App* m_list = nullptr;
    CLI::App* m_show = nullptr;
    std::int64_t m_show_id = 0;
    std::string m_db, m_format = "text", m_comment;
    bool m_open = false;
    long long m_id = 0;
};

}  // namespace

std::unique_ptr<Command> make_regressions_command() { return std::make_unique<RegressionsCommand>(); }

}  // namespace perfwatch::cli
