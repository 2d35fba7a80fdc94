#include <fmt/format.h>

#include <cmath>

#include "core/vocabulary.hpp"
#include "engine/expr.hpp"

// Message templates: literal text with {expression:spec} parts and [[optional]] segments.
namespace perfwatch {

namespace {

// "{x:time}" prints nanoseconds in the largest fitting unit; "{x:bytes}" prints bytes in SI units.
std::optional<std::string> format_human(double d, const std::string& spec) {
    return spec == "time" || spec == "bytes" ? format_in_unit(d, spec) : std::nullopt;
}

}  // namespace

std::string format_value(const Value& v, const std::string& spec) {
    if (std::holds_alternative<std::monostate>(v)) return "n/a";
    try {
        if (const double* d = std::get_if<double>(&v)) {
            if (auto human = format_human(*d, spec)) return *human;
            if (spec.empty()) {
                if (std::fabs(*d) >= 1e15 || *d == std::floor(*d)) return fmt::format("{:.0f}", *d);
                return fmt::format("{:.4g}", *d);
            }
            return fmt::format(fmt::runtime("{:" + spec + "}"), *d);
        }
        if (const bool* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
        return fmt::format(fmt::runtime("{:" + spec + "}"), std::get<std::string>(v));
    } catch (const fmt::format_error&) {
        return "n/a";
    }
}

std::optional<Template> Template::compile(std::string_view source, std::vector<ExprError>& errors,
                                          const Definitions* definitions) {
    Template t;
    const std::size_t before = errors.size();
    std::string text;
    std::size_t i = 0;
    int group = -1;
    std::size_t group_start = 0;
    auto flush = [&]() {
        if (!text.empty()) t.m_parts.push_back(Part{std::move(text), std::nullopt, {}, group});
        text.clear();
    };
    while (i < source.size()) {
        const char c = source[i];
        if (source.substr(i).starts_with("[[")) {
            if (group >= 0) errors.push_back({i, "optional segments '[[ ]]' do not nest"});
            flush();
            group = t.m_groups++;
            group_start = i;
            i += 2;
            continue;
        }
        if (source.substr(i).starts_with("]]") && group >= 0) {
            flush();
            group = -1;
            i += 2;
            continue;
        }
        if (c == '{' && i + 1 < source.size() && source[i + 1] == '{') {
            text.push_back('{');
            i += 2;
            continue;
        }
        if (c == '}' && i + 1 < source.size() && source[i + 1] == '}') {
            text.push_back('}');
            i += 2;
            continue;
        }
        if (c == '}') {
            errors.push_back({i, "unmatched '}' (write '}}' for a literal brace)"});
            ++i;
            continue;
        }
        if (c != '{') {
            text.push_back(c);
            ++i;
            continue;
        }
        // Find the closing brace, skipping quoted strings; a ':' at depth 0 starts the spec.
        const std::size_t start = i + 1;
        std::size_t j = start, colon = std::string_view::npos;
        int depth = 0;
        char quote = 0;
        for (; j < source.size(); ++j) {
            const char d = source[j];
            if (quote) {
                if (d == quote) quote = 0;
                continue;
            }
            if (d == '"' || d == '\'') quote = d;
            else if (d == '(') ++depth;
            else if (d == ')') --depth;
            else if (d == ':' && depth == 0 && colon == std::string_view::npos) colon = j;
            else if (d == '}' && depth == 0) break;
        }
        if (j >= source.size()) {
            errors.push_back({i, "unclosed '{' in message"});
            break;
        }
        const std::size_t expr_end = colon == std::string_view::npos ? j : colon;
        std::vector<ExprError> sub;
        auto e = Expression::compile(source.substr(start, expr_end - start), sub, definitions);
        for (auto& err : sub) errors.push_back({err.offset + start, err.message});
        flush();
        Part p;
        p.group = group;
        if (colon != std::string_view::npos) {
            p.spec = std::string(source.substr(colon + 1, j - colon - 1));
            try {
                const ValueType type = e ? e->type() : ValueType::number;
                if (type == ValueType::number && (p.spec == "time" || p.spec == "bytes"))
                    ;  // perfwatch's own specs
                else if (type == ValueType::string)
                    (void)fmt::format(fmt::runtime("{:" + p.spec + "}"), std::string("x"));
                else
                    (void)fmt::format(fmt::runtime("{:" + p.spec + "}"), 1.5);
            } catch (const fmt::format_error& ex) {
                errors.push_back({colon + 1, fmt::format("invalid format spec '{}': {}", p.spec, ex.what())});
            }
        }
        p.expr = std::move(e);
        t.m_parts.push_back(std::move(p));
        i = j + 1;
    }
    if (group >= 0) errors.push_back({group_start, "optional segment '[[' is not closed by ']]'"});
    flush();
    if (errors.size() != before) return std::nullopt;
    return t;
}

std::string Template::render(const EvalScope& scope) const {
    std::vector<Value> values(m_parts.size());
    std::vector<bool> dropped(static_cast<std::size_t>(m_groups), false);
    for (std::size_t i = 0; i < m_parts.size(); ++i) {
        if (!m_parts[i].expr) continue;
        values[i] = m_parts[i].expr->evaluate(scope);
        if (m_parts[i].group >= 0 && std::holds_alternative<std::monostate>(values[i]))
            dropped[static_cast<std::size_t>(m_parts[i].group)] = true;
    }
    std::string out;
    for (std::size_t i = 0; i < m_parts.size(); ++i) {
        const Part& p = m_parts[i];
        if (p.group >= 0 && dropped[static_cast<std::size_t>(p.group)]) continue;
        out += p.text;
        if (p.expr) out += format_value(values[i], p.spec);
    }
    return out;
}

std::set<std::string> Template::required_metrics() const {
    std::set<std::string> out;
    for (const Part& p : m_parts)
        if (p.expr && p.group < 0) out.insert(p.expr->metrics_read().begin(), p.expr->metrics_read().end());
    return out;
}

bool Template::uses_history() const {
    return std::any_of(m_parts.begin(), m_parts.end(), [](const Part& p) { return p.expr && p.expr->uses_history(); });
}

std::set<std::string> Template::metrics_read() const {
    std::set<std::string> out;
    for (const Part& p : m_parts)
        if (p.expr) out.insert(p.expr->metrics_read().begin(), p.expr->metrics_read().end());
    return out;
}

}  // namespace perfwatch
