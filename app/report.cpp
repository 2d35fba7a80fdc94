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
#include "engine/trend.hpp"
#include "app/job_view.hpp"
#include "core/vocabulary.hpp"
#include "core/text.hpp"

namespace perfwatch {

namespace {

double kernel_time(const Entity& e) {
    if (auto total = e.value("duration_total")) return *total;
    return e.value("duration").value_or(0) * e.value("launches").value_or(1);
}

}  // namespace

std::string kernel_category(const Entity& kernel) {
    if (auto it = kernel.attributes.find("kernel_type"); it != kernel.attributes.end() && it->second == "COMM")
        return "Communication";
    const std::string name = ascii_lower(kernel.name);
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
    r.run = RunRef{run.id, run.batch.source, run.batch.format, run.batch.labels, run.batch.notes, {}, {}, run_gpu_time(run.batch)};
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

    // A job's run: one row per rank, as the job view prints it.
    JobRankTable job = job_rank_table(run.batch);
    ReportTable ranks{"ranks", "Ranks of the job", std::move(job.header), std::move(job.rows)};
    if (!ranks.rows.empty()) r.tables.push_back(std::move(ranks));

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

    for (const Finding& f : r.findings) {
        if (!f.comparison) continue;
        auto trend = trend_for(db, run, f);
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
