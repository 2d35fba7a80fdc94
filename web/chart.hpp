#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/stats.hpp"

namespace perfwatch::web {

// One run on a series chart.
struct ChartPoint {
    std::int64_t run = 0;
    double value = 0;
    std::optional<double> launches;
    std::string commit;
    std::optional<Band> band;  // the baseline band it was judged in
    bool bad = false;          // inside a regression's bad runs
    std::optional<double> second;  // the second statistic of the same run (ChartInput::second_label)
};

// A span of runs drawn behind the points: a regression from its first bad run to its last.
struct ChartSpan {
    std::size_t from = 0, to = 0;  // point indices, inclusive
    std::int64_t first_run = 0, last_run = 0;  // the regression's first and last bad runs
    std::string css;               // reg-open, reg-resolved, reg-accepted
    std::string label;
    std::string href;
};

// A vertical marker before a point: a change point, an environment change.
struct ChartMark {
    std::size_t index = 0;
    std::string css;  // cp, env
    std::string label;
};

struct ChartInput {
    std::string metric;
    std::vector<ChartPoint> points;  // oldest first
    std::vector<ChartSpan> spans;
    std::vector<ChartMark> marks;
    // When set, the points' `second` values are drawn as a second, dashed line with this name
    // ("median per launch"): the statistic a judgement used beside the one plotted.
    std::string second_label;
};

// At most this many points are drawn; longer series are cut into buckets, each drawn by its
// lowest and highest point (regression runs always drawn).
constexpr std::size_t k_max_drawn_points = 1200;

// The series as an SVG chart (no script): the band, the median, the line, one circle per drawn point
// (a link to its run, a tooltip with commit, value and launches, data-run and data-value
// attributes), spans and marks with their tooltips, and the value axis.
std::string series_chart(const ChartInput& input);

// A small line of `values` of `metric` (no axes), for lists, followed by its scale ("1.2 ms – 1.3
// ms"); the vertical range spans at least 10% of the middle value, so noise stays flat. The values
// whose `marked` entry is true (a regression's bad runs) are drawn as red dots.
std::string sparkline(const std::vector<double>& values, std::string_view metric, const std::vector<bool>& marked = {});

}  // namespace perfwatch::web
