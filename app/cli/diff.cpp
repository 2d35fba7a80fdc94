#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "collectors/collector.hpp"
#include "engine/diff.hpp"

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

struct DiffCommandOptions {
    std::string db_path;
    std::string before, after;  // run ids or report files
    std::string kind;  // empty: every kind the runs hold
    double min_change_pct = 5;
    std::string format = "text";
    std::vector<Converter> converters = default_converters();
};

// A run named on the command line: a report file, else a run id in the database.
Result<StoredRun> load_side(const std::string& text, const std::string& db_path, const std::vector<Converter>& converters) {
    std::error_code ec;
    const auto id = as_run_id(text);
    if (!id || std::filesystem::exists(text, ec)) {
        auto batch = collect_labelled(text, {}, converters);
        if (!batch) return std::unexpected(batch.error());
        return StoredRun{0, "", std::move(*batch), std::nullopt};
    }
    auto db = Db::open(db_path);
    if (!db) return std::unexpected(db.error());
    auto run = db->load(*id);
    if (!run) return std::unexpected(run.error());
    if (!*run) return fail(db->name(), 0, fmt::format("no run {} (and no file of that name)", *id));
    return std::move(**run);
}

std::string side_name(const StoredRun& r) {
    return r.id > 0 ? fmt::format("run {} ({})", r.id, r.batch.source) : r.batch.source;
}

