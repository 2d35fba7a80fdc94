#include <algorithm>
#include <array>
#include <functional>
#include <deque>
#include <memory>
#include <span>

#include "engine/expr/functions.hpp"
#include "engine/expr/node.hpp"

// Evaluation over rows: each node once over all the rows that need it, with the same three-valued
// results as eval() gives on each row alone.
namespace perfwatch {

namespace expr {

namespace {

// One node's values on the rows: numbers and booleans (0 or 1) in `num`, strings in `str`.
// `has` and `num` point at the node's own storage (`has_w`, `num_w`) or at a metric column the
// scope keeps.
struct Column {
    const std::uint8_t* has = nullptr;
    const double* num = nullptr;
    std::vector<std::uint8_t> has_w;
    std::vector<double> num_w;
    std::vector<const std::string*> str;
};

// Rows a node is evaluated on (1); the others are left missing.
using Mask = std::vector<std::uint8_t>;

class RowEvaluator {
public:
    explicit RowEvaluator(const RowScope& scope) : m_scope(scope), m_rows(scope.rows()) {}

    void eval(const Node& n, const Mask& active, Column& out) {
        reset(out, n.type);
        switch (n.kind) {
            case NodeKind::number:
            case NodeKind::boolean: {
                const double v = n.kind == NodeKind::number ? n.number : (n.boolean ? 1.0 : 0.0);
                for (std::size_t r = 0; r < m_rows; ++r)
                    if (active[r]) {
                        out.has_w[r] = 1;
                        out.num_w[r] = v;
                    }
                return;
            }
            case NodeKind::string:
                for (std::size_t r = 0; r < m_rows; ++r)
                    if (active[r]) {
                        out.has_w[r] = 1;
                        out.str[r] = &n.text;
                    }
                return;
            case NodeKind::metric: {
                // The scope's column as it is: every reader looks only at the rows it asked for.
                const RowScope::Column c = m_scope.metric_column(n.text);
                out.has = c.has;
                out.num = c.values;
                return;
            }
            case NodeKind::run_metric: {
                const auto v = m_scope.run_metric(n.text);
                if (!v) return;
                for (std::size_t r = 0; r < m_rows; ++r)
                    if (active[r]) {
                        out.has_w[r] = 1;
                        out.num_w[r] = *v;
                    }
                return;
            }
            case NodeKind::attribute:
                for (std::size_t r = 0; r < m_rows; ++r)
                    if (active[r]) {
                        out.str[r] = m_scope.attribute(r, n.text);
                        out.has_w[r] = out.str[r] != nullptr;
                    }
                return;
            case NodeKind::present: {
                auto arg = take();
                eval(*n.args[0], active, *arg);
                for (std::size_t r = 0; r < m_rows; ++r)
                    if (active[r]) {
                        out.has_w[r] = 1;
                        out.num_w[r] = arg->has[r];
                    }
                give(std::move(arg));
                return;
            }
            case NodeKind::in_list: {
                auto arg = take();
                eval(*n.args[0], active, *arg);
                if (n.list)
                    for (std::size_t r = 0; r < m_rows; ++r)
                        if (active[r] && arg->has[r]) {
                            out.has_w[r] = 1;
                            out.num_w[r] = std::find(n.list->begin(), n.list->end(), *arg->str[r]) != n.list->end();
                        }
                give(std::move(arg));
                return;
            }
            case NodeKind::aggregate: {
                // The same for every row of the run: evaluated once, on the first row that needs it.
                std::size_t first = 0;
                while (first < m_rows && !active[first]) ++first;
                if (first == m_rows) return;
                Value v;
                m_scope.with_row(first, [&](const EvalScope& s) { v = expr::eval(n, s); });
                for (std::size_t r = first; r < m_rows; ++r)
                    if (active[r]) set(out, r, v);
                return;
            }
            case NodeKind::rank: {
                // 1 + the number of rows (all the run's entities of this kind) with a larger value.
                auto arg = take();
                eval(*n.args[0], Mask(m_rows, 1), *arg);
                std::vector<double> sorted;
                for (std::size_t r = 0; r < m_rows; ++r)
                    if (arg->has[r]) sorted.push_back(arg->num[r]);
                std::sort(sorted.begin(), sorted.end(), std::greater<>());
                for (std::size_t r = 0; r < m_rows; ++r)
                    if (active[r] && arg->has[r]) {
                        const auto above = std::lower_bound(sorted.begin(), sorted.end(), arg->num[r], std::greater<>());
                        out.has_w[r] = 1;
                        out.num_w[r] = 1.0 + static_cast<double>(above - sorted.begin());
                    }
                give(std::move(arg));
                return;
            }
            case NodeKind::history:
                // Every history function reads the baseline; without one each is missing.
                if (!m_scope.has_history()) return;
                for (std::size_t r = 0; r < m_rows; ++r)
                    if (active[r]) m_scope.with_row(r, [&](const EvalScope& s) { set(out, r, expr::eval(n, s)); });
                return;
            case NodeKind::neg:
            case NodeKind::not_: {
                auto arg = take();
                eval(*n.args[0], active, *arg);
                const bool neg = n.kind == NodeKind::neg;
                for (std::size_t r = 0; r < m_rows; ++r)
                    if (active[r] && arg->has[r]) {
                        out.has_w[r] = 1;
                        out.num_w[r] = neg ? -arg->num[r] : (arg->num[r] != 0 ? 0.0 : 1.0);
                    }
                give(std::move(arg));
                return;
            }
            case NodeKind::match: {
                auto arg = take();
                eval(*n.args[0], active, *arg);
                // A macro's node is shared by the rules using it: each row's attribute is matched once
                // (an argument computed otherwise may read the rule's own baseline: matched each time).
                std::vector<std::int8_t>* known =
                    n.args[0]->kind == NodeKind::attribute ? m_scope.shared_column(&n) : nullptr;
                if (n.regex)
                    for (std::size_t r = 0; r < m_rows; ++r)
                        if (active[r] && arg->has[r]) {
                            bool matched = false;
                            if (known != nullptr && (*known)[r] >= 0) {
                                matched = (*known)[r] != 0;
                            } else {
                                matched = std::regex_search(*arg->str[r], *n.regex);
                                if (known != nullptr) (*known)[r] = matched ? 1 : 0;
                            }
                            out.has_w[r] = 1;
                            out.num_w[r] = matched != n.negate_match;
                        }
                give(std::move(arg));
                return;
            }
            case NodeKind::binary:
                if (n.op == BinaryOp::and_ || n.op == BinaryOp::or_)
                    logical(n, active, out);
                else
                    binary(n, active, out);
                return;
            case NodeKind::conditional: {
                auto cond = take();
                eval(*n.args[0], active, *cond);
                Mask yes(m_rows, 0), no(m_rows, 0);
                for (std::size_t r = 0; r < m_rows; ++r)
                    if (active[r] && cond->has[r]) (cond->num[r] != 0 ? yes : no)[r] = 1;
                give(std::move(cond));
                auto a = take();
                auto b = take();
                eval(*n.args[1], yes, *a);
                eval(*n.args[2], no, *b);
                for (std::size_t r = 0; r < m_rows; ++r) {
                    const Column* from = yes[r] ? a.get() : no[r] ? b.get() : nullptr;
                    if (from == nullptr || !from->has[r]) continue;
                    out.has_w[r] = 1;
                    if (n.type == ValueType::string)
                        out.str[r] = from->str[r];
                    else
                        out.num_w[r] = from->num[r];
                }
                give(std::move(a));
                give(std::move(b));
                return;
            }
            case NodeKind::call: {
                std::vector<std::unique_ptr<Column>> args;
                for (const auto& arg : n.args) {
                    args.push_back(take());
                    eval(*arg, active, *args.back());
                }
                if (n.function != nullptr && n.function->numeric != nullptr) {
                    std::array<double, 8> small{};
                    std::vector<double> large(n.args.size() > small.size() ? n.args.size() : 0);
                    double* a = large.empty() ? small.data() : large.data();
                    for (std::size_t r = 0; r < m_rows; ++r) {
                        if (!active[r]) continue;
                        bool all = true;
                        for (std::size_t i = 0; i < args.size() && all; ++i) {
                            all = args[i]->has[r] != 0;
                            if (all) a[i] = args[i]->num[r];
                        }
                        if (!all) continue;
                        if (auto v = n.function->numeric(std::span<const double>(a, args.size()))) {
                            out.has_w[r] = 1;
                            out.num_w[r] = *v;
                        }
                    }
                }
                for (auto& arg : args) give(std::move(arg));
                return;
            }
        }
    }

private:
    // Three-valued and/or: false and missing = false, true or missing = true. The right side is
    // evaluated only on the rows the left side leaves undecided.
    void logical(const Node& n, const Mask& active, Column& out) {
        const bool is_and = n.op == BinaryOp::and_;
        const double decided = is_and ? 0.0 : 1.0;
        auto l = take();
        eval(*n.args[0], active, *l);
        Mask need(m_rows, 0);
        for (std::size_t r = 0; r < m_rows; ++r) need[r] = active[r] && !(l->has[r] && l->num[r] == decided);
        auto rt = take();
        eval(*n.args[1], need, *rt);
        for (std::size_t r = 0; r < m_rows; ++r) {
            if (!active[r]) continue;
            if (l->has[r] && l->num[r] == decided) {
                out.has_w[r] = 1;
                out.num_w[r] = decided;
            } else if (rt->has[r] && rt->num[r] == decided) {
                out.has_w[r] = 1;
                out.num_w[r] = decided;
            } else if (l->has[r] && rt->has[r]) {
                out.has_w[r] = 1;
                out.num_w[r] = is_and ? 1.0 : 0.0;
            }
        }
        give(std::move(l));
        give(std::move(rt));
    }

