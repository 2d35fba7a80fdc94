#include "collectors/readers/idle_causes.hpp"

#include "collectors/readers/timeline.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace perfwatch {

namespace {

// Earlier work on the stream counts as the reason a launch waited when the launch started within
// this of that work's end (the GPU's own hand-over between kernels of a stream is a few us).
constexpr double k_hand_over_ns = 20'000;

double median_of(std::vector<double>& v) {
    if (v.empty()) return 0;
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    return *mid;
}

// Merged, sorted intervals.
std::vector<Span> merge(std::vector<Span> spans) {
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
    std::vector<Span> out;
    for (const Span& s : spans) {
        if (!(s.end > s.start)) continue;
        if (!out.empty() && s.start <= out.back().end) out.back().end = std::max(out.back().end, s.end);
        else out.push_back(s);
    }
    return out;
}

// How much of [a, b] the merged `spans` cover.
double covered(const std::vector<Span>& spans, double a, double b) {
    auto it = std::lower_bound(spans.begin(), spans.end(), a, [](const Span& s, double t) { return s.end < t; });
    double total = 0;
    for (; it != spans.end() && it->start < b; ++it) total += std::max(0.0, std::min(b, it->end) - std::max(a, it->start));
    return total;
}

}  // namespace

IdleCauses idle_causes(std::vector<DeviceOp>& ops, std::vector<Span> startup) {
    IdleCauses out;
    if (ops.empty()) return out;
    const std::vector<Span> once = merge(std::move(startup));
    std::vector<double> gaps, delays;

    std::sort(ops.begin(), ops.end(),
              [](const DeviceOp& a, const DeviceOp& b) { return std::tie(a.device, a.start) < std::tie(b.device, b.start); });
    for (std::size_t i = 0; i < ops.size();) {
        const std::uint32_t device = ops[i].device;
        const double first = ops[i].start;
        double busy_end = ops[i].end;
        for (++i; i < ops.size() && ops[i].device == device; ++i) {
            const DeviceOp& op = ops[i];
            if (op.start > busy_end) {
                const double gap = op.start - busy_end;
                out.idle += gap;
                if (covered(once, busy_end, op.start) >= gap / 2) {
                    out.startup += gap;
                } else if (!std::isfinite(op.issued)) {
                    out.unmatched += gap;
                } else if (op.issued >= busy_end) {
                    if (gap < k_host_gap_ns) {
                        out.launch += gap;
                    } else {
                        out.host_gaps += gap;
                        gaps.push_back(gap);
                    }
                } else {
                    out.dependency += gap;
                }
            }
            busy_end = std::max(busy_end, op.end);
        }
        out.span += busy_end - first;
    }
    out.host_gap_count = static_cast<double>(gaps.size());
    out.host_gap_median = median_of(gaps);

    std::sort(ops.begin(), ops.end(), [](const DeviceOp& a, const DeviceOp& b) {
        return std::tie(a.device, a.stream, a.start) < std::tie(b.device, b.stream, b.start);
    });
    double stream_end = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const DeviceOp& op = ops[i];
        if (i == 0 || op.device != ops[i - 1].device || op.stream != ops[i - 1].stream)
            stream_end = -std::numeric_limits<double>::infinity();
        if (std::isfinite(op.issued)) {
            ++out.issued_launches;
            const double delay = op.start - op.issued;
            delays.push_back(delay);
            if (delay > k_waited_launch_ns) {
                ++out.waited;
                if (stream_end > op.issued && op.start - stream_end <= k_hand_over_ns) ++out.queued;
            }
        }
        stream_end = std::max(stream_end, op.end);
    }
    out.delay_median = median_of(delays);
    return out;
}

std::vector<double> concurrent_time(std::vector<DeviceOp>& ops, std::size_t tags) {
    std::vector<double> out(tags, 0.0);
    std::sort(ops.begin(), ops.end(),
              [](const DeviceOp& a, const DeviceOp& b) { return std::tie(a.device, a.start) < std::tie(b.device, b.start); });
    // Per device, a sweep over starts and ends: between two consecutive instants, every running
    // kernel gets the time when two or more run.
    std::vector<std::size_t> running;  // indexes into ops
    for (std::size_t i = 0; i < ops.size();) {
        const std::uint32_t device = ops[i].device;
        std::size_t end_of_device = i;
        while (end_of_device < ops.size() && ops[end_of_device].device == device) ++end_of_device;
        running.clear();
        double now = 0;
        for (std::size_t next = i; next < end_of_device || !running.empty();) {
            // The next instant: the earliest end among the running kernels, or the next start.
            double soonest_end = std::numeric_limits<double>::infinity();
            std::size_t ending = 0;
            for (std::size_t r = 0; r < running.size(); ++r)
                if (ops[running[r]].end < soonest_end) {
                    soonest_end = ops[running[r]].end;
                    ending = r;
                }
            while (next < end_of_device && ops[next].memory) ++next;
            const bool start_next = next < end_of_device && ops[next].start < soonest_end;
            const double t = start_next ? ops[next].start : soonest_end;
            if (!std::isfinite(t)) break;
            if (running.size() >= 2)
                for (std::size_t r : running)
                    if (ops[r].tag < tags) out[ops[r].tag] += t - now;
            now = t;
            if (start_next) {
                running.push_back(next++);
            } else {
                running[ending] = running.back();
                running.pop_back();
            }
        }
        i = end_of_device;
    }
    return out;
}

bool set_idle_cause_metrics(Entity& run, const IdleCauses& c) {
    if (!(c.span > 0) || c.unmatched > c.idle / 2) return false;
    const auto pct = [&](double t) { return 100.0 * t / c.span; };
    run.set(plain("idle_startup", c.startup, "ns"));
    run.set(plain("idle_startup_pct", pct(c.startup), "percent"));
    if (c.span > c.startup) run.set(plain("idle_steady_pct", 100.0 * (c.idle - c.startup) / (c.span - c.startup), "percent"));
    run.set(plain("idle_launch_pct", pct(c.launch), "percent"));
    run.set(plain("idle_host_gaps_pct", pct(c.host_gaps), "percent"));
    run.set(plain("host_gaps", c.host_gap_count, "count"));
    if (c.host_gap_count > 0) run.set(plain("host_gap_median", c.host_gap_median, "ns"));
    run.set(plain("idle_dependency_pct", pct(c.dependency), "percent"));
    if (c.issued_launches > 0) {
        run.set(plain("launch_delay_median", c.delay_median, "ns"));
        run.set(plain("launches_waited", c.waited, "count"));
        run.set(plain("launches_queued", c.queued, "count"));
    }
    return true;
}

}  // namespace perfwatch
