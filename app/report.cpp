#include "app/report.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "engine/evaluate.hpp"
#include "engine/history.hpp"
#include "engine/stats.hpp"
#include "storage/vocabulary.hpp"

namespace perfwatch {

namespace {

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

double kernel_time(const Entity& e) {
    if (auto total = e.value("duration_total")) return *total;
    return e.value("duration").value_or(0) * e.value("launches").value_or(1);
}

// The trend of `metric` on (kind, name) over the comparable runs before `run`, then `run`.
Result<std::optional<Trend>> trend_for(const Db& db, const StoredRun& run, EntityKind kind, const std::string& name,
                                       const std::string& metric, const std::string& title) {
    BaselineSpec spec;
    spec.runs = 30;
    const std::string branch = label_value(run.batch.labels, "branch");
    if (!branch.empty()) spec.branch = branch;
    auto baseline = select_baseline(db, run, spec);
    if (!baseline) return std::unexpected(baseline.error());
    std::vector<std::int64_t> ids;
    std::map<std::int64_t, std::string> labels;
    for (const auto& r : baseline->runs) {
        ids.push_back(r->id);
        labels[r->id] = label_value(r->batch.labels, "commit");
    }
    ids.push_back(run.id);
    labels[run.id] = label_value(run.batch.labels, "commit");
    auto series = db.metric_series(kind, name, metric, ids);
    if (!series) return std::unexpected(series.error());
    if (series->size() < 2) return std::optional<Trend>{};
    Trend t;
    t.title = title;
    t.metric = metric;
    std::vector<double> before, all;
    for (const SeriesPoint& p : *series) {
        const std::string& commit = labels[p.run_id];
        t.points.push_back({p.run_id, commit.empty() ? fmt::format("run {}", p.run_id) : commit, p.value});
        all.push_back(p.value);
    }
    before.assign(all.begin(), all.end() - 1);
    t.baseline = median(before);
    const double half = std::max(3 * mad_sigma(before), std::fabs(t.baseline) * 0.05);
    t.band_low = t.baseline - half;
    t.band_high = t.baseline + half;
    // As the regression rules name the first bad run: a newest value alone may start a shift.
    ChangePointOptions options;
    options.min_segment = 2;
    options.min_last = 1;
    options.significance = 0.05;
    if (const Split s = best_split(all, options); s.index > 0 && s.p_value <= options.significance)
        t.change_point = s.index;
    else if (all.back() < t.band_low || all.back() > t.band_high)
        t.change_point = all.size() - 1;  // no earlier shift: it begins with this run (as first_bad() says)
    return std::optional<Trend>{std::move(t)};
}

}  // namespace

std::string kernel_category(const Entity& kernel) {
    if (auto it = kernel.attributes.find("kernel_type"); it != kernel.attributes.end() && it->second == "COMM")
        return "Communication";
    const std::string name = lower(kernel.name);
    struct Category {
        std::string_view label;
        std::array<std::string_view, 8> needles;
    };
    static constexpr std::array<Category, 7> k_categories{{
        {"Communication", {"nccl", "rccl", "allreduce", "all_reduce", "allgather", "reducescatter", "alltoall", ""}},
        {"Attention", {"attention", "flash", "fmha", "sdpa", "mha_", "", "", ""}},
        {"GEMM / matmul", {"gemm", "matmul", "cutlass", "cublas", "wmma", "xmma", "cijk_", "gemv"}},
        {"Convolution", {"conv", "cudnn", "winograd", "implicit_", "fft", "", "", ""}},
        {"Reduction / normalization", {"reduce", "reduction", "softmax", "norm", "sum_", "mean", "argmax", "scan"}},
        {"Elementwise", {"elementwise", "vectorized", "unrolled", "add", "mul", "relu", "gelu", "copy"}},
        {"Memory", {"memcpy", "memset", "fill", "", "", "", "", ""}},
    }};
    for (const Category& c : k_categories)
        for (const std::string_view needle : c.needles)
            if (!needle.empty() && name.find(needle) != std::string::npos) return std::string(c.label);
    return "Other";
}

Result<HtmlReport> build_html_report(const Db& db, std::int64_t run_id) {
    auto loaded = db.load(run_id);
    if (!loaded) return std::unexpected(loaded.error());
    if (!*loaded) return fail("", 0, fmt::format("no run {}", run_id));
    const StoredRun& run = **loaded;
    HtmlReport r;
    r.run = RunRef{run.id, run.batch.source, run.batch.format, run.batch.labels, run.batch.notes, {}, {}};
    r.ingested_at = run.ingested_at;
    r.generated_at = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                                 std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));

    std::map<std::string, double> by_type;
    std::vector<const Entity*> kernels;
    double launches = 0;
    for (const Entity& e : run.batch.entities) {
        if (e.kind != EntityKind::kernel) continue;
        kernels.push_back(&e);
        by_type[kernel_category(e)] += kernel_time(e);
        launches += e.value("launches").value_or(1);
    }
    for (const auto& [type, ns] : by_type) r.kernel_types.push_back({type, ns, ""});
    std::sort(r.kernel_types.begin(), r.kernel_types.end(),
              [](const ReportBar& a, const ReportBar& b) { return a.value > b.value; });
    std::sort(kernels.begin(), kernels.end(),
              [](const Entity* a, const Entity* b) { return kernel_time(*a) > kernel_time(*b); });
    for (std::size_t i = 0; i < kernels.size() && i < 15; ++i) {
        const double n = kernels[i]->value("launches").value_or(1);
        r.top_kernels.push_back({kernels[i]->name, kernel_time(*kernels[i]),
                                 fmt::format("{:.0f} launch{}", n, n == 1 ? "" : "es")});
    }

    auto findings = db.load_findings(run_id);
    if (!findings) return std::unexpected(findings.error());
    r.findings = std::move(*findings);
    rank_findings(r.findings);
    std::map<Severity, int> counts;
    for (const Finding& f : r.findings) ++counts[f.severity];
    double gpu_time = 0;
    for (const Entity& e : run.batch.entities)
        if (e.kind == EntityKind::run) gpu_time = e.value("gpu_time").value_or(0);
    if (gpu_time == 0)
        for (const auto& [type, ns] : by_type) gpu_time += ns;
    r.summary = {{"GPU time in kernels", *format_in_unit(gpu_time, "time")},
                 {"kernels", fmt::format("{}", kernels.size())},
                 {"launches", fmt::format("{:.0f}", launches)},
                 {"findings", fmt::format("{} error{}, {} warning{}, {} info", counts[Severity::error],
                                          counts[Severity::error] == 1 ? "" : "s", counts[Severity::warning],
                                          counts[Severity::warning] == 1 ? "" : "s", counts[Severity::info])}};
    if (const std::string gpu = label_value(run.batch.labels, "gpu"); !gpu.empty()) r.summary.push_back({"GPU", gpu});

    for (const Finding& f : r.findings)
        for (const auto& [key, value] : f.metrics) {
            if (!key.starts_with("baseline(") || !key.ends_with(")")) continue;
            std::string metric = key.substr(9, key.size() - 10);
            const bool run_level = metric.starts_with("run.");
            if (run_level) metric = metric.substr(4);
            const EntityKind kind = run_level ? EntityKind::run : f.entity_kind;
            const std::string name = run_level ? "run" : f.entity_name;
            auto trend = trend_for(db, run, kind, name, metric,
                                   fmt::format("{} '{}': {} ({})", to_string(kind), name, metric, f.rule));
            if (!trend) return std::unexpected(trend.error());
            if (*trend) r.trends.push_back(std::move(**trend));
        }
    return r;
}

Result<void> write_html_report(const Db& db, std::int64_t run_id, const std::string& path) {
    auto report = build_html_report(db, run_id);
    if (!report) return std::unexpected(report.error());
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << render_html_report(*report);
        if (!out) return fail(path, 0, "cannot write the report");
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) return fail(path, 0, fmt::format("cannot write the report: {}", ec.message()));
    return {};
}

}  // namespace perfwatch
