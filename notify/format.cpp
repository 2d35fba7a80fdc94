#include "notify/format.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace perfwatch {

namespace {

std::string labels_text(const std::map<std::string, std::string>& labels) {
    std::string out;
    for (const auto& [k, v] : labels) out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, v);
    return out;
}

nlohmann::json optional_number(const std::optional<double>& v) {
    if (!v) return nullptr;
    return *v;
}

}  // namespace

std::string format_check_text(const CheckReport& report) {
    std::string out;
    for (const RunRef& r : report.runs) {
        out += fmt::format("run {}: {} ({})", r.id, r.source, r.format);
        if (!r.labels.empty()) out += fmt::format(" [{}]", labels_text(r.labels));
        out += '\n';
        for (const std::string& n : r.notes) out += fmt::format("  note: {}\n", n);
        for (const std::string& b : r.baselines) out += fmt::format("  baseline: {}\n", b);
        for (const std::string& g : r.regressions) out += fmt::format("  regression {}\n", g);
    }
    std::map<Severity, int> counts;
    for (const Finding& f : report.findings) ++counts[f.severity];
    out += fmt::format("\n{} finding(s): {} error, {} warning, {} info ({} checks evaluated, {} not applicable)\n",
                       report.findings.size(), counts[Severity::error], counts[Severity::warning],
                       counts[Severity::info], report.evaluated, report.not_applicable);
    int rank = 0;
    for (const Finding& f : report.findings) {
        out += fmt::format("\n{}. [{}] {} — {} '{}'\n", ++rank, to_string(f.severity), f.title, to_string(f.entity_kind),
                           f.entity_name);
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
    }
    doc["summary"] = {{"findings", report.findings.size()},
                      {"evaluated", report.evaluated},
                      {"not_applicable", report.not_applicable}};
    return doc.dump(2) + "\n";
}

}  // namespace perfwatch
