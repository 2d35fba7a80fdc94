#include "app/commands.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/config.hpp"
#include "app/rule_tests.hpp"
#include "collectors/collector.hpp"
#include "engine/evaluate.hpp"
#include "engine/rules.hpp"
#include "notify/format.hpp"
#include "storage/db.hpp"
#include "storage/vocabulary.hpp"

namespace perfwatch {

namespace {

void print_error(const Error& e) {
    fmt::print(stderr, "perfwatch: {}: {}\n", e.skipped ? "skipped" : "error", e.to_string());
}

std::string value_text(double v) {
    if (v == static_cast<double>(static_cast<long long>(v)) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
    return fmt::format("{:.6g}", v);
}

std::int64_t count_kind(const RunBatch& b, EntityKind kind) {
    return std::count_if(b.entities.begin(), b.entities.end(), [&](const Entity& e) { return e.kind == kind; });
}

// Collects and stores one report. Prints nothing; the caller reports.
Result<StoreOutcome> ingest_one(Db& db, const std::string& file, const std::map<std::string, std::string>& labels,
                                const std::vector<Converter>& converters, RunBatch* out_batch = nullptr) {
    auto batch = collect_file(file, converters);
    if (!batch) return std::unexpected(batch.error());
    for (const auto& [k, v] : labels) batch->labels[k] = v;
    auto stored = db.store(*batch);
    if (stored && out_batch) *out_batch = std::move(*batch);
    return stored;
}

RunRef run_ref(const StoredRun& run) {
    return RunRef{run.id, run.batch.source, run.batch.format, run.batch.labels, run.batch.notes};
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
    return doc.dump(2) + "\n";
}

}  // namespace

int run_ingest(const IngestOptions& options) {
    auto db = Db::open(options.db_path);
    if (!db) {
        print_error(db.error());
        return 2;
    }
    int status = 0;
    for (const std::string& file : options.files) {
        RunBatch batch;
        auto stored = ingest_one(*db, file, options.labels, options.converters, &batch);
        if (!stored) {
            print_error(stored.error());
            if (!stored.error().skipped) status = 2;
            continue;
        }
        if (stored->inserted)
            fmt::print("run {}: {} ({}, {} kernels, {} launches)\n", stored->run_id, file, batch.format,
                       count_kind(batch, EntityKind::kernel),
                       value_text(batch.entities[batch.run_entity()].value("launches").value_or(0)));
        else
            fmt::print("run {}: {} already stored (same content)\n", stored->run_id, file);
    }
    return status;
}

int run_show(const ShowOptions& options) {
    auto db = Db::open(options.db_path);
    if (!db) {
        print_error(db.error());
        return 2;
    }
    auto run = db->load(options.run_id);
    if (!run) {
        print_error(run.error());
        return 2;
    }
    if (!*run) {
        fmt::print(stderr, "perfwatch: error: {}: no run {}\n", options.db_path, options.run_id);
        return 2;
    }
    fmt::print("{}", options.format == "json" ? show_json(**run) : show_text(**run));
    return 0;
}

int run_check(const CheckOptions& options) {
    const RuleSet rules = compile_rules(load_rule_files(options.rule_paths));
    for (const Diagnostic& d : rules.diagnostics) fmt::print(stderr, "{}\n", d.to_string());
    if (rules.has_errors()) return 2;

    auto db = Db::open(options.db_path.empty() ? std::string(":memory:") : options.db_path);
    if (!db) {
        print_error(db.error());
        return 2;
    }
    const Severity fail_on = severity_from_string(options.fail_on).value_or(Severity::error);
    CheckReport report;
    int status = 0;
    for (const std::string& file : options.files) {
        // A report set aside (no converter tool) was not checked: the gate cannot pass on it.
        auto stored = ingest_one(*db, file, options.labels, options.converters);
        if (!stored) {
            print_error(stored.error());
            status = 2;
            continue;
        }
        auto run = db->load(stored->run_id);
        if (!run || !*run) {
            print_error(run ? Error{file, 0, 0, false, "stored run vanished"} : run.error());
            status = 2;
            continue;
        }
        Evaluation ev = evaluate_run(rules, **run);
        if (auto r = db->store_findings(stored->run_id, ev.findings); !r) {
            print_error(r.error());
            status = 2;
        }
        report.runs.push_back(run_ref(**run));
        report.evaluated += ev.evaluated;
        report.not_applicable += ev.not_applicable;
        for (Finding& f : ev.findings) report.findings.push_back(std::move(f));
    }
    rank_findings(report.findings);
    fmt::print("{}", options.format == "json" ? format_check_json(report) : format_check_text(report));
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

int run_rules_lint(const std::vector<std::string>& paths) {
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
    const RuleTestSummary s = run_rule_tests(paths);
    for (const std::string& m : s.messages) fmt::print(stderr, "{}\n", m);
    fmt::print("{} test(s): {} passed, {} failed, {} skipped{}\n", s.tests, s.tests - s.failed - s.skipped, s.failed,
               s.skipped, s.broken ? " (a test file or its rules did not load)" : "");
    return s.failed > 0 || s.broken ? 1 : 0;
}

int run_config_check(const std::string& path) {
    const ConfigLoad load = load_config(path);
    for (const Diagnostic& d : load.diagnostics) fmt::print(stderr, "{}\n", d.to_string());
    if (!load.ok()) return 1;
    fmt::print("{}: ok ({} rule file(s), {} converter(s){})\n", path, load.config.rules.size(),
               load.config.converters.size(), load.config.database ? ", database " + *load.config.database : "");
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

}  // namespace perfwatch
