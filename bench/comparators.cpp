#include "bench/comparators.hpp"

#include <boost/math/distributions/students_t.hpp>

#include <cmath>

namespace perfwatch::bench {

namespace {

struct Moments {
    double mean = 0, var = 0;
    std::size_t n = 0;
};

Moments moments(const std::vector<double>& v, std::size_t from, std::size_t to) {
    Moments m;
    m.n = to - from;
    for (std::size_t i = from; i < to; ++i) m.mean += v[i];
    m.mean /= static_cast<double>(m.n);
    for (std::size_t i = from; i < to; ++i) m.var += (v[i] - m.mean) * (v[i] - m.mean);
    m.var /= static_cast<double>(m.n - 1);
    return m;
}

}  // namespace

std::vector<bool> median_t_test(const std::vector<double>& levels, std::size_t window, double p) {
    std::vector<bool> out(levels.size());
    for (std::size_t r = 5; r < levels.size(); ++r) {
        const std::size_t from = r > window ? r - window : 0;
        const Moments m = moments(levels, from, r);
        if (!(m.var > 0)) continue;
        const double t = (levels[r] - m.mean) / std::sqrt(m.var * (1 + 1.0 / static_cast<double>(m.n)));
        const boost::math::students_t_distribution<double> dist(static_cast<double>(m.n - 1));
        out[r] = 1 - boost::math::cdf(dist, t) < p;
    }
    return out;
}

std::vector<std::optional<std::size_t>> perfherder(const std::vector<double>& levels, std::size_t back, std::size_t fore,
                                                   double threshold) {
    std::vector<std::optional<std::size_t>> out(levels.size());
    std::optional<std::size_t> last;
    // Welch t of the split before k, with the history up to j: the back window full or from the
    // start, the fore window cut at j as Treeherder's is at the newest data.
    auto t_at = [&](std::size_t k, std::size_t j) {
        const std::size_t from = k > back ? k - back : 0, to = std::min(j + 1, k + fore);
        if (k - from < 2 || to - k < 2) return 0.0;
        const Moments b = moments(levels, from, k), f = moments(levels, k, to);
        const double se = std::sqrt(b.var / static_cast<double>(b.n) + f.var / static_cast<double>(f.n));
        return se > 0 ? (f.mean - b.mean) / se : 0.0;
    };
    for (std::size_t j = back + fore - 1; j < levels.size(); ++j) {
        const std::size_t i = j + 1 - fore;  // the newest split with a complete fore window [i, j]
        const double t = t_at(i, j);
        // Treeherder alerts where t passes the threshold and is a local maximum.
        if (t < threshold || t < t_at(i - 1, j) || t < t_at(i + 1, j)) continue;
        if (last && i - *last < fore) continue;  // the same shift, said once
        last = i;
        out[j] = i;
    }
    return out;
}

}  // namespace perfwatch::bench
