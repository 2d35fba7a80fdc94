#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "engine/stats.hpp"
#include "core/vocabulary.hpp"

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

struct HistoryOptions {
    std::string db_path;
    std::string metric;
    std::string entity;  // empty: the run's own metric
    std::string kind;  // empty: every kind the runs hold
    std::map<std::string, std::string> labels;
    std::string format = "text";
};

// Prints a metric over the runs matching the labels, oldest first, with change points.
int run_history(const HistoryOptions& options) {
    auto db = open_db(options.db_path);
    if (!db) return 2;
    auto runs = db->history().find_runs(options.labels);
    if (!runs) {
        print_error(runs.error());
        return 2;
    }
    std::reverse(runs->begin(), runs->end());
    std::vector<std::int64_t> ids;
    std::map<std::int64_t, const Labels*> labels_of;
    for (const RunLabels& r : *runs) {
        ids.push_back(r.id);
        labels_of[r.id] = &r.labels;
    }
    const EntityKind kind = options.entity.empty() ? EntityKind::run
                                                   : entity_kind_from_string(options.kind).value_or(EntityKind::kernel);
    auto read = db->browse().metric_values(kind, options.entity.empty() ? std::nullopt : std::optional(options.entity),
                                           options.metric, ids);
    if (!read) {
        print_error(read.error());
        return 2;
    }
    // In run order (ids ascending, as the map keeps them).
    struct SeriesPoint {
        std::int64_t run_id = 0;
        double value = 0;
    };
    std::vector<SeriesPoint> series;
    for (const auto& [run, v] : *read) series.push_back({run, v.value});
    std::set<std::string> gpus;
    for (const SeriesPoint& p : series) gpus.insert(gpu_of(*labels_of.at(p.run_id)));
    std::vector<double> values;
    for (const SeriesPoint& p : series) values.push_back(p.value);
    const std::vector<std::size_t> cps = change_points(values);
    // Median of each segment, for the size of each shift.
    std::vector<double> seg_median;
    std::vector<std::size_t> bounds = cps;
    bounds.insert(bounds.begin(), 0);
    bounds.push_back(values.size());
    for (std::size_t i = 0; i + 1 < bounds.size(); ++i)
        seg_median.push_back(median(std::vector<double>(values.begin() + static_cast<std::ptrdiff_t>(bounds[i]),
                                                        values.begin() + static_cast<std::ptrdiff_t>(bounds[i + 1]))));
    auto show = [&](double v) { return format_metric(options.metric, v); };
    if (options.format == "json") {
        nlohmann::json points = nlohmann::json::array(), changes = nlohmann::json::array();
        for (const SeriesPoint& p : series)
            points.push_back({{"run", p.run_id}, {"value", p.value}, {"labels", *labels_of.at(p.run_id)}});
        for (std::size_t i = 0; i < cps.size(); ++i)
            changes.push_back({{"run", series[cps[i]].run_id},
                               {"index", cps[i]},
                               {"before_median", seg_median[i]},
                               {"after_median", seg_median[i + 1]}});
        fmt::print("{}\n", nlohmann::json{{"metric", options.metric},
                                           {"entity", options.entity},
                                           {"points", points},
                                           {"change_points", changes}}
                               .dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
        return 0;
    }
    fmt::print("{} of {} over {} run(s)\n", options.metric,
               options.entity.empty() ? std::string("the run") : fmt::format("{} '{}'", to_string(kind), options.entity),
               series.size());
    if (gpus.size() > 1)
        fmt::print("note: these runs ran on {} GPU models; narrow with --label gpu=...\n", gpus.size());
    std::size_t next = 0;
    for (std::size_t i = 0; i < series.size(); ++i) {
        const SeriesPoint& p = series[i];
        const Labels& l = *labels_of.at(p.run_id);
        auto label = [&](const char* k) {
            auto it = l.find(k);
            return it == l.end() ? std::string("-") : it->second;
        };
        std::string mark;
        if (next < cps.size() && cps[next] == i) {
            const double before = seg_median[next], after = seg_median[next + 1];
            mark = fmt::format("  <- change point: median {} -> {} ({:+.1f}%)", show(before), show(after),
                               before != 0 ? 100 * (after - before) / std::fabs(before) : 0.0);
            ++next;
        }
        fmt::print("run {:>5}  {:<12} {:<14} {:>14}{}\n", p.run_id, label("commit"), label("branch"), show(p.value), mark);
    }
    if (cps.empty()) fmt::print("no change point\n");
    return 0;
}

class HistoryCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("history", "Print a metric over the stored runs with its change points");
        cmd->add_option("--metric", m_options.metric, "Metric (see `perfwatch metrics`)")->required();
        cmd->add_option("--entity", m_options.entity, "Entity name (default: the run's own metric)");
        cmd->add_option("--kind", m_options.kind, "Kind of the entity (default kernel)")
            ->check(CLI::IsMember({"kernel", "memcpy", "api_call", "nvtx_range", "device", "op"}));
        cmd->add_option("--label", m_labels, "Only runs with label KEY=VALUE (repeatable)")->allow_extra_args(false);
        cmd->add_option("--db", m_options.db_path, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or perfwatch.db)");
        cmd->add_option("--format", m_options.format, "text or json")->check(CLI::IsMember({"text", "json"}));
        return cmd;
    }
    int run(const Context& c) override {
        m_options.db_path = c.db_or_default(m_options.db_path);
        if (!parse_labels(m_labels, m_options.labels)) return 2;
        return run_history(m_options);
    }

private:
    HistoryOptions m_options;
    std::vector<std::string> m_labels;
};

}  // namespace

std::unique_ptr<Command> make_history_command() { return std::make_unique<HistoryCommand>(); }

}  // namespace perfwatch::cli
