#include "app/commands.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "app/config.hpp"
#include "app/report.hpp"
#include "app/rule_tests.hpp"
#include "collectors/collector.hpp"
#include "engine/diff.hpp"
#include "engine/evaluate.hpp"
#include "engine/pipeline.hpp"
#include "engine/rules.hpp"
#include "notify/alerts.hpp"
#include "notify/format.hpp"
#include "storage/db.hpp"
#include "core/vocabulary.hpp"

#include <fmt/ranges.h>
#include <set>

namespace perfwatch {

void print_error(const Error& e) {
    fmt::print(stderr, "perfwatch: {}: {}\n", e.skipped ? "skipped" : "error", e.to_string());
}

std::optional<Db> open_db(const std::string& path) {
    auto db = Db::open(path);
    if (!db) {
        print_error(db.error());
        return std::nullopt;
    }
    return std::move(*db);
}

namespace {

std::string value_text(double v) {
    if (v == static_cast<double>(static_cast<long long>(v)) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
    return fmt::format("{:.6g}", v);
}

std::string time_text(double ns) { return *format_in_unit(ns, "time"); }

std::optional<std::int64_t> as_run_id(const std::string& text) {
    std::int64_t id = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
    return id;
}

std::int64_t count_kind(const RunBatch& b, EntityKind kind) {
    return std::count_if(b.entities.begin(), b.entities.end(), [&](const Entity& e) { return e.kind == kind; });
}

struct IngestedRun {
    StoreOutcome stored;
    RunBatch batch;
};

// Collects and stores one report: one run, or one per session of a log holding several. Prints
// nothing; the caller reports.
Result<std::vector<IngestedRun>> ingest_one(Db& db, const std::string& file, const LabelSources& labels,
                                            const std::vector<Converter>& converters) {
    auto runs = collect_labelled_runs(file, labels, converters);
    if (!runs) return std::unexpected(runs.error());
    std::vector<IngestedRun> out;
    for (RunBatch& batch : *runs) {
        auto stored = db.store(batch);
        if (!stored) return std::unexpected(stored.error());
        out.push_back({*stored, std::move(batch)});
    }
    return out;
}

RunRef run_ref(const StoredRun& run) {
    return RunRef{run.id, run.batch.source, run.batch.format, run.batch.labels, run.batch.notes, {}, {}};
}

std::string show_text(const StoredRun& run) {
    const RunBatch& b = run.batch;
    std::string out = fmt::format("run {}\n  source:   {}\n  format:   {}", run.id, b.source, b.format);
    if (!b.format_detail.empty()) out += fmt::format(" ({})", b.format_detail);
    out += fmt::format("\n  sha256:   {}\n", b.sha256);
    if (!b.tool_version.empty()) out += fmt::format("  version:  {}\n", b.tool_version);
    if (b.captured_at) out += fmt::format("  captured: {}\n", *b.captured_at);
    out += fmt::format("  ingested: {}\n", run.ingested_at);
    for (const auto& [k, v] : b.labels) out += fmt::format("  label:    {}={}\n", k, v);
    for (const auto& n : b.notes) out += fmt::format("  note:     {}\n", n);
    for (const Entity& e : b.entities) {
        const bool child = e.kind == EntityKind::launch;
        const std::string pad = child ? "    " : "  ";
        out += fmt::format("\n{}{} '{}'\n", pad, to_string(e.kind), e.name);
        for (const auto& [k, v] : e.attributes) out += fmt::format("{}  {:<34} {}\n", pad, k, v);
        for (const Metric& m : e.metrics) {
            out += fmt::format("{}  {:<34} {:>16} {:<8}", pad, m.name, value_text(m.value), m.unit);
            if (!m.tool_name.empty())
                out += fmt::format(" ({}{}{})", m.tool_name, m.tool_unit.empty() ? "" : ", ", m.tool_unit);
            out += '\n';
        }
        for (const ToolFinding& f : e.tool_findings) {
            out += fmt::format("{}  {} {}", pad, f.type, f.rule.empty() ? f.section : f.rule);
            if (f.speedup_pct)
                out += fmt::format(" (est. {}speedup {}%)", f.speedup_type.empty() ? "" : f.speedup_type + " ",
                                   value_text(*f.speedup_pct));
            out += fmt::format(": {}\n", f.text);
        }
    }
    return out;
}

std::string show_json(const StoredRun& run) {
    const RunBatch& b = run.batch;
    nlohmann::json doc = {{"id", run.id},
                          {"source", b.source},
                          {"sha256", b.sha256},
                          {"format", b.format},
                          {"format_detail", b.format_detail},
                          {"tool_version", b.tool_version},
                          {"captured_at", b.captured_at ? nlohmann::json(*b.captured_at) : nlohmann::json(nullptr)},
                          {"ingested_at", run.ingested_at},
                          {"labels", b.labels},
                          {"notes", b.notes}};
    nlohmann::json entities = nlohmann::json::array();
    for (const Entity& e : b.entities) {
        nlohmann::json metrics = nlohmann::json::object(), units = nlohmann::json::object(),
                       tool = nlohmann::json::object();
        for (const Metric& m : e.metrics) {
            metrics[m.name] = m.value;
            units[m.name] = m.unit;
            if (!m.tool_name.empty()) tool[m.name] = {{"name", m.tool_name}, {"unit", m.tool_unit}};
        }
        nlohmann::json findings = nlohmann::json::array();
        for (const ToolFinding& f : e.tool_findings)
            findings.push_back({{"rule", f.rule},
                                {"type", f.type},
                                {"section", f.section},
                                {"text", f.text},
                                {"speedup_type", f.speedup_type},
                                {"speedup_pct", f.speedup_pct ? nlohmann::json(*f.speedup_pct) : nlohmann::json(nullptr)}});
        nlohmann::json je = {{"kind", std::string(to_string(e.kind))},
                             {"name", e.name},
                             {"metrics", metrics},
                             {"units", units},
                             {"tool_metrics", tool},
                             {"attributes", e.attributes},
                             {"tool_findings", findings}};
        if (e.parent >= 0) je["parent"] = e.parent;
        entities.push_back(std::move(je));
    }
    doc["entities"] = std::move(entities);
    return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

int run_ingest(const IngestOptions& options) {
    auto db = open_db(options.db_path);
    if (!db) return 2;
    int status = 0;
    for (const std::string& file : options.files) {
        auto ingested = ingest_one(*db, file, options.labels, options.converters);
        if (!ingested) {
            print_error(ingested.error());
            if (!ingested.error().skipped) status = 2;
            continue;
        }
        for (auto& [stored, batch] : *ingested) {
            const std::string benchmark = label_value(batch.labels, "benchmark");
            const std::string session = batch.labels.contains("session")
                                            ? fmt::format(" session {}", label_value(batch.labels, "session"))
                                            : "";
            if (stored.inserted)
                fmt::print("run {}: {}{} ({}, {} kernels, {} launches; benchmark '{}'{})\n", stored.run_id, file,
                           session, batch.format, count_kind(batch, EntityKind::kernel),
                           value_text(batch.entities[batch.run_entity()].value("launches").value_or(0)), benchmark,
                           stored.content_run ? fmt::format("; same content as run {}", *stored.content_run) : "");
            else
                fmt::print("run {}: {}{} already stored (same content and labels; benchmark '{}')\n", stored.run_id,
                           file, session, benchmark);
        }
    }
    return status;
}

int run_show(const ShowOptions& options) {
    auto db = open_db(options.db_path);
    if (!db) return 2;
    auto run = db->load(options.run_id);
    if (!run) {
        print_error(run.error());
        return 2;
    }
    if (!*run) {
        fmt::print(stderr, "perfwatch: error: {}: no run {}\n", db->name(), options.run_id);
        return 2;
    }
    fmt::print("{}", options.format == "json" ? show_json(**run) : show_text(**run));
    return 0;
}

namespace {

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
    auto stored = ingest_one(db, text, labels, options.converters);
    if (!stored) return std::unexpected(stored.error());
    return stored->back().stored.run_id;  // a log of several sessions: its last one
}

}  // namespace

int run_check(const CheckOptions& options) {
    const RuleSet rules = compile_rules(load_rule_files(options.rule_paths));
    for (const Diagnostic& d : rules.diagnostics) fmt::print(stderr, "{}\n", d.to_string());
    if (rules.has_errors()) return 2;

    auto db = open_db(options.db_path.empty() ? std::string(":memory:") : options.db_path);
    if (!db) return 2;
    PipelineOptions pipeline;
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
    for (const std::string& file : options.files) {
        // A report set aside (no converter tool) was not checked: the gate cannot pass on it.
        const std::uint64_t before_store = db->statements_run();
        auto ingested = ingest_one(*db, file, options.labels, options.converters);
        storing_statements += db->statements_run() - before_store;
        if (!ingested) {
            print_error(ingested.error());
            status = 2;
            continue;
        }
        for (const IngestedRun& stored : *ingested) {
            auto run = db->load(stored.stored.run_id);
            if (!run || !*run) {
                print_error(run ? Error{file, 0, 0, false, "stored run vanished"} : run.error());
                status = 2;
                continue;
            }
            auto outcome = process_run(*db, rules, **run, pipeline);
            if (!outcome) {
                print_error(outcome.error());
                status = 2;
                continue;
            }
            RunRef ref = run_ref(**run);
            ref.baselines = outcome->baselines;
            for (const RegressionEvent& e : outcome->events) ref.regressions.push_back(regression_sentence(e));
            report.runs.push_back(std::move(ref));
            for (const DecidedCheck& c : outcome->evaluation.checks) {
                const Entity& e = (*run)->batch.entities[c.entity];
                report.cases.push_back({(*run)->id, rules.rules[c.rule].spec.id, e.kind, e.name});
            }
            report.evaluated += outcome->evaluation.evaluated;
            report.not_applicable += outcome->evaluation.not_applicable;
            for (Finding& f : outcome->evaluation.findings) report.findings.push_back(std::move(f));
        }
    }
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
    else
        fmt::print("{}", format_check_text(report));
    if (status != 0) return status;
    for (const Finding& f : report.findings)
        if (f.severity >= fail_on) return 1;
    return 0;
}

int run_metrics() {
    fmt::print("{:<36} {:<8} {:<22} {}\n", "metric", "unit", "entities", "meaning");
    for (const MetricDef& d : metric_vocabulary())
        fmt::print("{:<36} {:<8} {:<22} {}\n", d.name, d.unit, d.kinds, d.description);
    return 0;
}

int run_rules_lint(const std::vector<std::string>& given) {
    const std::vector<std::string> paths = expand_rule_paths(given);
    const std::vector<RuleFile> files = load_rule_files(paths);
    const RuleSet rules = compile_rules(files);
    std::size_t warnings = 0;
    for (const Diagnostic& d : rules.diagnostics) {
        fmt::print(stderr, "{}\n", d.to_string());
        if (d.level == Diagnostic::Level::warning) ++warnings;
    }
    std::size_t own = 0;
    for (const RuleFile& f : files)
        if (std::find(paths.begin(), paths.end(), f.file) != paths.end()) own += f.rules.size();
    fmt::print("{} rule file(s), {} rule entr{} linted: {} error(s), {} warning(s); {} rules in effect\n", paths.size(),
               own, own == 1 ? "y" : "ies", rules.error_count(), warnings, rules.rules.size());
    return rules.has_errors() ? 1 : 0;
}

namespace {

std::string loc_text(const SourceLoc& l) { return fmt::format("{}:{}:{}", l.file, l.line, l.col); }

}  // namespace

int run_rules_list(const std::vector<std::string>& paths, bool verbose) {
    const RuleSet rules = compile_rules(load_rule_files(paths));
    for (const Diagnostic& d : rules.diagnostics)
        if (d.level == Diagnostic::Level::error) fmt::print(stderr, "{}\n", d.to_string());
    if (rules.has_errors()) return 2;
    auto print = [&](const RuleSpec& r, bool enabled) {
        fmt::print("{:<34} {:<8} {:<10} {}{}\n", r.id, enabled ? to_string(r.severity) : "disabled",
                   to_string(r.scope), loc_text(r.loc), r.overridden_at.empty() ? "" : " (overridden)");
        if (!verbose) return;
        for (const SourceLoc& o : r.overridden_at) fmt::print("    overridden at {}\n", loc_text(o));
        for (const auto& [name, text] : r.lets) fmt::print("    let {} = {}\n", name, text.text);
        fmt::print("    when: {}\n", r.when.text);
        for (const SourceText& a : r.appends) fmt::print("      and: {}    ({})\n", a.text, loc_text(a.loc));
        if (r.estimated_speedup) fmt::print("    estimated_speedup: {}\n", r.estimated_speedup->text);
        if (r.min_share) fmt::print("    min_share: {}\n", r.min_share->text);
        if (r.tool_finding) fmt::print("    tool_finding: {}\n", r.tool_finding->text);
    };
    for (const CompiledRule& r : rules.rules) print(r.spec, true);
    for (const RuleSpec& r : rules.disabled) print(r, false);
    return 0;
}

int run_rules_test(const std::vector<std::string>& paths) {
    const RuleTestSummary s = run_rule_tests(expand_rule_paths(paths));
    for (const std::string& m : s.messages) fmt::print(stderr, "{}\n", m);
    fmt::print("{} test(s): {} passed, {} failed, {} skipped{}\n", s.tests, s.tests - s.failed - s.skipped, s.failed,
               s.skipped, s.broken ? " (a test file or its rules did not load)" : "");
    return s.failed > 0 || s.broken ? 1 : 0;
}

int run_config_check(const std::string& path) {
    ConfigLoad load = load_config(path);
    if (load.ok()) {
        for (Diagnostic& d : check_watch_directories(load.config)) load.diagnostics.push_back(std::move(d));
        const RuleSet rules = compile_rules(load_rule_files(load.config.rules));
        load.diagnostics.insert(load.diagnostics.end(), rules.diagnostics.begin(), rules.diagnostics.end());
    }
    for (const Diagnostic& d : load.diagnostics) fmt::print(stderr, "{}\n", d.to_string());
    if (has_errors(load.diagnostics)) return 1;
    fmt::print("{}: ok ({} rule file(s), {} converter(s), {} watched director{}{})\n", path, load.config.rules.size(),
               load.config.converters.size(), load.config.watch.size(), load.config.watch.size() == 1 ? "y" : "ies",
               load.config.database ? ", database " + *load.config.database : "");
    return 0;
}

int run_formats(const std::vector<Converter>& converters) {
    for (const Collector* c : collectors()) fmt::print("{:<18} {}\n", c->id(), c->description());
    fmt::print("\nbinary reports, converted by the vendor tool when it is on PATH (skipped otherwise):\n");
    for (const Converter& c : converters) {
        const std::string program = find_program(c.command.empty() ? "" : c.command[0]);
        fmt::print("{:<18} {} ({})\n", c.extension, describe_command(c, "{input}"),
                   program.empty() ? "not on PATH" : program);
    }
    return 0;
}

namespace {


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

}  // namespace

int run_diff(const DiffCommand& options) {
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

int run_history(const HistoryCommand& options) {
    auto db = open_db(options.db_path);
    if (!db) return 2;
    auto runs = db->find_runs(options.labels);
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
    auto series = db->metric_series(kind, options.entity.empty() ? "run" : options.entity, options.metric, ids);
    if (!series) {
        print_error(series.error());
        return 2;
    }
    std::set<std::string> gpus;
    for (const SeriesPoint& p : *series) gpus.insert(gpu_of(*labels_of.at(p.run_id)));
    std::vector<double> values;
    for (const SeriesPoint& p : *series) values.push_back(p.value);
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
        for (const SeriesPoint& p : *series)
            points.push_back({{"run", p.run_id}, {"value", p.value}, {"labels", *labels_of.at(p.run_id)}});
        for (std::size_t i = 0; i < cps.size(); ++i)
            changes.push_back({{"run", (*series)[cps[i]].run_id},
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
               series->size());
    if (gpus.size() > 1)
        fmt::print("note: these runs ran on {} GPU models; narrow with --label gpu=...\n", gpus.size());
    std::size_t next = 0;
    for (std::size_t i = 0; i < series->size(); ++i) {
        const SeriesPoint& p = (*series)[i];
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

int run_baseline_pin(const std::string& db_path, long long run_id, const std::string& comment) {
    auto db = open_db(db_path);
    if (!db) return 2;
    auto pinned = db->pin_baseline(run_id, comment);
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
    auto removed = db->unpin_baseline(run_id);
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
    auto pins = db->baseline_pins();
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
    auto open = db->regressions(true);
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

namespace {

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}


std::string utc_text(std::int64_t ms) {
    return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::sys_seconds(std::chrono::seconds(ms / 1000)));
}

}  // namespace

std::optional<std::int64_t> parse_until(const std::string& text, std::int64_t now) {
    if (!text.empty() && std::isdigit(static_cast<unsigned char>(text.back())) == 0 && text.find('-') == std::string::npos) {
        double n = 0;
        const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size() - 1, n);
        if (ec != std::errc() || p != text.data() + text.size() - 1 || n <= 0) return std::nullopt;
        const std::map<char, double> unit{{'m', 60e3}, {'h', 3600e3}, {'d', 86400e3}, {'w', 604800e3}};
        const auto it = unit.find(text.back());
        if (it == unit.end()) return std::nullopt;
        return now + static_cast<std::int64_t>(n * it->second);
    }
    for (const char* format : {"%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"}) {
        std::tm tm{};
        const char* end = strptime(text.c_str(), format, &tm);
        if (end != nullptr && *end == '\0') return static_cast<std::int64_t>(timegm(&tm)) * 1000;
    }
    return std::nullopt;
}

int run_silence_add(const SilenceAdd& options) {
    Silence silence;
    for (const std::string& m : options.matchers) {
        const auto eq = m.find('=');
        if (eq == std::string::npos || eq == 0) {
            fmt::print(stderr, "perfwatch: error: --match '{}' is not KEY=VALUE\n", m);
            return 2;
        }
        silence.matchers[m.substr(0, eq)] = m.substr(eq + 1);
    }
    silence.created_ms = now_ms();
    const auto until = parse_until(options.until, silence.created_ms);
    if (!until || *until <= silence.created_ms) {
        fmt::print(stderr, "perfwatch: error: --until '{}' is not a future time (2026-12-01T08:00:00Z, 2026-12-01) "
                           "or a duration (30m, 4h, 2d)\n",
                   options.until);
        return 2;
    }
    silence.until_ms = *until;
    silence.comment = options.comment;
    auto db = open_db(options.db_path);
    if (!db) return 2;
    auto id = db->add_silence(silence);
    if (!id) {
        print_error(id.error());
        return 2;
    }
    fmt::print("silence {}: {} until {}\n", *id, fmt::join(options.matchers, " "), utc_text(silence.until_ms));
    return 0;
}

int run_silence_list(const std::string& db_path, bool all) {
    auto db = open_db(db_path);
    if (!db) return 2;
    const std::int64_t now = now_ms();
    auto list = db->silences(all ? std::nullopt : std::optional<std::int64_t>(now));
    if (!list) {
        print_error(list.error());
        return 2;
    }
    if (list->empty()) fmt::print("no {}silences\n", all ? "" : "active ");
    for (const Silence& s : *list) {
        std::vector<std::string> matchers;
        for (const auto& [k, v] : s.matchers) matchers.push_back(k + "=" + v);
        fmt::print("{:>4}  {:<8} until {}  {}{}\n", s.id, s.until_ms > now ? "active" : "expired", utc_text(s.until_ms),
                   fmt::join(matchers, " "), s.comment.empty() ? "" : "  # " + s.comment);
    }
    return 0;
}

int run_silence_expire(const std::string& db_path, long long id) {
    auto db = open_db(db_path);
    if (!db) return 2;
    auto done = db->expire_silence(id, now_ms());
    if (!done) {
        print_error(done.error());
        return 2;
    }
    if (!*done) {
        fmt::print(stderr, "perfwatch: error: {}: no silence {}\n", db_path, id);
        return 2;
    }
    fmt::print("silence {} expired\n", id);
    return 0;
}

int run_outbox(const std::string& db_path, std::size_t limit) {
    auto db = open_db(db_path);
    if (!db) return 2;
    auto messages = db->outbox().newest(limit);
    if (!messages) {
        print_error(messages.error());
        return 2;
    }
    if (messages->empty()) fmt::print("the outbox is empty\n");
    for (const OutboxMessage& m : *messages) {
        auto group = alert_group_from_json(m.payload);
        fmt::print("{:>5}  {:<7} {:>2} attempt(s)  {:<16} run {:<5} {}\n", m.id, to_string(m.state), m.attempts, m.receiver,
                   m.run_id, group ? group->title() : "(unreadable payload)");
        if (!m.last_error.empty()) fmt::print("       last error: {}\n", m.last_error);
        if (m.state == MessageState::pending && m.attempts > 0)
            fmt::print("       next attempt: {}\n", utc_text(m.next_attempt_ms));
    }
    return 0;
}

int run_report(const std::string& db_path, long long run_id, const std::string& html_path) {
    auto db = open_db(db_path);
    if (!db) return 2;
    if (auto written = write_html_report(*db, run_id, html_path); !written) {
        Error e = written.error();
        if (e.file.empty()) e.file = db_path;
        print_error(e);
        return 2;
    }
    fmt::print("run {}: report written to {}\n", run_id, html_path);
    return 0;
}

}  // namespace perfwatch
