#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace perfwatch {

// One point of a trend: a run's level of the metric.
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

}  // namespace perfwatch
