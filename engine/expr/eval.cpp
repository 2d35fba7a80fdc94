#include <algorithm>
#include <array>
#include <functional>
#include <span>

#include "engine/expr/functions.hpp"
#include "engine/expr/node.hpp"

// Evaluation: three-valued (a missing metric propagates), aggregates memoized per run.
namespace perfwatch {

namespace expr {

namespace {

// An aggregate's result for this run: computed once per run when the scope keeps a memo.
const std::vector<double>& memoized(const Node& n, const std::string& kind, const EvalScope& s,
                                    std::vector<double>& local, const std::function<std::vector<double>()>& compute) {
    auto* memo = s.memo();
    if (memo == nullptr) {
        local = compute();
        return local;
    }
    const auto key = std::make_pair(static_cast<const void*>(&n), kind);
    auto it = memo->find(key);
    if (it == memo->end()) it = memo->emplace(key, compute()).first;
    return it->second;
}


}  // namespace

Value eval(const Node& n, const EvalScope& s) {
    switch (n.kind) {
        case NodeKind::number: return n.number;
        case NodeKind::string: return n.text;
        case NodeKind::boolean: return n.boolean;
        case NodeKind::metric: {
            if (auto v = s.metric(n.text)) return *v;
            return std::monostate{};
        }
        case NodeKind::run_metric: {
            if (auto v = s.run_metric(n.text)) return *v;
            return std::monostate{};
        }
        case NodeKind::attribute: {
            if (auto v = s.attribute(n.text)) return *v;
            return std::monostate{};
        }
        case NodeKind::present: {
            const Value v = eval(*n.args[0], s);
            return !std::holds_alternative<std::monostate>(v);
        }
        case NodeKind::in_list: {
            const Value v = eval(*n.args[0], s);
            const std::string* str = std::get_if<std::string>(&v);
            if (str == nullptr || !n.list) return std::monostate{};
            return std::find(n.list->begin(), n.list->end(), *str) != n.list->end();
        }
        case NodeKind::aggregate: {
            std::vector<double> local;
            const auto& r = memoized(n, n.entity_kind, s, local, [&] {
                double total = 0;
                if (n.aggregate == AggregateOp::top) {
                    std::vector<double> values;
                    s.for_each_entity(n.entity_kind, [&](const EvalScope& other) {
                        const Value v = eval(*n.args[0], other);
                        if (const double* d = std::get_if<double>(&v)) values.push_back(*d);
                    });
                    const auto k = std::min(values.size(), static_cast<std::size_t>(n.args[1]->number));
                    std::partial_sort(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end(),
                                      std::greater<>());
                    for (std::size_t i = 0; i < k; ++i) total += values[i];
                    return std::vector<double>{total};
                }
                const bool is_sum = n.aggregate == AggregateOp::sum;
                const Node* filter = n.args.size() > (is_sum ? 1u : 0u) ? n.args.back().get() : nullptr;
                s.for_each_entity(n.entity_kind, [&](const EvalScope& other) {
                    if (filter != nullptr) {
                        const Value f = eval(*filter, other);
                        if (const bool* b = std::get_if<bool>(&f); b == nullptr || !*b) return;
                    }
                    if (!is_sum) {
                        total += 1;
                        return;
                    }
                    const Value v = eval(*n.args[0], other);
                    if (const double* d = std::get_if<double>(&v)) total += *d;
                });
                return std::vector<double>{total};
            });
            return r.at(0);
        }
        case NodeKind::rank: {
            const Value v = eval(*n.args[0], s);
            const double* mine = std::get_if<double>(&v);
            if (mine == nullptr) return std::monostate{};
            const auto kind = s.attribute("kind");
            if (!kind) return std::monostate{};
            std::vector<double> local;
            const auto& sorted = memoized(n, *kind, s, local, [&] {
                std::vector<double> values;
                s.for_each_entity(*kind, [&](const EvalScope& other) {
                    const Value o = eval(*n.args[0], other);
                    if (const double* d = std::get_if<double>(&o)) values.push_back(*d);
                });
                std::sort(values.begin(), values.end(), std::greater<>());
                return values;
            });
            // 1 + the number of entities with a strictly larger value.
            const auto above = std::lower_bound(sorted.begin(), sorted.end(), *mine, std::greater<>());
            return 1.0 + static_cast<double>(above - sorted.begin());
        }
        case NodeKind::history: return n.function->history(n, s);
        case NodeKind::neg: {
            const Value v = eval(*n.args[0], s);
            if (const double* d = std::get_if<double>(&v)) return -*d;
            return std::monostate{};
        }
        case NodeKind::not_: {
            const Value v = eval(*n.args[0], s);
            if (const bool* b = std::get_if<bool>(&v)) return !*b;
            return std::monostate{};
        }
        case NodeKind::match: {
            const Value v = eval(*n.args[0], s);
            const std::string* str = std::get_if<std::string>(&v);
            if (str == nullptr || !n.regex) return std::monostate{};
            return std::regex_search(*str, *n.regex) != n.negate_match;
        }
        case NodeKind::binary: {
            const BinaryOp o = n.op;
            if (o == BinaryOp::and_ || o == BinaryOp::or_) {
                // Three-valued: false and missing = false; true or missing = true.
                const bool is_and = o == BinaryOp::and_;
                const Value l = eval(*n.args[0], s);
                const bool* lb = std::get_if<bool>(&l);
                if (lb && *lb != is_and) return *lb;
                const Value r = eval(*n.args[1], s);
                const bool* rb = std::get_if<bool>(&r);
                if (rb && *rb != is_and) return *rb;
                if (lb && rb) return is_and;
                return std::monostate{};
            }
            const Value l = eval(*n.args[0], s);
            const Value r = eval(*n.args[1], s);
            if (std::holds_alternative<std::monostate>(l) || std::holds_alternative<std::monostate>(r))
                return std::monostate{};
            if (o == BinaryOp::eq) return l == r;
            if (o == BinaryOp::ne) return l != r;
            const double a = std::get<double>(l), b = std::get<double>(r);
            switch (o) {
                case BinaryOp::lt: return a < b;
                case BinaryOp::le: return a <= b;
                case BinaryOp::gt: return a > b;
                case BinaryOp::ge: return a >= b;
                case BinaryOp::add: return a + b;
                case BinaryOp::sub: return a - b;
                case BinaryOp::mul: return a * b;
                case BinaryOp::div:
                    if (b == 0) return std::monostate{};  // no meaningful ratio: treat as missing
                    return a / b;
                case BinaryOp::and_:
                case BinaryOp::or_:
                case BinaryOp::eq:
                case BinaryOp::ne: break;
            }
            return std::monostate{};
        }
        case NodeKind::conditional: {
            const Value c = eval(*n.args[0], s);
            const bool* cb = std::get_if<bool>(&c);
            if (cb == nullptr) return std::monostate{};
            return eval(*n.args[*cb ? 1 : 2], s);
        }
        case NodeKind::call: {
            std::array<double, 8> small{};
            std::vector<double> large;
            const bool fits = n.args.size() <= small.size();
            if (!fits) large.resize(n.args.size());
            double* a = fits ? small.data() : large.data();
            for (std::size_t i = 0; i < n.args.size(); ++i) {
                const Value v = eval(*n.args[i], s);
                const double* d = std::get_if<double>(&v);
                if (d == nullptr) return std::monostate{};
                a[i] = *d;
            }
            if (n.function == nullptr || n.function->numeric == nullptr) return std::monostate{};
            if (auto v = n.function->numeric(std::span<const double>(a, n.args.size()))) return *v;
            return std::monostate{};
        }
    }
    return std::monostate{};
}

}  // namespace expr

Value Expression::evaluate(const EvalScope& scope) const { return expr::eval(*m_root, scope); }

ValueType Expression::type() const { return m_root->type; }

std::optional<double> constant_number(const Expression& e) {
    struct NoScope final : EvalScope {
        std::optional<double> metric(std::string_view) const override { return {}; }
        std::optional<double> run_metric(std::string_view) const override { return {}; }
        std::optional<std::string> attribute(std::string_view) const override { return {}; }
    };
    if (e.type() != ValueType::number || !e.metrics_read().empty()) return std::nullopt;
    const Value v = e.evaluate(NoScope{});
    if (const double* d = std::get_if<double>(&v)) return *d;
    return std::nullopt;
}

}  // namespace perfwatch
