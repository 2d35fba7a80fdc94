#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/stats.hpp"

namespace perfwatch {

// Aggregate values computed once per run, keyed by the aggregate and the entity kind it runs over
// (rank() runs over the current entity's kind, which differs between rules sharing a macro).
using AggregateMemo = std::map<std::pair<const void*, std::string>, std::vector<double>>;

// A value during evaluation. monostate means "missing": the report lacks a metric the
// expression reads; it propagates, and a rule whose condition is missing is not applicable.
using Value = std::variant<std::monostate, double, bool, std::string>;

enum class ValueType { number, boolean, string };

std::string_view to_string(ValueType type);

// What an expression reads from: metrics and attributes of the entity, metrics of the run.
class EvalScope {
public:
    virtual ~EvalScope() = default;
    virtual std::optional<double> metric(std::string_view name) const = 0;
    virtual std::optional<double> run_metric(std::string_view name) const = 0;
    virtual std::optional<std::string> attribute(std::string_view name) const = 0;
    // Calls `fn` with a scope for each entity of `kind` ("kernel", "memcpy", ...) in the same run,
    // for aggregates; a scope outside a run has none.
    virtual void for_each_entity(std::string_view kind, const std::function<void(const EvalScope&)>& fn) const {
        (void)kind;
        (void)fn;
    }
    // Per-run memo for aggregate values (the same for every entity of a run); nullptr: recompute.
    virtual AggregateMemo* memo() const { return nullptr; }

    // History, for baseline(), change(), regressed() and the like. Each returns nullopt when the
    // run has no baseline (or the baseline or the entity lacks the metric). `run_level`: the
    // run's metric rather than the entity's.
    virtual std::optional<Comparison> compare(std::string_view metric, bool run_level) const {
        (void)metric;
        (void)run_level;
        return std::nullopt;
    }
    // The metric's value in the newest baseline run (exact comparison of deterministic properties).
    virtual std::optional<double> latest_baseline(std::string_view metric, bool run_level) const {
        (void)metric;
        (void)run_level;
        return std::nullopt;
    }
    // True when no baseline run has this entity.
    virtual std::optional<bool> is_new() const { return std::nullopt; }
    // Entities of `kind` in the newest baseline run that this run lacks.
    virtual std::optional<std::vector<std::string>> vanished(std::string_view kind) const {
        (void)kind;
        return std::nullopt;
    }
    // "commit abc1234 (run 7)": the run where the shift in the metric began.
    virtual std::optional<std::string> first_bad(std::string_view metric, bool run_level) const {
        (void)metric;
        (void)run_level;
        return std::nullopt;
    }
    // "commit 9f8e7d6 (run 6)": the newest comparable run before the first bad one, where a
    // bisection starts; nullopt when the shift began at the first run the history holds.
    virtual std::optional<std::string> last_good(std::string_view metric, bool run_level) const {
        (void)metric;
        (void)run_level;
        return std::nullopt;
    }
    // How the run's kernels moved together in `metric`.
    virtual std::optional<UniformChange> uniform_change(std::string_view metric) const {
        (void)metric;
        return std::nullopt;
    }
    // Environment labels that changed since the newest baseline run.
    virtual std::optional<std::string> changed_labels() const { return std::nullopt; }
};

// The entities of one kind in a run, evaluated together: an expression is evaluated a node at a
// time over all rows (columns of metric values), not an entity at a time.
class RowScope {
public:
    virtual ~RowScope() = default;
    // A metric on every row: `values[r]` holds where `has[r]` is 1; valid while the scope lives.
    struct Column {
        const double* values = nullptr;
        const std::uint8_t* has = nullptr;
    };

