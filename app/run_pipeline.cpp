#include "app/run_pipeline.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "app/cli/common.hpp"
#include "app/report.hpp"
#include "engine/job.hpp"
#include "notify/alerts.hpp"
#include "notify/sinks.hpp"
#include "web/query.hpp"

namespace perfwatch {

RunPipeline::RunPipeline(Db& db, const RuleSet& rules, Options options)
    : m_db(db), m_rules(rules), m_options(std::move(options)) {
    if (!m_options.now_ms) m_options.now_ms = &perfwatch::now_ms;
}

Result<RunStepResult> RunPipeline::run(const RunBatch& batch, const std::vector<Finding>& also_alert) {
    RunStepResult out;
    const std::uint64_t before_store = m_db.statements_run();
    auto stored = m_db.store(batch);
    out.storing_statements = m_db.statements_run() - before_store;
    if (!stored) return std::unexpected(stored.error());
    out.stored = *stored;
    if (!m_options.owner.empty()) {
        // Another daemon of the fleet may have stored it a moment before and be evaluating it.
        const std::int64_t now = m_options.now_ms();
        const auto lease = m_options.config != nullptr ? m_options.config->lease : std::chrono::milliseconds(60000);
        auto mine = m_db.claim_run(stored->run_id, m_options.owner, now + lease.count(), now);
        if (!mine) return std::unexpected(mine.error());
        if (*mine == Db::RunClaim::held) {
            out.state = RunStepResult::State::held;
            return out;
        }
        if (*mine == Db::RunClaim::processed) {
            out.state = RunStepResult::State::already_evaluated;
            return out;
        }
    }
    // Through the cache when there is one: this run is in the baseline of the runs that follow.
    std::shared_ptr<const StoredRun> run;
    if (m_options.cache != nullptr) {
        auto cached = m_options.cache->get(m_db, stored->run_id);
        if (!cached) return std::unexpected(cached.error());
        run = *cached;
    } else {
        auto loaded = m_db.load(stored->run_id);
        if (!loaded) return std::unexpected(loaded.error());
        if (*loaded) run = std::make_shared<const StoredRun>(std::move(**loaded));
    }
    if (!run) {
        Error e{m_db.name(), 0, 0, false, "a stored run vanished"};
        e.kind = ErrorKind::database;
        return std::unexpected(e);
    }
    PipelineOptions options;
    options.cache = m_options.cache;
    options.baseline_run = m_options.baseline_run;
    options.record_checks = m_options.record_checks;
    options.mark_processed = false;
    auto outcome = process_run(m_db, m_rules, *run, options);
    if (!outcome) return std::unexpected(outcome.error());
    const Config* config = m_options.config;
    if (config != nullptr && !config->reports_directory.empty()) {
        const std::string file = fmt::format("run-{}.html", stored->run_id);
        std::error_code ec;
        std::filesystem::create_directories(config->reports_directory, ec);
        const std::string path = (std::filesystem::path(config->reports_directory) / file).string();
        if (auto written = write_html_report(m_db, stored->run_id, path); !written)
            out.report_error = written.error().to_string();
        else if (!config->reports_base_url.empty())
            out.report_url = config->reports_base_url + file;
    }
    // The dashboard's run page, where one is published, is where alerts point.
    if (config != nullptr && !config->dashboard_base_url.empty())
        out.report_url = fmt::format("{}run/{}", config->dashboard_base_url, stored->run_id);
    // With an explicit baseline nothing is followed over runs, and the run stays as the history left it.
    if (!m_options.baseline_run) {
        auto queued = complete(*run, *outcome, also_alert, out);
        if (!queued) return std::unexpected(queued.error());
        out.queued = *queued;
    }
    out.run = std::move(run);
    out.outcome = std::move(*outcome);
    return out;
}

// The alerts go to the outbox in the transaction that marks the run processed: a crash before it
// re-evaluates the run, and the same keys are enqueued once.
Result<std::size_t> RunPipeline::complete(const StoredRun& run, const RunOutcome& outcome,
                                          const std::vector<Finding>& also_alert, RunStepResult& out) {
    std::vector<OutboxMessage> messages;
    const Config* config = m_options.config;
    const bool held = m_options.hold_rank_alerts && job_key(run.batch.labels).has_value();
    if (config != nullptr && config->route && !held) {
        std::vector<ResolvedAlert> resolved;
        for (const RegressionEvent& e : outcome.events) {
            if (e.kind != RegressionEvent::Kind::resolved) continue;
            Severity severity = Severity::warning;
            for (const CompiledRule& r : m_rules.rules)
                if (r.spec.id == e.state.rule) severity = r.spec.severity;
            resolved.push_back(resolved_alert(e.state, severity));
        }
        auto silences = m_db.silences().list(m_options.now_ms());
        if (!silences) return std::unexpected(silences.error());
        std::vector<Finding> findings = outcome.evaluation.findings;
        findings.insert(findings.end(), also_alert.begin(), also_alert.end());
        auto groups = group_alerts(*config->route, run, findings, resolved, 50, *silences,
                                   &out.silenced, config->inhibit_rules, &out.inhibited);
        std::set<std::string> every_run;
        for (const Receiver& r : config->receivers)
            if (const Sink* sink = find_sink(r.type); sink != nullptr && sink->every_run()) every_run.insert(r.name);
        add_every_run_groups(*config->route, run, every_run, groups);
        const auto commit = run.batch.labels.find("commit");
        const std::string commit_url =
            commit == run.batch.labels.end() ? std::string() : web::commit_link(config->dashboard_commit_url, commit->second);
        for (AlertGroup& g : groups) {
            g.report_url = out.report_url;
            g.commit_url = commit_url;
            // A regression opened or resolved by this run links to its dashboard page.
            if (config->dashboard_base_url.empty()) continue;
            for (AlertItem& a : g.alerts)
                for (const RegressionEvent& e : outcome.events)
                    if (e.state.id > 0 && e.state.rule == a.rule && to_string(e.state.entity_kind) == a.entity_kind &&
                        (e.state.entity_kind == EntityKind::run || e.state.entity_name == a.entity_name))
                        a.url = fmt::format("{}regression/{}", config->dashboard_base_url, e.state.id);
        }
        auto built = outbox_messages(m_db.outbox(), std::move(groups), m_options.now_ms());
        if (!built) return std::unexpected(built.error());
        messages = std::move(*built);
    }
    return m_db.complete_run(run.id, messages);
}

}  // namespace perfwatch
