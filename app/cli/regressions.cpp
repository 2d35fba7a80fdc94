#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <map>
#include "core/vocabulary.hpp"
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

// "commit abc123 (run 7)" or "run 7", from the run's labels.
std::string run_text(const Db& db, std::int64_t run_id, std::map<std::int64_t, std::string>& commits) {
    auto it = commits.find(run_id);
    if (it == commits.end()) {
        std::string commit;
        if (auto runs = db.history().find_runs({}, run_id + 1, 1); runs && !runs->empty() && runs->front().id == run_id)
            commit = label_value(runs->front().labels, "commit");
        it = commits.emplace(run_id, commit).first;
    }
    return it->second.empty() ? fmt::format("run {}", run_id) : fmt::format("commit {} (run {})", it->second, run_id);
}

// The series key without the machinery: "benchmark=bert;gpu=NVIDIA H100;branch=main" as
// "bert on NVIDIA H100, main", other labels after.
std::string series_text(const std::string& series) {
    std::map<std::string, std::string> parts;
    std::size_t at = 0;
    while (at < series.size()) {
        const std::size_t end = std::min(series.find(';', at), series.size());
        const std::string item = series.substr(at, end - at);
        if (const auto eq = item.find('='); eq != std::string::npos) parts[item.substr(0, eq)] = item.substr(eq + 1);
        at = end + 1;
    }
    std::string out = parts.contains("benchmark") ? parts["benchmark"] : "(no benchmark)";
    if (!parts["gpu"].empty()) out += " on " + parts["gpu"];
    if (!parts["branch"].empty()) out += ", " + parts["branch"];
    for (const auto& [k, v] : parts)
        if (k != "benchmark" && k != "gpu" && k != "branch") out += fmt::format(", {}={}", k, v);
    return out;
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
    std::map<std::int64_t, std::string> commits;
    if (format == "json") {
        nlohmann::json doc = nlohmann::json::array();
        for (const RegressionState& r : *regressions) {
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
                {"first_bad", run_text(*db, first, commits)},
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
    for (const RegressionState& r : *regressions) {
        const std::int64_t first = r.first_bad_run.value_or(r.opened_run);
        std::string change;
        if (r.change_pct) change = fmt::format(" {:+.1f}%", *r.change_pct);
        if (r.current) change += fmt::format(" ({} -> {})", format_metric(r.metric, r.baseline), format_metric(r.metric, *r.current));
        else change += fmt::format(" (baseline {})", format_metric(r.metric, r.baseline));
        fmt::print("#{} {:<8} {} '{}' {} {}{}\n", r.id, to_string(r.status), to_string(r.entity_kind),
                   r.entity_kind == EntityKind::run ? "run" : r.entity_name, r.rule, r.metric, change);
        fmt::print("    series: {}\n    first bad: {}; opened at run {}{}; last bad run {}\n", series_text(r.series),
                   run_text(*db, first, commits), r.opened_run, r.since.empty() ? "" : " on " + r.since, r.last_bad_run);
        if (r.status != RegressionStatus::open)
            fmt::print("    {} at run {}{}\n", r.resolution, r.resolved_run.value_or(0),
                       r.comment.empty() ? "" : fmt::format(": {}", r.comment));
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
    std::map<std::int64_t, std::string> commits;
    const std::int64_t first = r.first_bad_run.value_or(r.opened_run);
    fmt::print("regression #{} accepted: {} '{}' ({}){}; its series' baseline is now the runs from {} on\n", r.id,
               to_string(r.entity_kind), r.entity_kind == EntityKind::run ? "run" : r.entity_name, r.rule,
               r.change_pct ? fmt::format(" at {:+.1f}%", *r.change_pct) : "", run_text(*db, first, commits));
    return 0;
}

class RegressionsCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("regressions", "Regressions followed over history: list, accept");
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
        return cmd;
    }
    int run(const Context& c) override {
        const std::string db = c.db_or_default(m_db);
        if (m_list->parsed()) return run_regressions_list(db, m_open, m_format);
        return run_regressions_accept(db, m_id, m_comment);
    }

private:
    CLI::App* m_list = nullptr;
    std::string m_db, m_format = "text", m_comment;
    bool m_open = false;
    long long m_id = 0;
};

}  // namespace

std::unique_ptr<Command> make_regressions_command() { return std::make_unique<RegressionsCommand>(); }

}  // namespace perfwatch::cli
