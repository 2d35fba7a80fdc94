#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "notify/format.hpp"
#include "core/model.hpp"
#include "core/trend.hpp"

namespace perfwatch {

// One bar of a chart: a label and a value in `unit` ("ns" prints as a time).
struct ReportBar {
    std::string label;
    double value = 0;
    std::string detail;  // shown after the value ("1,204 launches")
};

// A table of text cells (a job's ranks), every cell escaped when rendered.
struct ReportTable {
    std::string id, title;
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
};

// Everything one run's HTML report shows, already chosen and ordered.
struct HtmlReport {
    RunRef run;
    std::string ingested_at;
    std::string generated_at;
    std::vector<std::pair<std::string, std::string>> summary;  // caption, value
    std::vector<ReportBar> kernel_types;  // GPU time (ns) per kind of kernel
    std::vector<ReportBar> top_kernels;   // GPU time (ns), largest first
    std::vector<ReportTable> tables;      // after the summary (a job's ranks)
    std::vector<Finding> findings;        // ranked by impact
    std::vector<Trend> trends;            // one per regression
};

// One self-contained HTML page (inline CSS and SVG, no script, no network): labels, summary,
// tables, GPU time by kernel type and the top kernels as bar charts (where the run has kernels), the findings with their guidance,
// and a trend chart per regression with its baseline band and change point. Printable.
std::string render_html_report(const HtmlReport& report);

}  // namespace perfwatch
