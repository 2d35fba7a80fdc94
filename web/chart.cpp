#include "web/chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/vocabulary.hpp"
#include "web/page.hpp"

namespace perfwatch::web {

namespace {

// The indices of the points drawn: all, or per bucket its lowest and highest and every bad one.
std::vector<std::size_t> drawn_points(const std::vector<ChartPoint>& points) {
    std::vector<std::size_t> out;
    if (points.size() <= k_max_drawn_points) {
        out.resize(points.size());
        for (std::size_t i = 0; i < points.size(); ++i) out[i] = i;
        return out;
    }
    const std::size_t buckets = k_max_drawn_points / 2;
    for (std::size_t b = 0; b < buckets; ++b) {
        const std::size_t from = points.size() * b / buckets, to = points.size() * (b + 1) / buckets;
        if (from >= to) continue;
        std::size_t lo = from, hi = from;
        for (std::size_t i = from; i < to; ++i) {
            if (points[i].value < points[lo].value) lo = i;
            if (points[i].value > points[hi].value) hi = i;
            if (points[i].bad) out.push_back(i);
        }
        out.push_back(lo);
        out.push_back(hi);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::string value_text(const std::string& metric, double v) { return format_metric(metric, v); }

}  // namespace

std::string series_chart(const ChartInput& in) {
    const int width = 1100, height = 340, left = 90, right = 20, top = 16, bottom = 34;
    const double plot_w = width - left - right, plot_h = height - top - bottom;
    if (in.points.empty()) return "<p class=\"note\">No run of this series has this metric.</p>\n";
    const std::vector<std::size_t> drawn = drawn_points(in.points);
    double lo = in.points[0].value, hi = lo;
    for (const ChartPoint& p : in.points) {
        lo = std::min(lo, p.value);
        hi = std::max(hi, p.value);
        if (p.band) {
            lo = std::min(lo, p.band->low);
            hi = std::max(hi, p.band->high);
        }
        if (p.second && !in.second_label.empty()) {
            lo = std::min(lo, *p.second);
            hi = std::max(hi, *p.second);
        }
    }
    const double pad = hi > lo ? (hi - lo) * 0.08 : std::max(std::fabs(hi) * 0.05, 1.0);
    lo -= pad;
    hi += pad;
    const std::size_t n = in.points.size();
    auto x_of = [&](std::size_t i) {
        return left + (n <= 1 ? plot_w / 2 : plot_w * static_cast<double>(i) / static_cast<double>(n - 1));
    };
    auto y_of = [&](double v) { return top + plot_h * (hi - v) / (hi - lo); };

    std::string svg = fmt::format("<svg class=\"chart\" id=\"series-chart\" role=\"img\" viewBox=\"0 0 {} {}\" width=\"100%\" "
                                  "preserveAspectRatio=\"xMinYMin meet\" xmlns=\"http://www.w3.org/2000/svg\" "
                                  "data-points=\"{}\" data-drawn=\"{}\">\n",
                                  width, height, n, drawn.size());
    // Regression spans, behind everything.
    const double step = n > 1 ? plot_w / static_cast<double>(n - 1) : plot_w;
    for (const ChartSpan& s : in.spans) {
        const double x0 = x_of(s.from) - step / 2, x1 = x_of(std::min(s.to, n - 1)) + step / 2;
        svg += fmt::format("<a href=\"{}\"><rect class=\"{} span\" data-first=\"{}\" data-last=\"{}\" x=\"{:.1f}\" y=\"{}\" "
                           "width=\"{:.1f}\" height=\"{:.0f}\"><title>{}</title></rect></a>\n",
                           h(s.href), s.css, s.first_run, s.last_run, std::max<double>(x0, left), top, std::max(x1 - std::max<double>(x0, left), 2.0),
                           plot_h, h(s.label));
    }
    // The band as a polygon over the points that have one, in runs of consecutive points.
    for (std::size_t i = 0; i < n;) {
        if (!in.points[i].band) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < n && in.points[j].band) ++j;
        std::string upper, lower, mid;
        for (std::size_t k = i; k < j; ++k) {
            upper += fmt::format("{:.1f},{:.1f} ", x_of(k), y_of(in.points[k].band->high));
            mid += fmt::format("{:.1f},{:.1f} ", x_of(k), y_of(in.points[k].band->median));
        }
        for (std::size_t k = j; k-- > i;) lower += fmt::format("{:.1f},{:.1f} ", x_of(k), y_of(in.points[k].band->low));
        svg += fmt::format("<polygon class=\"band\" points=\"{}{}\"/>\n<polyline class=\"median\" points=\"{}\"/>\n", upper,
                           lower, mid);
        i = j;
    }
    // Axis with five value ticks.
    svg += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{:.0f}\"/>\n", left, top, left, top + plot_h);
    svg += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{:.0f}\" x2=\"{:.0f}\" y2=\"{:.0f}\"/>\n", left, top + plot_h,
                       left + plot_w, top + plot_h);
    for (int t = 0; t <= 4; ++t) {
        const double v = lo + (hi - lo) * t / 4;
        svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 6, y_of(v) + 4,
                           h(value_text(in.metric, v)));
    }
    svg += fmt::format("<text x=\"{}\" y=\"{}\">run {}</text><text x=\"{:.0f}\" y=\"{}\" text-anchor=\"end\">run {}</text>\n",
                       left, height - 10, in.points.front().run, left + plot_w, height - 10, in.points.back().run);
    // Marks: change points and environment changes.
    for (const ChartMark& m : in.marks) {
        if (m.index >= n) continue;
        const double x = x_of(m.index) - (m.index > 0 ? step / 2 : 0);
        svg += fmt::format("<line class=\"{} mark\" x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{:.0f}\"><title>{}</title></line>\n",
                           m.css, x, top, x, top + plot_h, h(m.label));
    }
    // The line and the points.
    std::string line;
    for (const std::size_t i : drawn) line += fmt::format("{:.1f},{:.1f} ", x_of(i), y_of(in.points[i].value));
    svg += fmt::format("<polyline class=\"line\" points=\"{}\"/>\n", line);
    // The second statistic, dashed, through the points that have it.
    const bool second = !in.second_label.empty();
    if (second) {
        std::string dashed;
        for (const std::size_t i : drawn)
            if (in.points[i].second) dashed += fmt::format("{:.1f},{:.1f} ", x_of(i), y_of(*in.points[i].second));
        svg += fmt::format("<polyline class=\"second\" points=\"{}\"><title>{}</title></polyline>\n", dashed, h(in.second_label));
    }
    for (const std::size_t i : drawn) {
        const ChartPoint& p = in.points[i];
        std::string tip = fmt::format("run {}{}: {}", p.run, p.commit.empty() ? "" : ", commit " + p.commit,
                                      value_text(in.metric, p.value));
        if (second && p.second) tip += fmt::format(" ({} {})", in.second_label, value_text(in.metric, *p.second));
        if (p.launches) tip += fmt::format(", {:.0f} launches", *p.launches);
        svg += fmt::format("<a href=\"/run/{}\"><circle class=\"point{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" "
                           "data-run=\"{}\" data-value=\"{}\"{}><title>{}</title></circle></a>\n",
                           p.run, p.bad ? " bad" : "", x_of(i), y_of(p.value), n > 300 ? 2 : 3.5, p.run,
                           fmt::format("{}", p.value), second && p.second ? fmt::format(" data-second=\"{}\"", *p.second) : "", h(tip));
    }
    return svg + "</svg>\n";
}

