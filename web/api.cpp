#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "engine/series_index.hpp"
#include "web/page.hpp"
#include "web/pages.hpp"

// The JSON API (/api/v1/...): what the pages show, as documents for programs.
namespace perfwatch::web {

namespace {

using json = nlohmann::json;

constexpr std::size_t k_max_listed = 1000;
constexpr std::size_t k_max_searched = 50;

json optional_number(const std::optional<double>& v) { return v ? json(*v) : json(); }
json optional_id(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(); }

HttpResponse document(const json& doc) { return json_response(doc.dump(-1, ' ', false, json::error_handler_t::replace)); }

json regression_json(const RegressionState& r) {
    return {{"id", r.id},
            {"status", std::string(to_string(r.status))},
            {"rule", r.rule},
            {"series", r.series},
            {"entity", {{"kind", std::string(to_string(r.entity_kind))}, {"name", r.entity_name}}},
            {"metric", r.metric},
            {"baseline", r.baseline},
            {"current", optional_number(r.current)},
            {"change_pct", optional_number(r.change_pct)},
            {"opened_run", r.opened_run},
            {"first_bad_run", optional_id(r.first_bad_run)},
            {"last_bad_run", r.last_bad_run},
            {"resolved_run", optional_id(r.resolved_run)},
            {"resolution", r.resolution},
            {"comment", r.comment},
            {"triage", std::string(to_string(r.triage))},
            {"assignee", r.assignee},
            {"bug_url", r.bug_url},
            {"since", r.since}};
}

json sharpness_json(const Sharpness& s) {
    return {{"confidence_pct", optional_number(s.confidence_pct)},
            {"noise_pct", optional_number(s.noise_pct)},
            {"noise_floored", s.noise_floored},
            {"detectable_pct", optional_number(s.detectable_pct)},
            {"runs_before", s.runs_before}};
}

// A regression as GET /api/v1/regressions/ID answers: with its sharpness and triage history.
HttpResponse regression_document(PageContext& ctx, const RegressionState& r) {
    auto indexed = ctx.series_index();
    if (!indexed) return json_error(500, indexed.error().to_string());
    auto sharp = sharpness_of(ctx, **indexed, r);
    if (!sharp) return json_error(500, sharp.error().to_string());
    auto events = ctx.db.regressions().events(r.id);
    if (!events) return json_error(500, events.error().to_string());
    json doc = regression_json(r);
    doc["sharpness"] = sharpness_json(*sharp);
    json history = json::array();
    for (const TriageEvent& e : *events) history.push_back({{"at", e.at}, {"author", e.author}, {"field", e.field}, {"value", e.value}});
    doc["triage_history"] = std::move(history);
    return document(doc);
}

}  // namespace

HttpResponse api_series(PageContext& ctx, const Query&) {
    auto indexed = ctx.series_index();
    if (!indexed) return json_error(500, indexed.error().to_string());
    auto open = ctx.db.browse().open_regressions_by_series();
    if (!open) return json_error(500, open.error().to_string());
    json list = json::array();
    for (const SeriesEntry* s : (*indexed)->series()) {
        const auto regressions = open->find(s->key);
        list.push_back({{"key", s->key},
                        {"title", series_title(s->key)},
                        {"format", s->format},
                        {"labels", s->labels},
                        {"runs", s->runs.size()},
                        {"latest_run", s->runs.back().id},
                        {"metric", std::string(run_metric_of(*s))},
                        {"open_regressions", regressions == open->end() ? 0 : regressions->second}});
    }
    return document({{"series", list}});
}

HttpResponse api_series_values(PageContext& ctx, const Query& q) {
    auto indexed = ctx.series_index();
    if (!indexed) return json_error(500, indexed.error().to_string());
    const SeriesEntry* s = (*indexed)->find(q.get("key"));
    if (s == nullptr) return json_error(404, "no series '" + q.get("key") + "'");
    const std::string entity = q.get("entity");
    const std::string metric = q.has("metric") ? q.get("metric") : std::string(entity.empty() ? run_metric_of(*s) : "duration");
    std::vector<std::int64_t> ids;
    for (const SeriesRun& r : s->runs) ids.push_back(r.id);
    auto values = ctx.db.browse().metric_values(entity.empty() ? EntityKind::run : EntityKind::kernel,
                                                entity.empty() ? std::nullopt : std::optional(entity), metric, ids);
    if (!values) return json_error(500, values.error().to_string());
    json points = json::array();
    for (const SeriesRun& r : s->runs) {
        const auto it = values->find(r.id);
        if (it == values->end()) continue;
        points.push_back({{"run", r.id}, {"commit", r.commit}, {"ingested_at", r.ingested_at}, {"value", it->second.value},
                          {"launches", optional_number(it->second.launches)}});
    }
    return document({{"key", s->key}, {"entity", entity}, {"metric", metric}, {"points", points}});
}

HttpResponse api_run(PageContext& ctx, std::int64_t run_id) {
    auto run = ctx.db.load(run_id);
    if (!run) return json_error(500, run.error().to_string());
    if (!*run) return json_error(404, fmt::format("no run {}", run_id));
    auto findings = ctx.db.load_findings(run_id);
    if (!findings) return json_error(500, findings.error().to_string());
    const StoredRun& r = **run;
    json kernels = json::array(), run_metrics = json::object();
    for (const Entity& e : r.batch.entities) {
        json metrics = json::object();
        for (const Metric& m : e.metrics) metrics[m.name().str()] = m.value;
        if (e.kind == EntityKind::run)
            run_metrics = std::move(metrics);
        else if (e.kind == EntityKind::kernel && kernels.size() < k_max_listed)
            kernels.push_back({{"name", e.name}, {"metrics", std::move(metrics)}});
    }
    json list = json::array();
    for (const Finding& f : *findings)
        list.push_back({{"rule", f.rule},
                        {"title", f.title},
                        {"severity", std::string(to_string(f.severity))},
                        {"entity", {{"kind", std::string(to_string(f.entity_kind))}, {"name", f.entity_name}}},
                        {"message", f.message},
                        {"impact", optional_number(f.impact)},
                        {"share_pct", optional_number(f.share_pct)}});
    return document({{"id", r.id},
                     {"source", r.batch.source},
                     {"format", r.batch.format},
                     {"labels", r.batch.labels},
                     {"ingested_at", r.ingested_at},
                     {"metrics", run_metrics},
                     {"kernels", kernels},
                     {"findings", list}});
}

HttpResponse api_regressions(PageContext& ctx, const Query& q) {
    const std::string status = q.has("status") ? q.get("status") : "open";
    if (status != "all" && !regression_status_from_string(status))
        return json_error(400, fmt::format("status '{}' is not open, resolved, accepted, invalid or all", status));
    auto all = ctx.db.regressions().list(status == "open");
    if (!all) return json_error(500, all.error().to_string());
    auto indexed = ctx.series_index();
    if (!indexed) return json_error(500, indexed.error().to_string());
    json list = json::array();
    for (const RegressionState& r : *all) {
        if (status != "all" && to_string(r.status) != status) continue;
        if (q.has("series") && r.series != q.get("series")) continue;
        if (list.size() == k_max_listed) break;
        auto sharp = sharpness_of(ctx, **indexed, r);
        if (!sharp) return json_error(500, sharp.error().to_string());
        list.push_back(regression_json(r));
        list.back()["sharpness"] = sharpness_json(*sharp);
    }
    return document({{"regressions", list}});
}

HttpResponse api_regression(PageContext& ctx, std::int64_t id) {
    auto found = ctx.db.regressions().find(id);
    if (!found) return json_error(500, found.error().to_string());
    if (!*found) return json_error(404, fmt::format("no regression {}", id));
    return regression_document(ctx, **found);
}

HttpResponse api_triage(PageContext& ctx, std::int64_t id, const Query& form) {
    auto changed = apply_triage(ctx, id, form);
    if (!changed) return json_error(changed.error().first, changed.error().second);
    return regression_document(ctx, *changed);
}

HttpResponse api_kernels(PageContext& ctx, const Query& q) {
    std::optional<std::int64_t> run = q.id("run");
    if (!run) {
        if (!q.has("key")) return json_error(400, "which run? (run=ID, or key=SERIES for its newest run)");
        auto indexed = ctx.series_index();
        if (!indexed) return json_error(500, indexed.error().to_string());
        const SeriesEntry* s = (*indexed)->find(q.get("key"));
        if (s == nullptr) return json_error(404, "no series '" + q.get("key") + "'");
        run = s->runs.back().id;
    }
    auto loaded = ctx.db.load(*run);
    if (!loaded) return json_error(500, loaded.error().to_string());
    if (!*loaded) return json_error(404, fmt::format("no run {}", *run));
    struct Row {
        const Entity* entity;
        double gpu_time;
    };
    std::vector<Row> rows;
    for (const Entity& e : (*loaded)->batch.entities) {
        if (e.kind != EntityKind::kernel) continue;
        const auto d = e.value("duration");
        rows.push_back({&e, d ? *d * e.value("launches").value_or(1) : 0});
    }
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.gpu_time > b.gpu_time; });
    json list = json::array();
    for (const Row& r : rows) {
        if (list.size() == k_max_listed) break;
        list.push_back({{"name", r.entity->name},
                        {"duration", optional_number(r.entity->value("duration"))},
                        {"duration_median", optional_number(r.entity->value("duration_median"))},
                        {"launches", optional_number(r.entity->value("launches"))},
                        {"gpu_time", r.gpu_time}});
    }
    return document({{"run", *run}, {"kernels", list}, {"total", rows.size()}});
}

HttpResponse api_search(PageContext& ctx, const Query& q) {
    const std::string needle = q.get("q");
    if (needle.empty()) return json_error(400, "search for what? (q=...)");
    auto hits = search(ctx, needle, k_max_searched);
    if (!hits) return json_error(500, hits.error().to_string());
    json series = json::array(), kernels = json::array(), commits = json::array();
    for (const SeriesEntry* s : hits->series) series.push_back({{"key", s->key}, {"title", series_title(s->key)}, {"latest_run", s->runs.back().id}});
    for (const auto& [name, run] : hits->kernels) kernels.push_back({{"name", name}, {"latest_run", run}});
    for (const auto& [commit, run] : hits->commits) commits.push_back({{"commit", commit}, {"latest_run", run}});
    return document({{"q", needle}, {"series", series}, {"kernels", kernels}, {"commits", commits}});
}

}  // namespace perfwatch::web