    void binary(const Node& n, const Mask& active, Column& out) {
        auto l = take();
        auto rt = take();
        eval(*n.args[0], active, *l);
        eval(*n.args[1], active, *rt);
        const bool strings = n.args[0]->type == ValueType::string;
        for (std::size_t r = 0; r < m_rows; ++r) {
            if (!active[r] || !l->has[r] || !rt->has[r]) continue;
            const double a = l->num[r], b = rt->num[r];
            double v = 0;
            switch (n.op) {
                case BinaryOp::eq: v = strings ? *l->str[r] == *rt->str[r] : a == b; break;
                case BinaryOp::ne: v = strings ? *l->str[r] != *rt->str[r] : a != b; break;
                case BinaryOp::lt: v = a < b; break;
                case BinaryOp::le: v = a <= b; break;
                case BinaryOp::gt: v = a > b; break;
                case BinaryOp::ge: v = a >= b; break;
                case BinaryOp::add: v = a + b; break;
                case BinaryOp::sub: v = a - b; break;
                case BinaryOp::mul: v = a * b; break;
                case BinaryOp::div:
                    if (b == 0) continue;  // no meaningful ratio: missing, as eval() has it
                    v = a / b;
                    break;
                case BinaryOp::and_:
                case BinaryOp::or_: continue;
            }
            out.has_w[r] = 1;
            out.num_w[r] = v;
        }
        give(std::move(l));
        give(std::move(rt));
    }

