#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>

#include "app/job_assembly.hpp"
#include "app/job_view.hpp"
#include "app/run_pipeline.hpp"
#include "collectors/collector.hpp"
#include "engine/evaluate.hpp"
#include "engine/pipeline.hpp"
#include "engine/rules.hpp"
#include "notify/ci_formats.hpp"

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

struct CheckOptions {
    std::string db_path;  // empty: a temporary in-memory database
    std::vector<std::string> rule_paths;
    LabelSources labels;
    std::string baseline;  // a run id or a report file to compare with; empty: the history
    std::string format = "text";
    std::string fail_on = "error";
    std::vector<std::string> files;
    std::vector<Converter> converters = default_converters();
    ReaderOptions reader;
};

std::string env_or_empty(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? std::string(value) : std::string();
}

// Appends `markdown` to the GitHub job summary file ($GITHUB_STEP_SUMMARY) when one is set;
// false (said on stderr) when it cannot be written.
bool append_step_summary(const std::string& markdown) {
    const std::string path = env_or_empty("GITHUB_STEP_SUMMARY");
    if (path.empty()) return true;
    std::ofstream out(path, std::ios::app | std::ios::binary);
    out << markdown << "\n";
    out.flush();
    if (out) return true;
    print_error(Error{.file = path, .message = "cannot append the job summary ($GITHUB_STEP_SUMMARY)"});
    return false;
}

std::string regression_sentence(const RegressionEvent& e) {
    const RegressionState& r = e.state;
    if (e.kind == RegressionEvent::Kind::resolved)
        return fmt::format("resolved: {} '{}' ({}): {}", to_string(r.entity_kind), r.entity_name, r.rule, r.resolution);
    std::string out = fmt::format("opened: {} '{}' ({}): {} baseline {}", to_string(r.entity_kind), r.entity_name,
                                  r.rule, r.metric, format_metric(r.metric, r.baseline));
    if (r.first_bad_run) out += fmt::format(", shift began at run {}", *r.first_bad_run);
    return out;
}

// The run id `text` names in `db`, or the run stored from the report file `text`.
Result<std::int64_t> baseline_run_id(Db& db, const std::string& text, const CheckOptions& options) {
    std::error_code fs_ec;
    if (const auto id = as_run_id(text); id && !std::filesystem::exists(text, fs_ec)) {
        auto run = db.load(*id);
        if (!run) return std::unexpected(run.error());
        if (!*run) return fail(db.name(), 0, fmt::format("--baseline {}: no run {} in the database", text, *id));
        return *id;
    }
    // A report file: labelled like the checked reports, less the labels naming one build.
    LabelSources labels = options.labels;
    std::erase_if(labels.given, [](const auto& kv) { return is_identity_label(kv.first); });
    auto stored = ingest_one(db, text, labels, options.converters, options.reader);
    if (!stored) return std::unexpected(stored.error());
    return stored->back().stored.run_id;  // a log of several sessions: its last one
}

// Builds and judges the jobs that runs of `checked` are ranks of: each job's run and view join
// `report`, and its ranks' own findings are said once for the job. False when one could not be.
bool judge_jobs(Db& db, RunPipeline& pipeline, const std::set<std::int64_t>& checked, CheckReport& report,
                const std::function<void(const RunStepResult&)>& add_step) {
    auto pending = pending_jobs(db);
    if (!pending) {
        print_error(pending.error());
        return false;
    }
    bool ok = true;
    for (const PendingJob& p : *pending) {
        if (std::none_of(p.ranks.begin(), p.ranks.end(), [&](const JobRank& r) { return checked.contains(r.run_id); }))
            continue;
        auto job = assemble_job(db, pipeline, p);
        if (!job) {
            print_error(job.error());
            ok = false;
            continue;
        }
        add_step(job->step);
        report.views.push_back(format_job_text(*job->step.run));
        std::set<std::int64_t> ranks;
        for (const JobRank& r : job->ranks) ranks.insert(r.run_id);
        std::erase_if(report.findings, [&](const Finding& f) { return ranks.contains(f.run_id); });
        report.findings.insert(report.findings.end(), job->rank_findings.begin(), job->rank_findings.end());
    }
    return ok;
}

