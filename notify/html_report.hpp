#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "notify/format.hpp"
#include "core/model.hpp"

namespace perfwatch {

// One bar of a chart: a label and a value in `unit` ("ns" prints as a time).
struct ReportBar {
    std::string label;
    double value = 0;
    std::string detail;  // shown after the value ("1,204 launches")
};

struct TrendPoint {
    std::int64_t run_id = 0;
    std::string label;  // the commit, or "run N"
    double value = 0;
};

// A metric of one entity over its comparable runs, oldest first, the last point being the run.
struct Trend {
    std::string title;  // "kernel 'gemm': duration"
    std::string metric;
    std::vector<TrendPoint> points;
    double baseline = 0;  // median of the runs before the last
    double band_low = 0;  // values inside [band_low, band_high] are not a regression
    double band_high = 0;
    std::optional<std::size_t> change_point;  // index of the first point after a detected shift
};

// Everything one run's HTML report shows, already chosen and ordered.
struct HtmlReport {
    RunRef run;
    std::string ingested_at;
    std::string generated_at;
    std::vector<std::pair<std::string, std::string>> summary;  // caption, value
    std::vector<ReportBar> kernel_types;  // GPU time (ns) per kind of kernel
    std::vector<ReportBar> top_kernels;   // GPU time (ns), largest first
    std::vector<Finding> findings;        // ranked by impact
    std::vector<Trend> trends;            // one per regression
};

// One self-contained HTML page (inline CSS and SVG, no script, no network): labels, summary,
// GPU time by kernel type and the top kernels as bar charts, the findings with their guidance,
// and a trend chart per regression with its baseline band and change point. Printable.
std::string render_html_report(const HtmlReport& report);

}  // namespace perfwatch
