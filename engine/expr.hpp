#pragma once

#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace perfwatch {

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
};

// A compile error at a byte offset of the expression text.
struct ExprError {
    std::size_t offset = 0;
    std::string message;
};

struct Node;

// A parsed, type-checked expression. Immutable; safe to evaluate from many threads.
class Expression {
public:
    // Parses and type-checks `source`. Identifiers must be canonical metrics, known attributes
    // (name, kind, occupancy_limiter, grid, block, cc, device, stream) or run.METRIC.
    static std::optional<Expression> compile(std::string_view source, std::vector<ExprError>& errors);

    Value evaluate(const EvalScope& scope) const;
    ValueType type() const;
    const std::string& source() const { return m_source; }
    // Canonical metrics the expression reads ("run." prefixed for run metrics).
    const std::set<std::string>& metrics_read() const { return m_metrics; }

private:
    std::shared_ptr<const Node> m_root;
    std::string m_source;
    std::set<std::string> m_metrics;
};

// "text {expr} more {expr:.1f}": literal text with expressions and fmt format specs, plus
// "{expr:time}" (nanoseconds shown as "1.25 ms") and "{expr:bytes}" ("2.10 GB").
// "{{" and "}}" are literal braces. A missing value prints as "n/a", except inside an optional
// segment "[[ ... ]]", which is left out whole when any value in it is missing.
class Template {
public:
    static std::optional<Template> compile(std::string_view source, std::vector<ExprError>& errors);
    std::string render(const EvalScope& scope) const;
    std::set<std::string> metrics_read() const;

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

// Formats a value the way messages show it (numbers without trailing zeros).
std::string format_value(const Value& v, const std::string& spec = {});

}  // namespace perfwatch