// 0: nothing at or above fail_on; 1: findings at or above it; 2: bad usage or unreadable input.
int run_check(const CheckOptions& options) {
    const RuleSet rules = compile_rules(load_rule_files(options.rule_paths));
    for (const Diagnostic& d : rules.diagnostics) fmt::print(stderr, "{}\n", d.to_string());
    if (rules.has_errors()) return 2;

    auto db = open_db(options.db_path.empty() ? std::string(":memory:") : options.db_path);
    if (!db) return 2;
    RunPipeline::Options pipeline;  // no configuration: no alerts, no HTML report, no claim
    pipeline.record_checks = options.format == "junit";
    if (!options.baseline.empty()) {
        auto id = baseline_run_id(*db, options.baseline, options);
        if (!id) {
            print_error(id.error());
            return 2;
        }
        pipeline.baseline_run = *id;
    }
    const Severity fail_on = severity_from_string(options.fail_on).value_or(Severity::error);
    CheckReport report;
    int status = 0;
    std::uint64_t storing_statements = 0;
    RunPipeline run_pipeline(*db, rules, std::move(pipeline));
    std::set<std::int64_t> checked;
    auto add_step = [&](const RunStepResult& step) {
        const StoredRun& run = *step.run;
        const RunOutcome& outcome = step.outcome;
        RunRef ref = run_ref(run);
        ref.baselines = outcome.baselines;
        for (const RegressionEvent& e : outcome.events) ref.regressions.push_back(regression_sentence(e));
        report.runs.push_back(std::move(ref));
        for (const DecidedCheck& c : outcome.evaluation.checks) {
            const Entity& e = run.batch.entities[c.entity];
            report.cases.push_back({run.id, rules.rules[c.rule].spec.id, e.kind, e.name});
        }
        report.evaluated += outcome.evaluation.evaluated;
        report.not_applicable += outcome.evaluation.not_applicable;
        for (const Finding& f : outcome.evaluation.findings) report.findings.push_back(f);
    };
    for (const std::string& file : options.files) {
        // A report set aside (no converter tool) was not checked: the gate cannot pass on it.
        auto batches = collect_labelled_runs(file, options.labels, options.converters, options.reader);
        if (!batches) {
            print_error(batches.error());
            status = 2;
            continue;
        }
        for (const RunBatch& batch : *batches) {
            auto step = run_pipeline.run(batch);
            if (!step) {
                print_error(step.error());
                status = 2;
                continue;
            }
            storing_statements += step->storing_statements;
            checked.insert(step->stored.run_id);
            add_step(*step);
        }
    }
    // Ranks of a distributed job checked here are judged together too, with the ranks given
    // (against the job's own history: not with an explicit baseline, which is one rank's).
    if (options.baseline.empty() && !judge_jobs(*db, run_pipeline, checked, report, add_step)) status = 2;
    rank_findings(report.findings);
    // A measuring aid (ARCHITECTURE.md's figures): the SQL statements this check ran.
    if (std::getenv("PERFWATCH_SQL_STATS") != nullptr)
        fmt::print(stderr, "perfwatch: {} SQL statements ({} storing the reports, {} judging them)\n",
                   db->statements_run(), storing_statements, db->statements_run() - storing_statements);
    if (options.format == "json")
        fmt::print("{}", format_check_json(report));
    else if (options.format == "markdown")
        fmt::print("{}", format_check_markdown(report));
    else if (options.format == "junit")
        fmt::print("{}", format_check_junit(report, fail_on));
    else if (options.format == "github") {
        fmt::print("{}", format_check_github(report, env_or_empty("GITHUB_WORKSPACE")));
        if (!append_step_summary(format_check_markdown(report))) status = 2;
    } else if (options.format == "gitlab")
        fmt::print("{}", format_check_gitlab(report, env_or_empty("CI_PROJECT_DIR")));
    else
        fmt::print("{}", format_check_text(report));
    if (status != 0) return status;
    for (const Finding& f : report.findings)
        if (f.severity >= fail_on) return 1;
    return 0;
}

class CheckCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("check", "Ingest reports, evaluate rules, print findings; exit 1 on "
                                                "findings at or above --fail-on");
        cmd->add_option("--db", m_options.db_path, "Database: SQLite file or postgresql:// URI to keep runs in (default: temporary)");
        cmd->add_option("--rules", m_options.rule_paths, "Extra rule file (repeatable); same id overrides a shipped rule")
            ->allow_extra_args(false);
        cmd->add_option("--label", m_labels, "Label KEY=VALUE for the runs (repeatable)")->allow_extra_args(false);
        cmd->add_option("--baseline", m_options.baseline,
                        "Compare with this run id or report file instead of the history (same GPU model only)");
        cmd->add_option("--format", m_options.format, "text, json, markdown (pull-request comment, < 65,000 characters), "
                                                      "junit (JUnit XML for Jenkins and GitLab), github (workflow "
                                                      "annotations; the Markdown report appended to "
                                                      "$GITHUB_STEP_SUMMARY) or gitlab (Code Quality report)")
            ->check(CLI::IsMember({"text", "json", "markdown", "junit", "github", "gitlab"}));
        cmd->add_option("--fail-on", m_options.fail_on, "info, warning or error (default error)")
            ->check(CLI::IsMember({"info", "warning", "error"}));
        cmd->add_option("files", m_options.files, "Report files")->required();
        return cmd;
    }
    int run(const Context& c) override {
        if (!parse_labels(m_labels, m_options.labels.given)) return 2;
        m_options.labels.path_templates = c.config.path_templates;
        m_options.converters = c.config.converters;
        m_options.reader = c.config.reader;
        m_options.rule_paths.insert(m_options.rule_paths.begin(), c.config.rules.begin(), c.config.rules.end());
        return run_check(m_options);
    }

private:
    CheckOptions m_options;
    std::vector<std::string> m_labels;
};

}  // namespace

std::unique_ptr<Command> make_check_command() { return std::make_unique<CheckCommand>(); }

}  // namespace perfwatch::cli
