#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "engine/history.hpp"
#include "engine/pipeline.hpp"
#include "engine/rules.hpp"

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

int run_baseline_pin(const std::string& db_path, long long run_id, const std::string& comment) {
    auto db = open_db(db_path);
    if (!db) return 2;
    auto pinned = db->pins().pin(run_id, comment);
    if (!pinned) {
        print_error(pinned.error());
        return 2;
    }
    if (!*pinned) {
        fmt::print(stderr, "perfwatch: error: {}: no run {}\n", db->name(), run_id);
        return 2;
    }
    fmt::print("run {} pinned as the baseline of the runs comparable with it\n", run_id);
    return 0;
}

int run_baseline_unpin(const std::string& db_path, long long run_id) {
    auto db = open_db(db_path);
    if (!db) return 2;
    auto removed = db->pins().unpin(run_id);
    if (!removed) {
        print_error(removed.error());
        return 2;
    }
    if (!*removed) {
        fmt::print(stderr, "perfwatch: error: run {} is not pinned\n", run_id);
        return 2;
    }
    fmt::print("run {} unpinned\n", run_id);
    return 0;
}

int run_baseline_show(const std::string& db_path, long long run_id, const std::vector<std::string>& rule_paths) {
    auto db = open_db(db_path);
    if (!db) return 2;
    auto pins = db->pins().list();
    if (!pins) {
        print_error(pins.error());
        return 2;
    }
    fmt::print("{} pinned run(s)\n", pins->size());
    for (const BaselinePin& p : *pins)
        fmt::print("  run {}  pinned {}{}\n", p.run_id, p.pinned_at, p.comment.empty() ? "" : "  " + p.comment);
    if (run_id > 0) {
        auto run = db->load(run_id);
        if (!run || !*run) {
            if (run) fmt::print(stderr, "perfwatch: error: {}: no run {}\n", db->name(), run_id);
            else print_error(run.error());
            return 2;
        }
        const RuleSet rules = compile_rules(load_rule_files(rule_paths));
        std::map<BaselineSpec, std::vector<std::string>> specs;
        for (const CompiledRule& r : rules.rules)
            if (r.uses_history) specs[r.spec.baseline].push_back(r.spec.id);
        for (const auto& [spec, ids] : specs) {
            auto b = select_baseline(*db, **run, spec);
            if (!b) {
                print_error(b.error());
                return 2;
            }
            std::string runs;
            for (const auto& r : b->runs) runs += fmt::format(" {}", r->id);
            fmt::print("\nrun {}: {} (branch {}, up to {} runs{}){}\n  runs:{}\n  rules:", run_id, b->description,
                       spec.branch, spec.runs, spec.match.empty() ? "" : ", matching " + fmt::format("{}", fmt::join(spec.match, ", ")),
                       gpu_of((*run)->batch.labels).empty() ? "" : ", GPU " + gpu_of((*run)->batch.labels),
                       runs.empty() ? " none" : runs);
            for (const std::string& id : ids) fmt::print(" {}", id);
            fmt::print("\n");
        }
    }
    auto open = db->regressions().list(true);
    if (!open) {
        print_error(open.error());
        return 2;
    }
    fmt::print("\n{} open regression(s)\n", open->size());
    for (const RegressionState& r : *open)
        fmt::print("  {} {} '{}': {} baseline {}, opened at run {}{}, {} run(s) back inside\n", r.rule,
                   to_string(r.entity_kind), r.entity_name, r.metric, format_metric(r.metric, r.baseline), r.opened_run,
                   r.first_bad_run ? fmt::format(" (shift began at run {})", *r.first_bad_run) : "", r.inside_runs);
    return 0;
}

class BaselineCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("baseline", "Pinned baselines: pin, unpin, show");
        cmd->require_subcommand(1);
        cmd->add_option("--db", m_db, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or perfwatch.db)");
        m_pin = cmd->add_subcommand("pin", "Make a run the baseline of the runs comparable with it");
        m_pin->add_option("run", m_run, "Run id")->required();
        m_pin->add_option("--comment", m_comment, "Why (shown by baseline show)");
        m_unpin = cmd->add_subcommand("unpin", "Remove a pin");
        m_unpin->add_option("run", m_run, "Run id")->required();
        auto* show = cmd->add_subcommand("show", "Pins, open regressions, and a run's baselines");
        show->add_option("run", m_run, "Run id: show the baseline each history rule uses for it");
        return cmd;
    }
    int run(const Context& c) override {
        const std::string db = c.db_or_default(m_db);
        if (m_pin->parsed()) return run_baseline_pin(db, m_run, m_comment);
        if (m_unpin->parsed()) return run_baseline_unpin(db, m_run);
        return run_baseline_show(db, m_run, c.config.rules);
    }

private:
    CLI::App* m_pin = nullptr;
    CLI::App* m_unpin = nullptr;
    std::string m_db, m_comment;
    long long m_run = 0;
};

}  // namespace

std::unique_ptr<Command> make_baseline_command() { return std::make_unique<BaselineCommand>(); }

}  // namespace perfwatch::cli
