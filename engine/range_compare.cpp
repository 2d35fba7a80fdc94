#include "engine/range_compare.hpp"

#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <cmath>

#include "engine/stats.hpp"

namespace perfwatch {

namespace {

// The asymptotic relative efficiency of the rank test against the t-test on normal data.
constexpr double k_rank_test_efficiency = 3.0 / 3.14159265358979323846;

// The robust sigma of both sides together, each around its own median.
double pooled_sigma(const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> residuals;
    const double ma = median(a), mb = median(b);
    for (const double v : a) residuals.push_back(v - ma);
    for (const double v : b) residuals.push_back(v - mb);
    return mad_sigma(residuals);
}

}  // namespace

std::string_view to_string(RangeComparison::Verdict verdict) {
    switch (verdict) {
        case RangeComparison::Verdict::slower: return "slower";
        case RangeComparison::Verdict::faster: return "faster";
        case RangeComparison::Verdict::unchanged: return "unchanged";
        case RangeComparison::Verdict::too_few_runs: return "too few runs";
        case RangeComparison::Verdict::only_in_a: return "only in A";
        case RangeComparison::Verdict::only_in_b: return "only in B";
    }
    return "unchanged";
}

RangeComparison compare_ranges(const RangeSamples& s, const RangeCompareOptions& options) {
    RangeComparison c;
    c.name = s.name;
    c.runs_a = s.a.size();
    c.runs_b = s.b.size();
    if (s.a.empty() || s.b.empty()) {
        c.verdict = s.a.empty() ? RangeComparison::Verdict::only_in_b : RangeComparison::Verdict::only_in_a;
        if (!s.a.empty()) c.median_a = median(s.a);
        if (!s.b.empty()) c.median_b = median(s.b);
        return c;
    }
    c.median_a = median(s.a);
    c.median_b = median(s.b);
    if (c.median_a != 0) c.change_pct = 100.0 * hodges_lehmann(s.a, s.b) / c.median_a;
    if (s.a.size() < options.min_runs_per_side || s.b.size() < options.min_runs_per_side) {
        c.verdict = RangeComparison::Verdict::too_few_runs;
        return c;
    }
    const RankTest test = mann_whitney(s.a, s.b);
    c.confidence = std::clamp(1.0 - 2.0 * std::min(test.p_greater, test.p_less), 0.0, 1.0);
    if (c.median_a != 0) {
        const double sigma = pooled_sigma(s.a, s.b);
        c.noise_pct = 100.0 * sigma / std::abs(c.median_a);
        const boost::math::normal standard;
        const double z = boost::math::quantile(standard, 1.0 - (1.0 - options.confidence_needed) / 2.0);
        const double n_a = static_cast<double>(s.a.size()), n_b = static_cast<double>(s.b.size());
        c.detectable_pct = z * *c.noise_pct * std::sqrt(1.0 / n_a + 1.0 / n_b) / std::sqrt(k_rank_test_efficiency);
    }
    const bool sure = *c.confidence >= options.confidence_needed && std::abs(c.change_pct) >= options.min_change_pct;
    c.verdict = !sure ? RangeComparison::Verdict::unchanged
                      : (c.change_pct > 0 ? RangeComparison::Verdict::slower : RangeComparison::Verdict::faster);
    return c;
}

}  // namespace perfwatch
