#include "notify/html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "notify/entity_name.hpp"
#include "notify/escape.hpp"
#include "core/text.hpp"
#include "core/vocabulary.hpp"

namespace perfwatch {

namespace {

std::string esc(std::string_view text) { return escape_for(Medium::html, text); }

std::string time_of(double ns) { return *format_in_unit(ns, "time"); }

// Labels longer than the chart's label column are cut, with the whole name as a tooltip.
std::string short_label(const std::string& label, std::size_t max = 48) {
    return label.size() <= max ? label : std::string(utf8_prefix(label, max - 3)) + "...";
}

constexpr const char* k_palette[] = {"#3b6fb6", "#e0823d", "#4f9d69", "#c8504b", "#8c6bb1", "#a3875a", "#d977b0",
                                     "#7f7f7f"};

// A horizontal bar chart: a label column, bars scaled to the largest value, the value after each.
std::string bar_chart(const std::string& id, const std::vector<ReportBar>& bars, double total) {
    if (bars.empty()) return "<p class=\"empty\">No kernels in this report.</p>\n";
    const int row = 26, label_w = 330, bar_w = 420, width = label_w + bar_w + 210;
    const int height = row * static_cast<int>(bars.size()) + 10;
    double max = 0;
    for (const ReportBar& b : bars) max = std::max(max, b.value);
    std::string svg = fmt::format(
        "<svg class=\"chart\" id=\"{}\" role=\"img\" viewBox=\"0 0 {} {}\" width=\"100%\" "
        "preserveAspectRatio=\"xMinYMin meet\" xmlns=\"http://www.w3.org/2000/svg\">\n",
        id, width, height);
    for (std::size_t i = 0; i < bars.size(); ++i) {
        const ReportBar& b = bars[i];
        const int y = 5 + row * static_cast<int>(i);
        const double w = max > 0 ? bar_w * b.value / max : 0;
        const double share = total > 0 ? 100.0 * b.value / total : 0;
        svg += fmt::format("<g><title>{}</title>"
                           "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"label\">{}</text>"
                           "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>"
                           "<text x=\"{:.1f}\" y=\"{}\" class=\"value\">{} ({:.1f}%){}</text></g>\n",
                           esc(b.label), label_w - 8, y + 16, esc(short_label(b.label)), label_w, y + 3,
                           std::max(w, 1.0), row - 8, k_palette[i % std::size(k_palette)], label_w + w + 6, y + 16,
                           time_of(b.value), share, b.detail.empty() ? "" : ", " + esc(b.detail));
    }
    return svg + "</svg>\n";
}

std::string trend_chart(const Trend& t, std::size_t index) {
    const int width = 760, height = 260, left = 80, right = 20, top = 20, bottom = 50;
    const int plot_w = width - left - right, plot_h = height - top - bottom;
    double lo = std::min(t.band_low, t.baseline), hi = std::max(t.band_high, t.baseline);
    for (const TrendPoint& p : t.points) {
        lo = std::min(lo, p.value);
        hi = std::max(hi, p.value);
    }
    const double pad = (hi - lo) * 0.1 + (hi == lo ? std::max(std::fabs(hi) * 0.05, 1.0) : 0);
    lo -= pad;
    hi += pad;
    const std::size_t n = t.points.size();
    auto x_of = [&](std::size_t i) { return left + (n <= 1 ? plot_w / 2.0 : plot_w * static_cast<double>(i) / static_cast<double>(n - 1)); };
    auto y_of = [&](double v) { return top + plot_h * (hi - v) / (hi - lo); };
    const bool is_time = [&] {
        const MetricDef* d = find_metric_def(t.metric);
        return d != nullptr && d->unit == "ns";
    }();
    auto value_text = [&](double v) { return is_time ? time_of(v) : format_metric(t.metric, v); };

    std::string svg = fmt::format(
        "<svg class=\"chart trend\" id=\"trend-{}\" role=\"img\" viewBox=\"0 0 {} {}\" width=\"100%\" "
        "preserveAspectRatio=\"xMinYMin meet\" xmlns=\"http://www.w3.org/2000/svg\">\n",
        index, width, height);
    // The baseline band and median.
    svg += fmt::format("<rect class=\"band\" x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\"><title>baseline band "
                       "{} to {}</title></rect>\n",
                       left, y_of(t.band_high), plot_w, std::max(1.0, y_of(t.band_low) - y_of(t.band_high)),
                       value_text(t.band_low), value_text(t.band_high));
    svg += fmt::format("<line class=\"baseline\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>\n", left, left + plot_w,
                       y_of(t.baseline), y_of(t.baseline));
    // Axes: min and max values, first and last labels.
    svg += fmt::format("<line class=\"axis\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>\n", left, left + plot_w,
                       top + plot_h, top + plot_h);
    svg += fmt::format("<line class=\"axis\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>\n", left, left, top, top + plot_h);
    svg += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 6,
                       y_of(hi - pad) + 4, value_text(hi - pad));
    svg += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 6,
                       y_of(lo + pad) + 4, value_text(lo + pad));
    if (t.change_point && *t.change_point < n) {
        const double x = (x_of(*t.change_point - (*t.change_point > 0 ? 1 : 0)) + x_of(*t.change_point)) / 2;
        svg += fmt::format("<line class=\"change-point\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\"><title>change "
                           "point: the shift began at {}</title></line>\n"
                           "<text class=\"tick\" x=\"{:.1f}\" y=\"{}\">shift</text>\n",
                           x, x, top, top + plot_h, esc(t.points[*t.change_point].label), x + 4, top + 12);
    }
    std::string points;
    for (std::size_t i = 0; i < n; ++i) points += fmt::format("{:.1f},{:.1f} ", x_of(i), y_of(t.points[i].value));
    svg += fmt::format("<polyline class=\"series\" points=\"{}\"/>\n", points);
    for (std::size_t i = 0; i < n; ++i) {
        const TrendPoint& p = t.points[i];
        svg += fmt::format("<circle class=\"point{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\"><title>{}: {}</title></circle>\n",
                           i + 1 == n ? " current" : "", x_of(i), y_of(p.value), i + 1 == n ? 5 : 3, esc(p.label),
                           value_text(p.value));
    }
    const std::size_t step = std::max<std::size_t>(1, n / 8);
    for (std::size_t i = 0; i < n; i += step)
        svg += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x_of(i),
                           top + plot_h + 18, esc(short_label(t.points[i].label, 12)));
    if (n > 1 && (n - 1) % step != 0)
        svg += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x_of(n - 1),
                           top + plot_h + 18, esc(short_label(t.points[n - 1].label, 12)));
    return svg + "</svg>\n";
}