    void reset(Column& c, ValueType type) {
        c.has_w.assign(m_rows, 0);
        c.has = c.has_w.data();
        c.num_w.resize(m_rows);
        c.num = c.num_w.data();
        if (type == ValueType::string) c.str.assign(m_rows, nullptr);
    }

    // A value eval() gave for one row.
    void set(Column& out, std::size_t r, const Value& v) {
        if (const double* d = std::get_if<double>(&v)) {
            out.has_w[r] = 1;
            out.num_w[r] = *d;
        } else if (const bool* b = std::get_if<bool>(&v)) {
            out.has_w[r] = 1;
            out.num_w[r] = *b ? 1.0 : 0.0;
        } else if (const std::string* s = std::get_if<std::string>(&v)) {
            out.has_w[r] = 1;
            if (out.str.size() < m_rows) out.str.assign(m_rows, nullptr);
            out.str[r] = &m_strings.emplace_back(*s);
        }
    }

    std::unique_ptr<Column> take() {
        if (m_free.empty()) return std::make_unique<Column>();
        auto c = std::move(m_free.back());
        m_free.pop_back();
        return c;
    }
    void give(std::unique_ptr<Column> c) { m_free.push_back(std::move(c)); }

    const RowScope& m_scope;
    std::size_t m_rows;
    std::vector<std::unique_ptr<Column>> m_free;  // columns to reuse (their storage kept)
    std::deque<std::string> m_strings;            // strings that only a per-row value held
};

}  // namespace

}  // namespace expr

std::vector<Truth> Expression::decide_rows(const RowScope& scope) const {
    const std::size_t rows = scope.rows();
    std::vector<Truth> out(rows, Truth::missing);
    if (m_root->type != ValueType::boolean || rows == 0) return out;
    expr::RowEvaluator evaluator(scope);
    const expr::Mask all(rows, 1);
    expr::Column values;
    evaluator.eval(*m_root, all, values);
    for (std::size_t r = 0; r < rows; ++r)
        if (values.has[r]) out[r] = values.num[r] != 0 ? Truth::yes : Truth::no;
    return out;
}

}  // namespace perfwatch