std::string sparkline(const std::vector<double>& values, std::string_view metric, const std::vector<bool>& marked) {
    if (values.size() < 2) return {};
    const double w = 120, hgt = 24;
    const auto [lo_it, hi_it] = std::minmax_element(values.begin(), values.end());
    // The vertical range spans at least 10% of the middle value: a 0.1% wobble stays flat.
    const double mid = (*lo_it + *hi_it) / 2;
    const double span = std::max({*hi_it - *lo_it, 0.1 * std::abs(mid), 1e-12});
    const double lo = mid - span / 2, hi = mid + span / 2;
    std::string pts, dots;
    for (std::size_t i = 0; i < values.size(); ++i) {
        const double x = w * static_cast<double>(i) / static_cast<double>(values.size() - 1), y = 2 + (hgt - 4) * (hi - values[i]) / (hi - lo);
        pts += fmt::format("{:.1f},{:.1f} ", x, y);
        if (i < marked.size() && marked[i]) dots += fmt::format("<circle class=\"spark-bad\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2\"/>", x, y);
    }
    return fmt::format("<svg class=\"spark\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
                       "xmlns=\"http://www.w3.org/2000/svg\"><polyline points=\"{}\"/>{}</svg> "
                       "<span class=\"note spark-scale\">{} &ndash; {}</span>",
                       w, hgt, w, hgt, pts, dots, h(format_metric(metric, *lo_it)), h(format_metric(metric, *hi_it)));
}

}  // namespace perfwatch::web
