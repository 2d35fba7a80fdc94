#include "engine/expr/functions.hpp"

#include <fmt/format.h>

#include "core/vocabulary.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace perfwatch::expr {

namespace {

using Args = std::span<const double>;

std::optional<double> finite(double v) { return std::isfinite(v) ? std::optional<double>(v) : std::nullopt; }

// The comparison of the call's metric with the baseline, for the functions that read it.
std::optional<Comparison> compared(const Node& n, const EvalScope& s) { return s.compare(n.check.metric, n.check.run_level); }

Value is_new(const Node&, const EvalScope& s) {
    if (auto v = s.is_new()) return *v;
    return {};
}

Value changed_labels(const Node&, const EvalScope& s) {
    if (auto v = s.changed_labels()) return *v;
    return {};
}

Value vanished(const Node& n, const EvalScope& s) {
    const auto names = s.vanished(n.entity_kind);
    if (!names) return {};
    return static_cast<double>(names->size());
}

Value vanished_names(const Node& n, const EvalScope& s) {
    const auto names = s.vanished(n.entity_kind);
    if (!names) return {};
    std::string out;
    for (std::size_t i = 0; i < names->size() && i < 10; ++i) out += (i ? ", " : "") + (*names)[i];
    if (names->size() > 10) out += fmt::format(" and {} more", names->size() - 10);
    return out;
}

Value changed(const Node& n, const EvalScope& s) {
    const RegressionCheck& c = n.check;
    const auto before = s.latest_baseline(c.metric, c.run_level);
    const auto now = c.run_level ? s.run_metric(c.metric) : s.metric(c.metric);
    if (!before || !now) return {};
    return std::fabs(*now - *before) > 1e-9 * std::max(std::fabs(*now), std::fabs(*before));
}

Value first_bad(const Node& n, const EvalScope& s) {
    if (auto v = s.first_bad(n.check.metric, n.check.run_level)) return *v;
    return {};
}

Value last_good(const Node& n, const EvalScope& s) {
    if (auto v = s.last_good(n.check.metric, n.check.run_level)) return *v;
    return {};
}

// "22.5 ms (6 runs) and 25.5 ms (4 runs)": the baseline's two modes; missing unless it has two.
Value modes(const Node& n, const EvalScope& s) {
    const auto c = compared(n, s);
    if (!c || !c->modes) return {};
    const std::string metric = n.check.metric.starts_with("run.") ? n.check.metric.substr(4) : n.check.metric;
    return fmt::format("{} ({} runs) and {} ({} runs)", format_metric(metric, c->modes->low), c->modes->low_count,
                       format_metric(metric, c->modes->high), c->modes->high_count);
}

Value uniform_change(const Node& n, const EvalScope& s) {
    const auto u = s.uniform_change(n.check.metric);
    return u ? Value{u->change_pct} : Value{};
}

Value uniform_kernels(const Node& n, const EvalScope& s) {
    const auto u = s.uniform_change(n.check.metric);
    return u ? Value{static_cast<double>(u->kernels)} : Value{};
}

Value baseline(const Node& n, const EvalScope& s) {
    const auto c = compared(n, s);
    return c ? Value{c->baseline} : Value{};
}

Value current(const Node& n, const EvalScope& s) {
    const auto c = compared(n, s);
    return c ? Value{c->current} : Value{};
}

Value change(const Node& n, const EvalScope& s) {
    const auto c = compared(n, s);
    return c ? Value{c->change_pct} : Value{};
}

Value spread(const Node& n, const EvalScope& s) {
    const auto c = compared(n, s);
    if (!c || !c->window_test) return {};
    return c->spread;
}

Value detectable_change(const Node& n, const EvalScope& s) {
    const auto c = compared(n, s);
    if (!c || !c->window_test || !(c->detectable_pct > 0)) return {};
    return c->detectable_pct;
}

Value confidence(const Node& n, const EvalScope& s) {
    const auto c = compared(n, s);
    if (!c || !(c->window_test || c->rank_test)) return {};
    return 100.0 * (c->change_pct >= 0 ? c->confidence_up : c->confidence_down);
}

// The change in the worse (`worse_way`) or better direction, large and confident enough.
Value moved(const Node& n, const EvalScope& s, bool worse_way) {
    const auto cmp = compared(n, s);
    if (!cmp || !(cmp->window_test || cmp->rank_test)) return {};
    const RegressionCheck& c = n.check;
    const bool up = worse_way == c.higher_is_worse;
    const double change_pct = up ? cmp->change_pct : -cmp->change_pct;
    const double conf = up ? cmp->confidence_up : cmp->confidence_down;
    // A change short of min_change by less than its own uncertainty (1.28 standard errors: 90%
    // one-sided) still counts: a true 5% shift measures under 5% about half the time.
    return change_pct + k_min_change_allowance * cmp->change_se_pct >= c.min_change_pct && change_pct > 0 &&
           conf >= c.confidence;
}

Value regressed(const Node& n, const EvalScope& s) { return moved(n, s, true); }
Value improved(const Node& n, const EvalScope& s) { return moved(n, s, false); }

constexpr FunctionDef numeric(std::string_view name, int min_args, int max_args,
                              std::optional<double> (*fn)(Args)) {
    return {name, min_args, max_args, CallForm::numeric, ValueType::number, fn};
}

constexpr FunctionDef history(std::string_view name, ValueType result, HistoryArgs args,
                              Value (*fn)(const Node&, const EvalScope&), bool follows_regression = false) {
    return {name, 0, 0, CallForm::history, result, nullptr, args, fn, follows_regression};
}

constexpr FunctionDef form(std::string_view name, int min_args, int max_args, CallForm f) {
    return {name, min_args, max_args, f};
}

using VT = ValueType;
using HA = HistoryArgs;

// The registry: every function of the rule language, one row each.
constexpr auto k_functions = std::to_array<FunctionDef>({
    numeric("min", 1, -1, [](Args a) { return finite(*std::min_element(a.begin(), a.end())); }),
    numeric("max", 1, -1, [](Args a) { return finite(*std::max_element(a.begin(), a.end())); }),
    numeric("abs", 1, 1, [](Args a) { return finite(std::fabs(a[0])); }),
    numeric("sqrt", 1, 1, [](Args a) { return a[0] < 0 ? std::nullopt : finite(std::sqrt(a[0])); }),
    numeric("log", 1, 1, [](Args a) { return a[0] <= 0 ? std::nullopt : finite(std::log(a[0])); }),
    numeric("floor", 1, 1, [](Args a) { return finite(std::floor(a[0])); }),
    numeric("ceil", 1, 1, [](Args a) { return finite(std::ceil(a[0])); }),
    numeric("round", 1, 1, [](Args a) { return finite(std::round(a[0])); }),
    numeric("clamp", 3, 3, [](Args a) { return finite(std::clamp(a[0], a[1], std::max(a[1], a[2]))); }),
    // pow(x, y): x to the power y; missing where that is not a finite real number.
    numeric("pow", 2, 2, [](Args a) { return finite(std::pow(a[0], a[1])); }),
    form("metric", 1, 1, CallForm::metric_ref),
    form("attr", 1, 1, CallForm::attr_ref),
    form("present", 1, 1, CallForm::presence),
    form("count", 1, 2, CallForm::aggregate),
    form("sum", 2, 3, CallForm::aggregate),
    form("top", 3, 3, CallForm::aggregate),
    form("rank", 1, 1, CallForm::rank),
    form("if", 3, 3, CallForm::conditional),
    history("baseline", VT::number, HA::metric, &baseline),
    history("current", VT::number, HA::metric, &current),
    history("change", VT::number, HA::metric, &change),
    history("spread", VT::number, HA::metric, &spread),
    history("confidence", VT::number, HA::metric, &confidence),
    // detectable_change(m): the smallest change (%) the run-to-run test tells at 99.99%.
    history("detectable_change", VT::number, HA::metric, &detectable_change),
    history("regressed", VT::boolean, HA::metric_and_parameters, &regressed, true),
    history("improved", VT::boolean, HA::metric_and_parameters, &improved),
    history("changed", VT::boolean, HA::metric, &changed),
    history("first_bad", VT::string, HA::metric, &first_bad),
    history("last_good", VT::string, HA::metric, &last_good),
    history("modes", VT::string, HA::metric, &modes),
    history("uniform_change", VT::number, HA::metric, &uniform_change),
    history("uniform_kernels", VT::number, HA::metric, &uniform_kernels),
    history("is_new", VT::boolean, HA::none, &is_new),
    history("changed_labels", VT::string, HA::none, &changed_labels),
    history("vanished", VT::number, HA::entity_kind, &vanished),
    history("vanished_names", VT::string, HA::entity_kind, &vanished_names),
});

}  // namespace

const FunctionDef* find_function(std::string_view name) {
    for (const FunctionDef& f : k_functions)
        if (f.name == name) return &f;
    return nullptr;
}

}  // namespace perfwatch::expr
