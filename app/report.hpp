#pragma once

#include <cstdint>
#include <string>

#include "notify/html_report.hpp"
#include "storage/db.hpp"

namespace perfwatch {

// A kernel's kind for the "GPU time by kernel type" chart: the collector's kernel_type where it
// has one (Kineto's COMM), else from the name (GEMM, convolution, attention, ...).
std::string kernel_category(const Entity& kernel);

// Gathers what run `run_id`'s HTML report shows: its labels and summary, GPU time per kernel
// type, the top kernels, its stored findings ranked, and for each regression finding the
// metric's trend over up to 30 comparable runs with the baseline band and change point.
Result<HtmlReport> build_html_report(const Db& db, std::int64_t run_id);

// Writes run `run_id`'s report to `path` (through a temporary file, renamed into place).
Result<void> write_html_report(const Db& db, std::int64_t run_id, const std::string& path);

}  // namespace perfwatch
