#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "app/job_assembly.hpp"
#include "app/job_view.hpp"

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

int run_job_list(const std::string& db_path, std::size_t limit) {
    auto db = open_db(db_path);
    if (!db) return 2;
    auto jobs = db->jobs().list(limit);
    if (!jobs) {
        print_error(jobs.error());
        return 2;
    }
    fmt::print("{} job(s)\n", jobs->size());
    for (const StoredJob& j : *jobs) {
        std::vector<int> ranks;
        for (const JobRank& r : j.ranks) ranks.push_back(r.rank);
        fmt::print("  run {}  {}  ranks {} of {}  [{}]\n", j.job_run, j.ingested_at, rank_list(ranks),
                   label_value(j.labels, std::string(k_ranks_label)), labels_text(j.labels));
    }
    auto pending = pending_jobs(*db);
    if (!pending) {
        print_error(pending.error());
        return 2;
    }
    for (const PendingJob& p : *pending) {
        std::vector<int> ranks;
        for (const JobRank& r : p.ranks) ranks.push_back(r.rank);
        fmt::print("  waiting: ranks {} of {} [{}]\n", rank_list(ranks), p.job.world_size, labels_text(p.job.labels));
    }
    return 0;
}

int run_job_show(const std::string& db_path, long long run_id) {
    auto db = open_db(db_path);
    if (!db) return 2;
    auto run = db->load(run_id);
    if (!run) {
        print_error(run.error());
        return 2;
    }
    if (!*run || (*run)->batch.format != "job") {
        fmt::print(stderr, "perfwatch: error: {}: run {} is no job (perfwatch job list names them)\n", db->name(), run_id);
        return 2;
    }
    fmt::print("{}", format_job_text(**run));
    auto findings = db->load_findings(run_id);
    if (!findings) {
        print_error(findings.error());
        return 2;
    }
    fmt::print("\n{} finding(s)\n", findings->size());
    for (const Finding& f : *findings)
        fmt::print("  [{}] {} — {} '{}': {}\n", to_string(f.severity), f.title, to_string(f.entity_kind), f.entity_name,
                   f.message);
    return 0;
}

class JobCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("job", "Distributed jobs (the ranks of one job read as one): list, show");
        cmd->require_subcommand(1);
        cmd->add_option("--db", m_db, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or perfwatch.db)");
        m_list = cmd->add_subcommand("list", "Stored jobs, newest first, then the ranks still waiting for their job");
        m_list->add_option("--limit", m_limit, "At most this many jobs (default 50)");
        m_show = cmd->add_subcommand("show", "A job's figures, its ranks and its findings");
        m_show->add_option("run", m_run, "The job's run id (job list)")->required();
        return cmd;
    }
    int run(const Context& c) override {
        const std::string db = c.db_or_default(m_db);
        if (m_list->parsed()) return run_job_list(db, m_limit);
        return run_job_show(db, m_run);
    }

private:
    CLI::App* m_list = nullptr;
    CLI::App* m_show = nullptr;
    std::string m_db;
    std::size_t m_limit = 50;
    long long m_run = 0;
};

}  // namespace

std::unique_ptr<Command> make_job_command() { return std::make_unique<JobCommand>(); }

}  // namespace perfwatch::cli
