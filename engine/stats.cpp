#include "engine/stats.hpp"

#include "core/model.hpp"

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace perfwatch {

double median(std::vector<double> values) {
    if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
    const std::size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
    const double upper = values[mid];
    if (values.size() % 2 == 1) return upper;
    const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
    return (lower + upper) / 2;
}

double mad_sigma(const std::vector<double>& values) {
    if (values.size() < 2) return 0;
    const double m = median(values);
    std::vector<double> dev(values.size());
    std::transform(values.begin(), values.end(), dev.begin(), [&](double v) { return std::fabs(v - m); });
    return 1.4826 * median(std::move(dev));
}

std::optional<Modes> two_modes(std::vector<double> values, std::size_t min_count, double separation, double min_gap) {
    if (min_count == 0 || values.size() < 2 * min_count) return std::nullopt;
    std::sort(values.begin(), values.end());
    std::size_t split = 0;
    double widest = 0;
    for (std::size_t i = min_count; i + min_count <= values.size(); ++i)
        if (values[i] - values[i - 1] > widest) {
            widest = values[i] - values[i - 1];
            split = i;
        }
    if (split == 0) return std::nullopt;
    const std::vector<double> low(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(split));
    const std::vector<double> high(values.begin() + static_cast<std::ptrdiff_t>(split), values.end());
    const double mid = std::fabs(median(values));
    const double sigma = std::max({mad_sigma(low), mad_sigma(high), 0.005 * mid});
    if (widest < min_gap * mid || widest < separation * sigma) return std::nullopt;
    return Modes{median(low), median(high), low.size(), high.size()};
}

std::vector<std::optional<Band>> rolling_band(const std::vector<double>& series, const std::vector<bool>& usable,
                                              std::size_t window, double k, double min_cv, std::size_t min_runs) {
    std::vector<std::optional<Band>> out(series.size());
    std::vector<double> pool;  // the usable values so far; the last `window` of them are the baseline
    for (std::size_t i = 0; i < series.size(); ++i) {
        if (pool.size() >= std::max<std::size_t>(min_runs, 1)) {
            const std::vector<double> before(pool.end() - static_cast<std::ptrdiff_t>(std::min(window, pool.size())), pool.end());
            const double m = median(before);
            const double sigma = std::max(mad_sigma(before), min_cv * std::fabs(m));
            out[i] = Band{m, m - k * sigma, m + k * sigma};
        }
        if (usable.empty() || (i < usable.size() && usable[i])) pool.push_back(series[i]);
    }
    return out;
}

namespace {

double normal_cdf(double z) {
    static const boost::math::normal_distribution<double> k_normal;
    return boost::math::cdf(k_normal, z);
}

}  // namespace

RankTest mann_whitney(const std::vector<double>& before, const std::vector<double>& after) {
    RankTest out;
    const std::size_t n = before.size(), m = after.size();
    if (n == 0 || m == 0) return out;
    std::vector<std::pair<double, bool>> all;  // value, from `after`
    all.reserve(n + m);
    for (double v : before) all.emplace_back(v, false);
    for (double v : after) all.emplace_back(v, true);
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const double total = static_cast<double>(n + m);
    double rank_sum_after = 0, tie_term = 0;
    for (std::size_t i = 0; i < all.size();) {
        std::size_t j = i;
        while (j < all.size() && all[j].first == all[i].first) ++j;
        const double t = static_cast<double>(j - i);
        const double avg_rank = (static_cast<double>(i) + static_cast<double>(j) + 1) / 2;  // 1-based ranks i+1..j
        for (std::size_t k = i; k < j; ++k)
            if (all[k].second) rank_sum_after += avg_rank;
        tie_term += t * t * t - t;
        i = j;
    }
    const double dn = static_cast<double>(n), dm = static_cast<double>(m);
    out.u = rank_sum_after - dm * (dm + 1) / 2;
    const double mean = dn * dm / 2;
    const double var = dn * dm / 12 * ((total + 1) - tie_term / (total * (total - 1)));
    if (!(var > 0)) return out;
    const double sd = std::sqrt(var);
    out.z = (out.u - mean) / sd;
    out.p_greater = 1 - normal_cdf((out.u - mean - 0.5) / sd);
    out.p_less = normal_cdf((out.u - mean + 0.5) / sd);
    return out;
}

double hodges_lehmann(const std::vector<double>& before, const std::vector<double>& after, std::size_t max_side) {
    if (before.empty() || after.empty()) return std::numeric_limits<double>::quiet_NaN();
    std::vector<double> a = before, b = after;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    a = evenly_spaced(a, max_side);
    b = evenly_spaced(b, max_side);
    std::vector<double> diffs;
    diffs.reserve(a.size() * b.size());
    for (double y : b)
        for (double x : a) diffs.push_back(y - x);
    return median(std::move(diffs));
}

Comparison compare_to_baseline(double current, const std::vector<double>& current_samples,
                               const std::vector<double>& baseline_values, const std::vector<double>& baseline_samples,
                               double min_cv, std::size_t min_runs, double floor_df) {
    Comparison c;
    c.current = current;
    c.baseline_runs = baseline_values.size();
    if (baseline_values.empty()) return c;
    c.baseline = median(baseline_values);
    const double scale = std::fabs(c.baseline);
    c.change_pct = scale > 0 ? 100.0 * (current - c.baseline) / scale : 0.0;

    double up = 1, down = 1;
    bool tested = false;
    const std::size_t n = baseline_values.size();
    if (n >= std::max(min_runs, k_min_runs_tested)) {
        c.spread = mad_sigma(baseline_values);
        // A pooled floor (floor_df > 0) is the spread itself unless this series is clearly noisier.
        const double floor = min_cv * scale;
        const bool pooled = floor_df > 0 && c.spread <= k_clearly_noisier * floor;
        const double sigma = pooled ? floor : std::max(c.spread, floor);
        if (sigma > 0) {
            // Prediction interval for one new value around the baseline median.
            const double se = sigma * std::sqrt(1 + M_PI / (2 * static_cast<double>(n)));
            if (scale > 0) c.change_se_pct = 100.0 * se / scale;
            const double df = pooled ? std::max(floor_df, static_cast<double>(n - 1)) : static_cast<double>(n - 1);
            const boost::math::students_t_distribution<double> t_dist(df);
            // Stated once the baseline holds a full window (fewer runs are too few to say it).
            if (scale > 0 && n >= k_detectable_runs)
                c.detectable_pct = 100.0 * boost::math::quantile(t_dist, k_detectable_confidence) * se / scale;
            const double t = (current - c.baseline) / se;
            up = boost::math::cdf(t_dist, t);
            down = 1 - up;
            c.window_test = tested = true;
        }
    }
    const std::vector<double> cs = evenly_spaced(current_samples, 2048), bs = evenly_spaced(baseline_samples, 4096);
    c.current_samples = current_samples.size();
    c.baseline_samples = baseline_samples.size();
    if (cs.size() >= 3 && bs.size() >= 3) {
        const RankTest mw = mann_whitney(bs, cs);
        up = std::min(up, 1 - mw.p_greater);
        down = std::min(down, 1 - mw.p_less);
        const double base = std::fabs(median(bs));
        if (base > 0) c.change_pct = 100.0 * hodges_lehmann(bs, cs) / base;
        c.rank_test = tested = true;
    }
    if (tested) {
        c.confidence_up = up;
        c.confidence_down = down;
    }
    return c;
}

namespace {

// Energy statistic Q(tau) for every split of the values `x[order[0..n)]`; out[tau] for
// tau in [lo_tau, hi_tau], others 0.
void energy_scan(const std::vector<double>& dist, std::size_t stride, const std::vector<std::size_t>& order,
                 std::size_t lo_tau, std::size_t hi_tau, std::vector<double>& out) {
    const std::size_t n = order.size();
    out.assign(n + 1, 0.0);
    auto d = [&](std::size_t i, std::size_t j) { return dist[order[i] * stride + order[j]]; };
    double total = 0;
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) total += d(i, j);
    double within_a = 0, within_b = total;
    for (std::size_t tau = 1; tau < n; ++tau) {
        // Move element tau-1 from B to A.
        const std::size_t k = tau - 1;
        double to_a = 0, to_b = 0;
        for (std::size_t i = 0; i < k; ++i) to_a += d(i, k);
        for (std::size_t j = k + 1; j < n; ++j) to_b += d(k, j);
        within_a += to_a;
        within_b -= to_b;
        if (tau < lo_tau || tau > hi_tau) continue;
        const double m = static_cast<double>(tau), r = static_cast<double>(n - tau);
        const double between = total - within_a - within_b;
        const double pairs_a = m * (m - 1) / 2, pairs_b = r * (r - 1) / 2;
        const double e = 2 * between / (m * r) - (pairs_a > 0 ? within_a / pairs_a : 0) -
                         (pairs_b > 0 ? within_b / pairs_b : 0);
        out[tau] = m * r / (m + r) * e;
    }
}

Split split_range(const std::vector<double>& series, std::size_t lo, std::size_t hi, std::size_t min_first,
                  std::size_t min_last, const ChangePointOptions& o, std::mt19937_64& rng) {
    Split best;
    const std::size_t n = hi - lo;
    if (n < min_first + min_last || n < 2) return best;
    std::vector<double> dist(n * n);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) dist[i * n + j] = std::pow(std::fabs(series[lo + i] - series[lo + j]), o.alpha);
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    const std::size_t lo_tau = min_first, hi_tau = n - min_last;
    std::vector<double> q;
    energy_scan(dist, n, order, lo_tau, hi_tau, q);
    for (std::size_t tau = lo_tau; tau <= hi_tau; ++tau)
        if (q[tau] > best.statistic) best = Split{lo + tau, q[tau], 1};
    if (best.index == 0) return best;
    int as_large = 0;
    for (int p = 0; p < o.permutations; ++p) {
        for (std::size_t i = n - 1; i > 0; --i) {
            std::uniform_int_distribution<std::size_t> pick(0, i);
            std::swap(order[i], order[pick(rng)]);
        }
        energy_scan(dist, n, order, lo_tau, hi_tau, q);
        const double top = *std::max_element(q.begin(), q.end());
        if (top >= best.statistic) ++as_large;
    }
    best.p_value = (as_large + 1.0) / (o.permutations + 1.0);
    return best;
}

void segment(const std::vector<double>& series, std::size_t lo, std::size_t hi, const ChangePointOptions& o,
             std::mt19937_64& rng, std::vector<std::size_t>& out) {
    const std::size_t min_last = hi == series.size() ? o.min_last : o.min_segment;
    const Split s = split_range(series, lo, hi, o.min_segment, min_last, o, rng);
    if (s.index == 0 || s.p_value > o.significance) return;
    out.push_back(s.index);
    segment(series, lo, s.index, o, rng, out);
    segment(series, s.index, hi, o, rng, out);
}

}  // namespace

Split best_split(const std::vector<double>& series, const ChangePointOptions& options) {
    std::mt19937_64 rng(options.seed);
    return split_range(series, 0, series.size(), options.min_segment, options.min_last, options, rng);
}

std::vector<std::size_t> change_points(const std::vector<double>& series, const ChangePointOptions& options) {
    std::mt19937_64 rng(options.seed);
    std::vector<std::size_t> out;
    segment(series, 0, series.size(), options, rng, out);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace perfwatch