// Compares two runs entity by entity; 0, or 2 when a run cannot be read.
int run_diff(const DiffCommandOptions& options) {
    auto a = load_side(options.before, options.db_path, options.converters);
    if (!a) {
        print_error(a.error());
        return 2;
    }
    auto b = load_side(options.after, options.db_path, options.converters);
    if (!b) {
        print_error(b.error());
        return 2;
    }
    // No --kind: every kind either run holds, among those with timings.
    std::vector<EntityKind> kinds;
    if (!options.kind.empty()) {
        const auto kind = entity_kind_from_string(options.kind);
        if (!kind) {
            fmt::print(stderr, "perfwatch: error: --kind '{}' is not an entity kind\n", options.kind);
            return 2;
        }
        kinds.push_back(*kind);
    } else {
        for (const EntityKind k : {EntityKind::kernel, EntityKind::memcpy, EntityKind::api_call, EntityKind::nvtx_range}) {
            const auto holds = [&](const RunBatch& r) {
                return std::any_of(r.entities.begin(), r.entities.end(), [&](const Entity& e) { return e.kind == k; });
            };
            if (holds(a->batch) || holds(b->batch)) kinds.push_back(k);
        }
        if (kinds.empty()) kinds.push_back(EntityKind::kernel);
    }
    const std::string gpu_a = gpu_of(a->batch.labels), gpu_b = gpu_of(b->batch.labels);
    const std::string before_name = side_name(*a);
    std::vector<std::pair<EntityKind, RunDiff>> diffs;
    for (const EntityKind k : kinds) {
        DiffOptions d;
        d.kind = k;
        d.min_change_pct = options.min_change_pct;
        diffs.emplace_back(k, diff_runs(a->batch, b->batch, d));
    }
    if (options.format == "json") {
        const auto kind_doc = [](EntityKind k, const RunDiff& diff) {
            nlohmann::json doc = {{"kind", std::string(to_string(k))},
                                  {"summary",
                                   {{"added", diff.added},
                                    {"removed", diff.removed},
                                    {"slower", diff.slower},
                                    {"faster", diff.faster},
                                    {"count_changed", diff.count_changed},
                                    {"unchanged", diff.unchanged},
                                    {"count_before", diff.count_a},
                                    {"count_after", diff.count_b},
                                    {"total_before_ns", diff.total_a},
                                    {"total_after_ns", diff.total_b}}}};
            nlohmann::json entries = nlohmann::json::array();
            for (const DiffEntry& e : diff.entries)
                entries.push_back({{"name", e.name},
                                   {"status", std::string(to_string(e.status))},
                                   {"count_before", e.count_a},
                                   {"count_after", e.count_b},
                                   {"total_before_ns", e.total_a},
                                   {"total_after_ns", e.total_b},
                                   {"mean_before_ns", e.mean_a},
                                   {"mean_after_ns", e.mean_b},
                                   {"change_pct", e.change_pct},
                                   {"confidence", e.confidence ? nlohmann::json(*e.confidence) : nlohmann::json(nullptr)},
                                   {"property_changes", e.property_changes}});
            doc["entries"] = std::move(entries);
            return doc;
        };
        nlohmann::json doc = {{"before", before_name}, {"after", side_name(*b)}};
        if (!options.kind.empty()) {
            doc.update(kind_doc(diffs.front().first, diffs.front().second));
        } else {
            nlohmann::json all = nlohmann::json::array();
            for (const auto& [k, diff] : diffs) all.push_back(kind_doc(k, diff));
            doc["kinds"] = std::move(all);
        }
        fmt::print("{}\n", doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
        return 0;
    }
    fmt::print("before: {}\nafter:  {}\n", before_name, side_name(*b));
    if (gpu_a != gpu_b)
        fmt::print("note: the runs ran on different GPU models ({} / {}); timings are not comparable as a regression\n",
                   gpu_a.empty() ? "unknown" : gpu_a, gpu_b.empty() ? "unknown" : gpu_b);
    for (const auto& [kind, diff] : diffs) {
        const double change = diff.total_a > 0 ? 100 * (diff.total_b - diff.total_a) / diff.total_a : 0;
        fmt::print("\n{}s: {} added, {} removed, {} slower, {} faster, {} count changed, {} unchanged\n", to_string(kind),
                   diff.added, diff.removed, diff.slower, diff.faster, diff.count_changed, diff.unchanged);
        fmt::print("{}: {} -> {}\n", kind == EntityKind::kernel ? "launches" : "count", value_text(diff.count_a),
                   value_text(diff.count_b));
        fmt::print("total time: {} -> {} ({:+.1f}%)\n\n", time_text(diff.total_a), time_text(diff.total_b), change);
        fmt::print("{:<13} {:>17} {:>23} {:>23} {:>8} {:>6}  {}\n", "status", "count", "total", "mean", "change", "conf",
                   "name");
        for (const DiffEntry& e : diff.entries) {
            const bool both = e.status != DiffEntry::Status::added && e.status != DiffEntry::Status::removed;
            fmt::print("{:<13} {:>17} {:>23} {:>23} {:>8} {:>6}  {}\n", to_string(e.status),
                       fmt::format("{} -> {}", value_text(e.count_a), value_text(e.count_b)),
                       fmt::format("{} -> {}", time_text(e.total_a), time_text(e.total_b)),
                       fmt::format("{} -> {}", time_text(e.mean_a), time_text(e.mean_b)),
                       both ? fmt::format("{:+.1f}%", e.change_pct) : "",
                       e.confidence ? fmt::format("{:.0f}%", 100 * *e.confidence) : "", e.name);
            for (const std::string& p : e.property_changes) fmt::print("{:<13} {}\n", "", p);
        }
    }
    return 0;
}

class DiffCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("diff", "Compare two runs entity by entity: added, removed, slower, faster");
        cmd->add_option("before", m_options.before, "Run id or report file")->required();
        cmd->add_option("after", m_options.after, "Run id or report file")->required();
        cmd->add_option("--db", m_options.db_path, "Database: SQLite file or postgresql:// URI for run ids (default $PERFWATCH_DB or perfwatch.db)");
        cmd->add_option("--kind", m_options.kind, "Entities to compare: kernel, memcpy, api_call, nvtx_range (default: every kind the runs hold)")
            ->check(CLI::IsMember({"kernel", "memcpy", "api_call", "nvtx_range"}));
        cmd->add_option("--min-change", m_options.min_change_pct, "Smaller changes of the per-launch time are unchanged "
                                                                  "(percent, default 5)");
        cmd->add_option("--format", m_options.format, "text or json")->check(CLI::IsMember({"text", "json"}));
        return cmd;
    }
    int run(const Context& c) override {
        m_options.db_path = c.db_or_default(m_options.db_path);
        m_options.converters = c.config.converters;
        return run_diff(m_options);
    }

private:
    DiffCommandOptions m_options;
};

}  // namespace

std::unique_ptr<Command> make_diff_command() { return std::make_unique<DiffCommand>(); }

}  // namespace perfwatch::cli
