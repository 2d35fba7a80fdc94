#include "notify/format.hpp"

#include "notify/comparison_json.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <tuple>

#include "notify/entity_name.hpp"
#include "notify/escape.hpp"
#include "core/vocabulary.hpp"

namespace perfwatch {

namespace {

// Run `id` among the report's runs; nullptr when it is not there.
const RunRef* run_of(const CheckReport& report, std::int64_t id) {
    for (const RunRef& r : report.runs)
        if (r.id == id) return &r;
    return nullptr;
}

// The report path of run `id` among the report's runs; empty when it is not there.
std::string_view source_of(const CheckReport& report, std::int64_t id) {
    const RunRef* r = run_of(report, id);
    return r != nullptr ? std::string_view(r->source) : std::string_view();
}

nlohmann::json optional_number(const std::optional<double>& v) {
    if (!v) return nullptr;
    return *v;
}

// The finding a check's headline names: the first at warning or above; nullptr when none is.
const Finding* headline_finding(const CheckReport& report) {
    for (const Finding& f : report.findings)
        if (f.severity > Severity::info) return &f;
    return nullptr;
}

}  // namespace

std::optional<double> run_gpu_time(const RunBatch& batch) {
    for (const Entity& e : batch.entities)
        if (e.kind == EntityKind::run) return e.value("gpu_time");
    return std::nullopt;
}

std::string check_headline(const CheckReport& report) {
    const Finding* f = headline_finding(report);
    if (f == nullptr)
        return report.findings.empty() ? "headline: nothing to act on: no finding"
                                       : "headline: nothing to act on: no warning above the impact floors";
    const auto [kind, name] = shown_entity(to_string(f->entity_kind), f->entity_name, source_of(report, f->run_id));
    std::string out = fmt::format("headline: {} ({} '{}')", f->title, kind, name);
    const RunRef* run = run_of(report, f->run_id);
    if (f->impact && run != nullptr && run->gpu_time && *run->gpu_time > 0)
        out += fmt::format(": fixing it could save about {} of the run's {} of GPU time ({:.1f}%)",
                           format_metric("duration", *f->impact / 100.0 * *run->gpu_time),
                           format_metric("duration", *run->gpu_time), *f->impact);
    else if (f->impact)
        out += fmt::format(": fixing it could save about {:.1f}% of the run's GPU time", *f->impact);
    else if (f->comparison)
        out += fmt::format(": {} {:+.1f}% against its baseline", f->comparison->metric, f->comparison->change_pct);
    if (report.runs.size() > 1) out += fmt::format(" [run {}]", f->run_id);
    return out;
}

std::string format_check_text(const CheckReport& report) {
    std::string out = check_headline(report) + "\n";
    for (const RunRef& r : report.runs) {
        out += fmt::format("run {}: {} ({})", r.id, r.source, r.format);
        if (!r.labels.empty()) out += fmt::format(" [{}]", labels_text(r.labels));
        out += '\n';
        if (auto b = r.labels.find("benchmark"); b != r.labels.end())
            out += fmt::format("  benchmark: {} (compared only with runs of the same benchmark)\n", b->second);
        for (const std::string& n : r.notes) out += fmt::format("  note: {}\n", n);
        for (const std::string& b : r.baselines) out += fmt::format("  baseline: {}\n", b);
        for (const std::string& g : r.regressions) out += fmt::format("  regression {}\n", g);
    }
    for (const std::string& v : report.views) out += "\n" + v;
    std::map<Severity, int> counts;
    for (const Finding& f : report.findings) ++counts[f.severity];
    out += fmt::format("\n{} finding(s): {} error, {} warning, {} info ({} checks evaluated, {} not applicable)\n",
                       report.findings.size(), counts[Severity::error], counts[Severity::warning],
                       counts[Severity::info], report.evaluated, report.not_applicable);
    int rank = 0;
    for (const Finding& f : report.findings) {
        const auto [kind, name] = shown_entity(to_string(f.entity_kind), f.entity_name, source_of(report, f.run_id));
        out += fmt::format("\n{}. [{}] {} — {} '{}'\n", ++rank, to_string(f.severity), f.title, kind, name);
        std::string facts;
        if (report.runs.size() > 1) facts += fmt::format("run {}", f.run_id);
        auto add = [&](const std::string& s) { facts += (facts.empty() ? "" : ", ") + s; };
        if (f.share_pct) add(fmt::format("{:.1f}% of GPU time", *f.share_pct));
        if (f.estimated_speedup_pct) add(fmt::format("est. speedup {:.1f}%", *f.estimated_speedup_pct));
        if (f.impact) add(fmt::format("impact {:.2f}", *f.impact));
        add(fmt::format("rule {}", f.rule));
        out += fmt::format("   {}\n", facts);
        out += fmt::format("   {}\n", f.message);
    }
    return out;
}

std::string format_check_json(const CheckReport& report) {
    nlohmann::json doc;
    doc["runs"] = nlohmann::json::array();
    for (const RunRef& r : report.runs) {
        doc["runs"].push_back({{"id", r.id}, {"source", r.source}, {"format", r.format}, {"labels", r.labels},
                               {"notes", r.notes}, {"baselines", r.baselines}, {"regressions", r.regressions}});
    }
    doc["findings"] = nlohmann::json::array();
    for (const Finding& f : report.findings) {
        doc["findings"].push_back({
            {"rule", f.rule},
            {"title", f.title},
            {"severity", std::string(to_string(f.severity))},
            {"run", f.run_id},
            {"entity", {{"kind", std::string(to_string(f.entity_kind))}, {"name", f.entity_name}}},
            {"message", f.message},
            {"metrics", f.metrics},
            {"labels", f.labels},
            {"estimated_speedup_pct", optional_number(f.estimated_speedup_pct)},
            {"share_pct", optional_number(f.share_pct)},
            {"impact", optional_number(f.impact)},
        });
        if (const auto& c = f.comparison)
            doc["findings"].back()["comparison"] = comparison_json(*c);
    }
    doc["headline"] = check_headline(report);
    doc["summary"] = {{"findings", report.findings.size()},
                      {"evaluated", report.evaluated},
                      {"not_applicable", report.not_applicable}};
    return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

std::string severity_counts(const std::vector<Finding>& findings) {
    std::map<Severity, int> counts;
    for (const Finding& f : findings) ++counts[f.severity];
    return fmt::format("{} error{}, {} warning{}, {} info", counts[Severity::error], counts[Severity::error] == 1 ? "" : "s",
                       counts[Severity::warning], counts[Severity::warning] == 1 ? "" : "s", counts[Severity::info]);
}

// Markdown inline text of a pull-request comment: one line, formatting, mentions and links inert.
std::string md(std::string_view text) { return escape_for(Medium::markdown, text); }

// Inline code (a kernel name) in a comment or table cell.
std::string md_code(std::string_view text) { return code_span(Medium::markdown, text); }

std::vector<const Finding*> regression_rows(const std::vector<Finding>& findings) {
    std::vector<const Finding*> rows;
    for (const Finding& f : findings)
        if (f.comparison) rows.push_back(&f);
    return rows;
}

std::string xml(std::string_view text) { return escape_for(Medium::xml, text); }

}  // namespace

std::string format_check_markdown(const CheckReport& report, std::size_t max_chars) {
    std::string head = fmt::format("### perfwatch: {} finding{} ({})\n\n", report.findings.size(),
                                   report.findings.size() == 1 ? "" : "s", severity_counts(report.findings));
    head += fmt::format("**{}**\n\n", md(check_headline(report)));
    std::size_t shown_runs = 0;
    for (const RunRef& r : report.runs) {
        if (++shown_runs > 10) {
            head += fmt::format("- and {} more runs\n", report.runs.size() - 10);
            break;
        }
        head += fmt::format("- run {}: {} ({})", r.id, md_code(r.source), md(r.format));
        if (!r.labels.empty()) head += fmt::format(" {}", md(labels_text(r.labels)));
        head += "\n";
        for (const std::string& b : r.baselines) head += fmt::format("  - baseline: {}\n", md(b));
    }
    for (const std::string& v : report.views) head += "\n" + code_block(Medium::markdown, v);
    head += fmt::format("\n<sub>{} checks evaluated, {} not applicable</sub>\n", report.evaluated, report.not_applicable);

    // Keeps what fits, leaving room for the closing line.
    const std::size_t budget = max_chars > 400 ? max_chars - 400 : max_chars / 2;
    std::string body = head;
    std::size_t omitted_rows = 0;
    const auto rows = regression_rows(report.findings);
    if (!rows.empty()) {
        body += "\n#### Regressions\n\n| | entity | metric | before | after | change | confidence |\n"
                "|---|---|---|---:|---:|---:|---:|\n";
        for (const Finding* row : rows) {
            const Finding& f = *row;
            const FindingComparison& c = *f.comparison;
            const std::string plain = c.metric.starts_with("run.") ? c.metric.substr(4) : c.metric;
            const auto [kind, name] = shown_entity(to_string(f.entity_kind), f.entity_name, source_of(report, f.run_id));
            const std::string line = fmt::format(
                "| **{}** | {} {} | {} | {} | {} | {:+.1f}% | {} |\n", to_string(f.severity), kind, md_code(name),
                md(plain), format_metric(plain, c.baseline), format_metric(plain, c.current), c.change_pct,
                c.confidence_pct ? fmt::format("{:.1f}%", *c.confidence_pct) : "");
            if (body.size() + line.size() > budget / 2) {
                ++omitted_rows;
                continue;
            }
            body += line;
        }
        if (omitted_rows > 0) body += fmt::format("\n_{} more regressions not shown._\n", omitted_rows);
    }

    body += "\n#### Findings, largest estimated impact first\n\n";
    std::size_t shown = 0;
    for (const Finding& f : report.findings) {
        std::string facts;
        if (f.share_pct) facts += fmt::format("{:.1f}% of GPU time", *f.share_pct);
        if (f.impact) facts += fmt::format("{}impact {:.2f}", facts.empty() ? "" : ", ", *f.impact);
        const auto [kind, name] = shown_entity(to_string(f.entity_kind), f.entity_name, source_of(report, f.run_id));
        std::string item = fmt::format("{}. **[{}] {}**: {} {}{}<br>\n   {} <sub>(rule {})</sub>\n", shown + 1,
                                       to_string(f.severity), md(f.title), kind, md_code(name),
                                       facts.empty() ? std::string() : fmt::format(" ({})", facts), md(f.message),
                                       md_code(f.rule));
        if (body.size() + item.size() > budget) break;
        body += item;
        ++shown;
    }
    if (shown < report.findings.size()) {
        std::vector<Finding> rest(report.findings.begin() + static_cast<std::ptrdiff_t>(shown), report.findings.end());
        body += fmt::format("\n_{} more findings not shown ({}); `perfwatch check` prints them all._\n",
                            rest.size(), severity_counts(rest));
    }
    return body;
}

std::string format_check_junit(const CheckReport& report, Severity fail_on) {
    std::size_t total_tests = 0, total_failures = 0;
    std::string suites;
    for (const RunRef& run : report.runs) {
        // The findings of this run by (rule, kind, entity).
        std::map<std::tuple<std::string, EntityKind, std::string>, std::vector<const Finding*>> by_case;
        for (const Finding& f : report.findings)
            if (f.run_id == run.id) by_case[{f.rule, f.entity_kind, f.entity_name}].push_back(&f);
        std::string cases;
        std::size_t tests = 0, failures = 0;
        for (const CheckCase& c : report.cases) {
            if (c.run_id != run.id) continue;
            ++tests;
            cases += fmt::format("    <testcase name=\"{} '{}'\" classname=\"perfwatch.{}\" time=\"0\"", to_string(c.entity_kind),
                                 xml(c.entity_name), xml(c.rule));
            const auto it = by_case.find({c.rule, c.entity_kind, c.entity_name});
            if (it == by_case.end()) {
                cases += "/>\n";
                continue;
            }
            cases += ">\n";
            std::string out;
            bool failed = false;
            for (const Finding* f : it->second) {
                if (f->severity >= fail_on) {
                    failed = true;
                    cases += fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n", xml(f->title),
                                         to_string(f->severity), xml(f->message));
                } else {
                    out += fmt::format("[{}] {}: {}\n", to_string(f->severity), f->title, f->message);
                }
            }
            if (!out.empty()) cases += fmt::format("      <system-out>{}</system-out>\n", xml(out));
            cases += "    </testcase>\n";
            failures += failed ? 1 : 0;
        }
        std::string properties;
        for (const auto& [k, v] : run.labels)
            properties += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml(k), xml(v));
        suites += fmt::format("  <testsuite name=\"run {}: {}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" "
                              "time=\"0\">\n",
                              run.id, xml(run.source), tests, failures);
        if (!properties.empty()) suites += fmt::format("    <properties>\n{}    </properties>\n", properties);
        suites += cases + "  </testsuite>\n";
        total_tests += tests;
        total_failures += failures;
    }
    return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"perfwatch\" tests=\"{}\" "
                       "failures=\"{}\" errors=\"0\" time=\"0\">\n{}</testsuites>\n",
                       total_tests, total_failures, suites);
}

}  // namespace perfwatch