    virtual std::size_t rows() const = 0;
    virtual Column metric_column(std::string_view name) const = 0;
    virtual std::optional<double> run_metric(std::string_view name) const = 0;
    // The attribute on row `row`, nullptr where missing; valid while the scope lives.
    virtual const std::string* attribute(std::size_t row, std::string_view name) const = 0;
    // Calls `fn` with row `row` as a single-entity scope (history, rank and aggregates read it).
    virtual void with_row(std::size_t row, const std::function<void(const EvalScope&)>& fn) const = 0;
    // False when history functions have no baseline to read: they are missing on every row.
    virtual bool has_history() const = 0;
    // A column of small values kept with the scope under `key` (-1 on every row at first), for
    // results several expressions share (a macro's regular expression); nullptr: none kept.
    virtual std::vector<std::int8_t>* shared_column(const void* key) const {
        (void)key;
        return nullptr;
    }
};

// A condition's value on one row: missing (a metric it reads is absent), false or true.
enum class Truth : std::uint8_t { missing, no, yes };

// A regressed() call of a rule: what the run pipeline needs to follow the regression over runs.
struct RegressionCheck {
    std::string metric;
    bool run_level = false;
    double min_change_pct = 5;
    double confidence = 0.99;
    bool higher_is_worse = true;
};

// A compile error at a byte offset of the expression text.
struct ExprError {
    std::size_t offset = 0;
    std::string message;
};

namespace expr {
struct Node;
}
class Expression;

// Names an expression may use besides metrics and attributes: named expressions (`let`
// bindings and macros, inlined where used) and lists of strings (for `name in LIST`).
class Definitions {
public:
    // Compiles `source` with the definitions so far and adds it as `name` (replacing one of the
    // same name). Returns false, with `errors`, when it does not compile.
    bool define(const std::string& name, std::string_view source, std::vector<ExprError>& errors);
    void define_list(const std::string& name, std::vector<std::string> items);
    // Defines `name` as a value already diagnosed: uses of it report nothing more.
    void define_broken(const std::string& name);
    bool has(const std::string& name) const { return m_exprs.contains(name) || m_lists.contains(name); }
    // Names defined but never read by an expression compiled with these definitions since.
    std::vector<std::string> unused() const;
    // Marks as used here the names `other` (a copy extended with lets) has used.
    void merge_used(const Definitions& other) const;

    struct Named {
        std::shared_ptr<expr::Node> root;
        std::set<std::string> metrics;
    };
    // Lookups for the compiler; a name found is marked used.
    const Named* expression(const std::string& name) const;
    std::shared_ptr<const std::vector<std::string>> list(const std::string& name) const;

private:
    std::map<std::string, Named> m_exprs;
    std::map<std::string, std::shared_ptr<const std::vector<std::string>>> m_lists;
    mutable std::set<std::string> m_used;
};

// A parsed, type-checked expression. Immutable; safe to evaluate from many threads.
class Expression {
public:
    // Parses and type-checks `source`. Identifiers must be canonical metrics, known attributes
    // (name, kind, occupancy_limiter, grid, block, cc, device, stream), run.METRIC, or names in
    // `definitions`.
    static std::optional<Expression> compile(std::string_view source, std::vector<ExprError>& errors,
                                             const Definitions* definitions = nullptr);
    // `a and b and ...` of boolean expressions (a rule's condition with appended conditions).
    static Expression all_of(const std::vector<Expression>& parts);

    Value evaluate(const EvalScope& scope) const;
    // A boolean expression on every row of `scope`: the same values as evaluate() on each row's
    // entity alone, computed a node at a time over all rows.
    std::vector<Truth> decide_rows(const RowScope& scope) const;
    ValueType type() const;
    const std::string& source() const { return m_source; }
    // Canonical metrics the expression reads ("run." prefixed for run metrics).
    const std::set<std::string>& metrics_read() const { return m_metrics; }
    // True when the expression reads history (baseline(), change(), regressed(), ...).
    bool uses_history() const;
    // The regressed() calls in the expression, in source order.
    std::vector<RegressionCheck> regression_checks() const;

private:
    friend class Definitions;
    std::shared_ptr<const expr::Node> m_root;
    std::string m_source;
    std::set<std::string> m_metrics;
};

// "text {expr} more {expr:.1f}": literal text with expressions and fmt format specs, plus
// "{expr:time}" (nanoseconds shown as "1.25 ms") and "{expr:bytes}" ("2.10 GB").
// "{{" and "}}" are literal braces. A missing value prints as "n/a", except inside an optional
// segment "[[ ... ]]", which is left out whole when any value in it is missing.
class Template {
public:
    static std::optional<Template> compile(std::string_view source, std::vector<ExprError>& errors,
                                           const Definitions* definitions = nullptr);
    std::string render(const EvalScope& scope) const;
    std::set<std::string> metrics_read() const;
    bool uses_history() const;
    // Metrics read outside optional segments: printed as "n/a" when missing.
    std::set<std::string> required_metrics() const;

private:
    struct Part {
        std::string text;
        std::optional<Expression> expr;
        std::string spec;
        int group = -1;  // index of the optional segment holding this part, or -1
    };
    int m_groups = 0;
    std::vector<Part> m_parts;
};

// True for the attribute names expressions read directly (name, kind, device, ...).
bool is_attribute_name(std::string_view name);

// The value of an expression that reads nothing (a literal such as "5ms"); nullopt otherwise.
std::optional<double> constant_number(const Expression& e);

// Formats a value the way messages show it (numbers without trailing zeros).
std::string format_value(const Value& v, const std::string& spec = {});

}  // namespace perfwatch