constexpr const char* k_style = R"css(
:root { color-scheme: light; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2330; margin: 0 auto;
       max-width: 1100px; padding: 24px; }
h1 { font-size: 24px; margin: 0 0 4px; } h2 { font-size: 19px; margin: 28px 0 8px; border-bottom: 1px solid #dde2ea;
     padding-bottom: 4px; }
.source { color: #5a6275; margin: 0 0 12px; word-break: break-all; }
table.labels { border-collapse: collapse; margin: 8px 0; } table.labels th, table.labels td { text-align: left;
     padding: 2px 14px 2px 0; } table.labels th { color: #5a6275; font-weight: 500; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; } .card { border: 1px solid #dde2ea; border-radius: 8px;
     padding: 8px 14px; min-width: 120px; } .card b { display: block; font-size: 20px; }
svg.chart { max-width: 100%; height: auto; } svg text { font: 12px system-ui, sans-serif; fill: #1d2330; }
svg .tick { fill: #5a6275; font-size: 11px; } svg .axis { stroke: #9aa3b5; }
svg .band { fill: #4f9d69; fill-opacity: 0.15; } svg .baseline { stroke: #4f9d69; stroke-dasharray: 4 3; }
svg .series { fill: none; stroke: #3b6fb6; stroke-width: 2; } svg .point { fill: #3b6fb6; }
svg .point.current { fill: #c8504b; } svg .change-point { stroke: #c8504b; stroke-width: 1.5; stroke-dasharray: 6 4; }
ol.findings { padding-left: 22px; } ol.findings li { margin: 0 0 14px; }
.sev { display: inline-block; border-radius: 4px; padding: 0 6px; font-size: 12px; font-weight: 600; color: #fff; }
.sev.error { background: #c8504b; } .sev.warning { background: #d98b2b; } .sev.info { background: #5a6275; }
.facts { color: #5a6275; font-size: 13px; } code { font: 13px ui-monospace, SFMono-Regular, Menlo, monospace;
     word-break: break-all; }
figure { margin: 0 0 20px; } figcaption { color: #5a6275; font-size: 13px; }
footer { margin-top: 32px; color: #8a91a1; font-size: 12px; }
@media print { body { max-width: none; padding: 0; font-size: 11pt; } h2 { break-after: avoid; }
     figure, ol.findings li, svg.chart { break-inside: avoid; } a { color: inherit; text-decoration: none; } }
)css";

}  // namespace

std::string render_html_report(const HtmlReport& r) {
    std::string html = fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                                   "<title>perfwatch: run {} ({})</title>\n<style>{}</style>\n</head>\n<body>\n",
                                   r.run.id, esc(r.run.format), k_style);
    html += fmt::format("<header>\n<h1>perfwatch: run {}</h1>\n<p class=\"source\">{} ({}), ingested {}</p>\n", r.run.id,
                        esc(r.run.source), esc(r.run.format), esc(r.ingested_at));
    if (!r.run.labels.empty()) {
        html += "<table class=\"labels\" id=\"labels\">\n";
        for (const auto& [k, v] : r.run.labels) html += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", esc(k), esc(v));
        html += "</table>\n";
    }
    for (const std::string& n : r.run.notes) html += fmt::format("<p class=\"facts\">Note: {}</p>\n", esc(n));
    for (const std::string& b : r.run.baselines) html += fmt::format("<p class=\"facts\">Baseline: {}</p>\n", esc(b));
    html += "</header>\n<section id=\"summary\"><div class=\"cards\">\n";
    for (const auto& [caption, value] : r.summary)
        html += fmt::format("<div class=\"card\">{}<b>{}</b></div>\n", esc(caption), esc(value));
    html += "</div></section>\n";

    for (const ReportTable& t : r.tables) {
        html += fmt::format("<section id=\"{}\">\n<h2>{}</h2>\n<table class=\"labels\">\n<tr>", esc(t.id), esc(t.title));
        for (const std::string& h : t.header) html += fmt::format("<th>{}</th>", esc(h));
        html += "</tr>\n";
        for (const auto& row : t.rows) {
            html += "<tr>";
            for (const std::string& cell : row) html += fmt::format("<td>{}</td>", esc(cell));
            html += "</tr>\n";
        }
        html += "</table>\n</section>\n";
    }

    double total = 0;
    for (const ReportBar& b : r.kernel_types) total += b.value;
    if (!r.kernel_types.empty())
        html += "<section id=\"gpu-time\">\n<h2>GPU time by kernel type</h2>\n" +
                bar_chart("kernel-types", r.kernel_types, total) + "</section>\n";
    if (!r.top_kernels.empty())
        html += fmt::format("<section id=\"top-kernels\">\n<h2>Top {} kernels by GPU time</h2>\n", r.top_kernels.size()) +
                bar_chart("top-kernels-chart", r.top_kernels, total) + "</section>\n";

    html += fmt::format("<section id=\"findings\">\n<h2>Findings ({}), largest estimated impact first</h2>\n",
                        r.findings.size());
    if (r.findings.empty()) html += "<p class=\"empty\">No rule fired on this run.</p>\n";
    html += "<ol class=\"findings\">\n";
    for (const Finding& f : r.findings) {
        const auto [kind, name] = shown_entity(to_string(f.entity_kind), f.entity_name, r.run.source);
        std::string facts = fmt::format("rule <code>{}</code>", esc(f.rule));
        if (f.share_pct) facts += fmt::format(" &middot; {:.1f}% of GPU time", *f.share_pct);
        if (f.estimated_speedup_pct) facts += fmt::format(" &middot; est. speedup {:.1f}%", *f.estimated_speedup_pct);
        if (f.impact) facts += fmt::format(" &middot; impact {:.2f}", *f.impact);
        html += fmt::format("<li><span class=\"sev {0}\">{0}</span> <b>{1}</b>: {2} <code>{3}</code><br>\n"
                            "<span class=\"facts\">{4}</span><br>\n{5}</li>\n",
                            to_string(f.severity), esc(f.title), kind, esc(name), facts, esc(f.message));
    }
    html += "</ol>\n</section>\n";

    html += fmt::format("<section id=\"regressions\">\n<h2>Regressions ({})</h2>\n", r.trends.size());
    if (r.trends.empty()) html += "<p class=\"empty\">No regression against the baseline in this run.</p>\n";
    for (std::size_t i = 0; i < r.trends.size(); ++i) {
        const Trend& t = r.trends[i];
        html += "<figure>\n" + trend_chart(t, i);
        html += fmt::format("<figcaption>{}: {} runs; baseline {} (band {} to {}){}</figcaption>\n</figure>\n", esc(t.title),
                            t.points.size(), format_metric(t.metric, t.baseline), format_metric(t.metric, t.band_low),
                            format_metric(t.metric, t.band_high),
                            t.change_point ? fmt::format("; shift detected at {}", esc(t.points[*t.change_point].label))
                                           : std::string());
    }
    html += "</section>\n";
    html += fmt::format("<footer>Generated by perfwatch at {}. One self-contained file: no script, no network."
                        "</footer>\n</body>\n</html>\n",
                        esc(r.generated_at));
    return html;
}

}  // namespace perfwatch
