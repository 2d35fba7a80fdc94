#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

#include "core/vocabulary.hpp"
#include "engine/expr.hpp"
#include "engine/expr/functions.hpp"
#include "engine/expr/lexer.hpp"
#include "engine/expr/node.hpp"

// The parser and type checker: tokens to a typed tree of Nodes, every error with its offset.
namespace perfwatch {

namespace expr {

namespace {

constexpr auto k_attributes = std::to_array<std::string_view>({
    "name", "kind", "occupancy_limiter", "grid", "block", "cc", "device", "stream", "context", "process", "time",
    "gpu", "direction", "host_memory", "synchronizing", "domain", "style", "kernel_type", "short_name",
    "startup_call", "launch_limiter", "op", "dtype", "bound",
});

int binary_precedence(const Token& t) {
    if (t.kind != Tok::op) return -1;
    const std::string& o = t.text;
    if (o == "or") return 1;
    if (o == "and") return 2;
    if (o == "<" || o == "<=" || o == ">" || o == ">=" || o == "==" || o == "!=" || o == "~" || o == "!~" || o == "in")
        return 4;
    if (o == "+" || o == "-") return 5;
    if (o == "*" || o == "/") return 6;
    return -1;
}

BinaryOp binary_op(std::string_view o) {
    static constexpr auto k_ops = std::to_array<std::pair<std::string_view, BinaryOp>>({
        {"and", BinaryOp::and_}, {"or", BinaryOp::or_}, {"==", BinaryOp::eq}, {"!=", BinaryOp::ne},
        {"<", BinaryOp::lt},     {"<=", BinaryOp::le},  {">", BinaryOp::gt},  {">=", BinaryOp::ge},
        {"+", BinaryOp::add},    {"-", BinaryOp::sub},  {"*", BinaryOp::mul}, {"/", BinaryOp::div},
    });
    for (const auto& [text, op] : k_ops)
        if (text == o) return op;
    return BinaryOp::and_;
}

constexpr std::array<std::string_view, 7> k_entity_kinds{"run",       "device",   "kernel", "launch",
                                                         "nvtx_range", "api_call", "memcpy"};


class Parser {
public:
    Parser(std::vector<Token> tokens, std::vector<ExprError>& errors, std::set<std::string>& metrics,
           const Definitions* defs)
        : m_toks(std::move(tokens)), m_errors(errors), m_metrics(&metrics), m_defs(defs) {}

    std::shared_ptr<Node> parse() {
        auto n = expression(0);
        if (peek().kind != Tok::end) error(peek().offset, "unexpected text after the end of the expression");
        return n;
    }

private:
    const Token& peek() const { return m_toks[m_i]; }
    const Token& take() { return m_toks[m_i < m_toks.size() - 1 ? m_i++ : m_i]; }
    void error(std::size_t offset, std::string message) { m_errors.push_back({offset, std::move(message)}); }

    std::shared_ptr<Node> expression(int min_prec) {
        auto left = unary();
        while (true) {
            const int prec = binary_precedence(peek());
            if (prec < 0 || prec < min_prec) return left;
            Token op = take();
            if (op.text == "in") {
                left = in_list(std::move(op), std::move(left));
                continue;
            }
            auto right = expression(prec + 1);
            left = binary(std::move(op), std::move(left), std::move(right));
        }
    }

    std::shared_ptr<Node> unary() {
        const Token& t = peek();
        if (t.kind == Tok::op && (t.text == "-" || t.text == "not")) {
            Token op = take();
            auto n = std::make_shared<Node>();
            n->offset = op.offset;
            if (op.text == "-") {
                n->kind = NodeKind::neg;
                n->args.push_back(unary());
                n->poisoned = !expect_type(*n->args[0], ValueType::number, "'-'");
                n->type = ValueType::number;
            } else {
                n->kind = NodeKind::not_;
                n->args.push_back(expression(3));
                n->poisoned = !expect_type(*n->args[0], ValueType::boolean, "'not'");
                n->type = ValueType::boolean;
            }
            return n;
        }
        return primary();
    }

    std::shared_ptr<Node> primary() {
        Token t = take();
        auto n = std::make_shared<Node>();
        n->offset = t.offset;
        switch (t.kind) {
            case Tok::number:
                n->kind = NodeKind::number;
                n->number = t.number;
                return n;
            case Tok::string:
                n->kind = NodeKind::string;
                n->type = ValueType::string;
                n->text = t.text;
                return n;
            case Tok::lparen: {
                auto inner = expression(0);
                if (peek().kind != Tok::rparen)
                    error(peek().offset, "expected ')'");
                else
                    take();
                return inner;
            }
            case Tok::ident:
                if (peek().kind == Tok::lparen) return call(t);
                return identifier(t);
            case Tok::end:
                error(t.offset, "expected a value, found the end of the expression");
                return n;
            default:
                error(t.offset, fmt::format("expected a value, found '{}'", t.text.empty() ? "," : t.text));
                return n;
        }
    }

    std::shared_ptr<Node> identifier(const Token& t) {
        auto n = std::make_shared<Node>();
        n->offset = t.offset;
        n->text = t.text;
        if (t.text == "true" || t.text == "false") {
            n->kind = NodeKind::boolean;
            n->type = ValueType::boolean;
            n->boolean = t.text == "true";
            return n;
        }
        if (m_defs != nullptr) {
            if (const Definitions::Named* d = m_defs->expression(t.text)) {
                m_metrics->insert(d->metrics.begin(), d->metrics.end());
                return d->root;
            }
            if (m_defs->list(t.text)) {
                error(t.offset, fmt::format("'{}' is a list: use it as `name in {}`", t.text, t.text));
                n->poisoned = true;
                return n;
            }
        }
        if (t.text.starts_with("run.")) {
            const std::string m = t.text.substr(4);
            n->kind = NodeKind::run_metric;
            n->text = m;
            if (find_metric_def(m) == nullptr) {
                error(t.offset, fmt::format("unknown run metric '{}'", m));
                n->poisoned = true;
            }
            m_metrics->insert(t.text);
            return n;
        }
        for (std::string_view a : k_attributes) {
            if (a == t.text) {
                n->kind = NodeKind::attribute;
                n->type = ValueType::string;
                return n;
            }
        }
        n->kind = NodeKind::metric;
        if (find_metric_def(t.text) == nullptr) {
            error(t.offset, fmt::format("unknown metric '{}' (see `perfwatch metrics`; other metrics a report "
                                        "carries are read with metric(\"name\"))",
                                        t.text));
            n->poisoned = true;
        }
        m_metrics->insert(t.text);
        return n;
    }

    // count(KIND[, FILTER]) and sum(KIND, VALUE[, FILTER]): over the run's entities of KIND,
    // each read in its own scope (so their metrics are not the current entity's).
    std::shared_ptr<Node> aggregate(const Token& name) {
        auto n = std::make_shared<Node>();
        n->kind = NodeKind::aggregate;
        n->offset = name.offset;
        n->text = name.text;
        n->aggregate = name.text == "top" ? AggregateOp::top : name.text == "sum" ? AggregateOp::sum : AggregateOp::count;
        n->type = ValueType::number;
        const Token& kind = peek();
        if (kind.kind != Tok::ident ||
            std::find(k_entity_kinds.begin(), k_entity_kinds.end(), kind.text) == k_entity_kinds.end()) {
            error(kind.offset, fmt::format("{}() takes an entity kind first (kernel, launch, memcpy, api_call, "
                                           "nvtx_range, device)",
                                           name.text));
            n->poisoned = true;
        } else {
            n->entity_kind = kind.text;
        }
        take();
        std::set<std::string> inner;
        std::set<std::string>* outer = m_metrics;
        m_metrics = &inner;
        while (peek().kind == Tok::comma) {
            take();
            n->args.push_back(expression(0));
        }
        m_metrics = outer;
        for (const std::string& m : inner)
            if (m.starts_with("run.")) m_metrics->insert(m);
        if (peek().kind != Tok::rparen)
            error(peek().offset, fmt::format("expected ')' to close the call of {}()", name.text));
        else
            take();
        if (n->aggregate == AggregateOp::top) {
            // top(KIND, VALUE, K): the sum of the K largest values; K a constant.
            if (n->args.size() != 2 || n->args[1]->kind != NodeKind::number || n->args[1]->number < 1) {
                error(name.offset, "top() takes a kind, a value and a constant count: top(kernel, duration_total, 3)");
                n->poisoned = true;
            } else if (!expect_type(*n->args[0], ValueType::number, "the value of top()")) {
                n->poisoned = true;
            }
            return n;
        }
        const std::size_t want_value = n->aggregate == AggregateOp::sum ? 1 : 0;
        if (n->args.size() < want_value || n->args.size() > want_value + 1) {
            error(name.offset, want_value == 1 ? "sum() takes a kind, a value and an optional filter"
                                                  : "count() takes a kind and an optional filter");
            n->poisoned = true;
            return n;
        }
        if (want_value == 1 && !expect_type(*n->args[0], ValueType::number, "the value of sum()")) n->poisoned = true;
        if (n->args.size() > want_value &&
            !expect_type(*n->args[want_value], ValueType::boolean, fmt::format("the filter of {}()", name.text)))
            n->poisoned = true;
        return n;
    }

    // baseline(m), change(m), spread(m), confidence(m), changed(m), first_bad(m),
    // regressed(m[, min_change: 5%][, confidence: 0.99][, worse: "higher"]), improved(...),
    // is_new(), vanished(KIND), vanished_names(KIND).
    std::shared_ptr<Node> history(const Token& name, const FunctionDef& def) {
        auto n = std::make_shared<Node>();
        n->kind = NodeKind::history;
        n->offset = name.offset;
        n->text = name.text;
        n->function = &def;
        const std::string& f = name.text;
        n->type = def.result;
        const bool parameters = def.history_args == HistoryArgs::metric_and_parameters;
        auto close = [&] {
            if (peek().kind != Tok::rparen) {
                error(peek().offset, fmt::format("expected ')' to close the call of {}()", f));
                while (peek().kind != Tok::rparen && peek().kind != Tok::end) take();
            }
            take();
        };
        if (def.history_args == HistoryArgs::none) {
            if (peek().kind != Tok::rparen) error(peek().offset, fmt::format("{}() takes no arguments", f));
            close();
            return n;
        }
        if (def.history_args == HistoryArgs::entity_kind) {
            const Token kind = take();
            if (kind.kind != Tok::ident ||
                std::find(k_entity_kinds.begin(), k_entity_kinds.end(), kind.text) == k_entity_kinds.end() ||
                kind.text == "run") {
                error(kind.offset, fmt::format("{}() takes an entity kind (kernel, memcpy, api_call, nvtx_range, device)", f));
                n->poisoned = true;
            } else {
                n->entity_kind = kind.text;
            }
            close();
            return n;
        }
        const Token metric = take();
        if (metric.kind != Tok::ident || is_attribute_name(metric.text) ||
            (m_defs != nullptr && (m_defs->expression(metric.text) || m_defs->list(metric.text)))) {
            error(metric.offset, fmt::format("{}() takes a metric name first, such as {}(duration_mean)", f, f));
            n->poisoned = true;
        } else {
            auto m = identifier(metric);
            n->poisoned = m->poisoned;
            n->check.metric = m->text;
            n->check.run_level = m->kind == NodeKind::run_metric;
            const MetricDef* metric_def = find_metric_def(m->text);
            const std::string_view unit = metric_def != nullptr ? metric_def->unit : "";
            n->check.higher_is_worse = !(unit == "percent" || unit == "byte/s" || unit == "hz");
        }
        while (peek().kind == Tok::comma) {
            take();
            const Token key = take();
            if (key.kind != Tok::ident || peek().kind != Tok::colon || !parameters) {
                error(key.offset, parameters
                                      ? fmt::format("{}() takes named parameters: min_change: 5%, confidence: 0.99, "
                                                    "worse: \"higher\" or \"lower\"",
                                                    f)
                                      : fmt::format("{}() takes one metric", f));
                n->poisoned = true;
                break;
            }
            take();  // :
            const Token value = take();
            if (key.text == "min_change" && value.kind == Tok::number && value.number >= 0) {
                n->check.min_change_pct = value.number;
            } else if (key.text == "confidence" && value.kind == Tok::number && value.number > 0 &&
                       value.number < 100) {
                n->check.confidence = value.number > 1 ? value.number / 100 : value.number;
            } else if (key.text == "worse" && value.kind == Tok::string &&
                       (value.text == "higher" || value.text == "lower")) {
                n->check.higher_is_worse = value.text == "higher";
            } else {
                error(key.offset, key.text == "min_change"   ? "min_change must be a constant percentage such as 5%"
                                  : key.text == "confidence" ? "confidence must be a constant between 0 and 1, such as 0.99"
                                  : key.text == "worse"      ? "worse must be \"higher\" or \"lower\""
                                                             : fmt::format("unknown parameter '{}' (min_change, "
                                                                           "confidence, worse)",
                                                                           key.text));
                n->poisoned = true;
            }
        }
        close();
        return n;
    }

    std::shared_ptr<Node> in_list(Token op, std::shared_ptr<Node> left) {
        auto n = std::make_shared<Node>();
        n->kind = NodeKind::in_list;
        n->type = ValueType::boolean;
        n->offset = op.offset;
        n->poisoned = !expect_type(*left, ValueType::string, "left of 'in'");
        n->args.push_back(std::move(left));
        const Token list = take();
        if (list.kind == Tok::ident && m_defs != nullptr) n->list = m_defs->list(list.text);
        if (!n->list) {
            error(list.offset, "right of 'in' must name a list defined under 'lists:'");
            n->poisoned = true;
        }
        return n;
    }

    std::shared_ptr<Node> call(const Token& name) {
        const FunctionDef* def = find_function(name.text);
        if (def != nullptr && def->form == CallForm::aggregate) {
            take();  // (
            return aggregate(name);
        }
        if (def != nullptr && def->form == CallForm::history) {
            take();  // (
            return history(name, *def);
        }
        auto n = std::make_shared<Node>();
        n->kind = NodeKind::call;
        n->offset = name.offset;
        n->text = name.text;
        take();  // (
        // present(m) is never missing whatever the report holds: what it tests is not read.
        std::set<std::string> tested;
        std::set<std::string>* outer = m_metrics;
        if (def != nullptr && def->form == CallForm::presence) m_metrics = &tested;
        if (peek().kind != Tok::rparen) {
            while (true) {
                n->args.push_back(expression(0));
                if (peek().kind == Tok::comma) {
                    take();
                    continue;
                }
                break;
            }
        }
        m_metrics = outer;
        if (peek().kind != Tok::rparen)
            error(peek().offset, fmt::format("expected ')' to close the call of {}()", name.text));
        else
            take();
        if (def == nullptr) {
            error(name.offset, fmt::format("unknown function '{}'", name.text));
            return n;
        }
        const int argc = static_cast<int>(n->args.size());
        if (argc < def->min_args || (def->max_args >= 0 && argc > def->max_args)) {
            error(name.offset, fmt::format("{}() takes {} argument(s), given {}", name.text,
                                           def->max_args == def->min_args ? std::to_string(def->min_args)
                                           : def->max_args < 0 ? fmt::format("{} or more", def->min_args)
                                                               : fmt::format("{} to {}", def->min_args, def->max_args),
                                           argc));
            return n;
        }
        n->function = def;
        switch (def->form) {
            case CallForm::metric_ref:
            case CallForm::attr_ref: return reference(std::move(n), *def);
            case CallForm::rank: return rank(std::move(n));
            case CallForm::conditional: return conditional(std::move(n));
            case CallForm::presence: return presence(std::move(n));
            case CallForm::numeric:
            case CallForm::aggregate:
            case CallForm::history: break;
        }
        for (const auto& a : n->args)
            if (!expect_type(*a, ValueType::number, fmt::format("{}()", name.text))) n->poisoned = true;
        n->type = def->result;
        return n;
    }

    // metric("name"), attr("name").
    std::shared_ptr<Node> reference(std::shared_ptr<Node> n, const FunctionDef& def) {
        if (n->args[0]->kind != NodeKind::string) {
            error(n->args[0]->offset, fmt::format("{}() takes a quoted name", def.name));
            return n;
        }
        const bool is_metric = def.form == CallForm::metric_ref;
        n->kind = is_metric ? NodeKind::metric : NodeKind::attribute;
        n->type = is_metric ? ValueType::number : ValueType::string;
        n->text = n->args[0]->text;
        n->args.clear();
        if (is_metric) m_metrics->insert(n->text);
        return n;
    }

    std::shared_ptr<Node> rank(std::shared_ptr<Node> n) {
        n->kind = NodeKind::rank;
        n->type = ValueType::number;
        n->poisoned = !expect_type(*n->args[0], ValueType::number, "rank()");
        return n;
    }

    // if(condition, a, b): a where the condition holds, b where it does not, missing where it is
    // missing; a and b of one type (numbers or text).
    std::shared_ptr<Node> conditional(std::shared_ptr<Node> n) {
        n->kind = NodeKind::conditional;
        const bool cond_ok = expect_type(*n->args[0], ValueType::boolean, "the condition of if()");
        const auto& a = *n->args[1];
        const auto& b = *n->args[2];
        n->poisoned = !cond_ok || a.poisoned || b.poisoned;
        if (!n->poisoned && a.type != b.type) {
            error(b.offset, fmt::format("if() gives {} or {}: both must be of one type", to_string(a.type), to_string(b.type)));
            n->poisoned = true;
        }
        n->type = a.type;
        return n;
    }

    std::shared_ptr<Node> presence(std::shared_ptr<Node> n) {
        const NodeKind k = n->args[0]->kind;
        if (k != NodeKind::metric && k != NodeKind::run_metric && k != NodeKind::attribute)
            error(n->args[0]->offset, "present() takes a metric or attribute");
        n->kind = NodeKind::present;
        n->type = ValueType::boolean;
        return n;
    }

    std::shared_ptr<Node> binary(Token op, std::shared_ptr<Node> l, std::shared_ptr<Node> r) {
        auto n = std::make_shared<Node>();
        n->offset = op.offset;
        n->text = op.text;
        const std::string& o = op.text;
        if (o == "~" || o == "!~") {
            n->kind = NodeKind::match;
            n->type = ValueType::boolean;
            n->negate_match = o == "!~";
            n->poisoned = !expect_type(*l, ValueType::string, fmt::format("left of '{}'", o));
            if (r->kind != NodeKind::string) {
                error(r->offset, fmt::format("right of '{}' must be a quoted regular expression", o));
            } else {
                try {
                    n->regex = std::make_shared<std::regex>(r->text, std::regex::ECMAScript | std::regex::optimize);
                } catch (const std::regex_error& e) {
                    error(r->offset, fmt::format("invalid regular expression \"{}\": {}", r->text, e.what()));
                }
            }
            n->args = {std::move(l)};
            return n;
        }
        n->kind = NodeKind::binary;
        n->op = binary_op(o);
        auto both = [&](ValueType want) {
            const bool left_ok = expect_type(*l, want, fmt::format("left of '{}'", o));
            const bool right_ok = expect_type(*r, want, fmt::format("right of '{}'", o));
            n->poisoned = !left_ok || !right_ok;
        };
        if (o == "and" || o == "or") {
            both(ValueType::boolean);
            n->type = ValueType::boolean;
        } else if (o == "==" || o == "!=") {
            if (l->poisoned || r->poisoned) {
                n->poisoned = true;
            } else if (l->type != r->type) {
                error(op.offset, fmt::format("cannot compare {} with {}", to_string(l->type), to_string(r->type)));
                n->poisoned = true;
            }
            n->type = ValueType::boolean;
        } else if (o == "<" || o == "<=" || o == ">" || o == ">=") {
            both(ValueType::number);
            n->type = ValueType::boolean;
        } else {
            both(ValueType::number);
            n->type = ValueType::number;
        }
        n->args = {std::move(l), std::move(r)};
        return n;
    }

    // Reports a type mismatch unless an error inside `n` was already reported; returns false
    // when the operand is unusable so the caller can poison its own node.
    bool expect_type(const Node& n, ValueType want, const std::string& where) {
        if (n.poisoned) return false;
        if (n.type == want) return true;
        error(n.offset, fmt::format("{} needs a {}, found a {}", where, to_string(want), to_string(n.type)));
        return false;
    }

    std::vector<Token> m_toks;
    std::size_t m_i = 0;
    std::vector<ExprError>& m_errors;
    std::set<std::string>* m_metrics;
    const Definitions* m_defs;
};

}  // namespace

}  // namespace expr

using expr::Node;
using expr::NodeKind;

std::string_view to_string(ValueType type) {
    switch (type) {
        case ValueType::number: return "number";
        case ValueType::boolean: return "boolean";
        case ValueType::string: return "string";
    }
    return "value";
}

std::optional<Expression> Expression::compile(std::string_view source, std::vector<ExprError>& errors,
                                              const Definitions* definitions) {
    const std::size_t before = errors.size();
    std::vector<expr::Token> tokens = expr::lex(source, errors);
    Expression e;
    e.m_source = std::string(source);
    expr::Parser parser(std::move(tokens), errors, e.m_metrics, definitions);
    e.m_root = parser.parse();
    if (errors.size() != before) return std::nullopt;
    return e;
}

namespace {


void visit(const Node& n, const std::function<void(const Node&)>& fn) {
    fn(n);
    for (const auto& a : n.args) visit(*a, fn);
}

}  // namespace

bool Expression::uses_history() const {
    bool found = false;
    if (m_root) visit(*m_root, [&](const Node& n) { found = found || n.kind == NodeKind::history; });
    return found;
}

std::vector<RegressionCheck> Expression::regression_checks() const {
    std::vector<RegressionCheck> out;
    if (m_root)
        visit(*m_root, [&](const Node& n) {
            if (n.kind == NodeKind::history && n.function->follows_regression) out.push_back(n.check);
        });
    return out;
}

Expression Expression::all_of(const std::vector<Expression>& parts) {
    Expression out = parts.at(0);
    for (std::size_t i = 1; i < parts.size(); ++i) {
        auto n = std::make_shared<Node>();
        n->kind = NodeKind::binary;
        n->type = ValueType::boolean;
        n->text = "and";
        n->args = {std::const_pointer_cast<Node>(out.m_root), std::const_pointer_cast<Node>(parts[i].m_root)};
        out.m_root = n;
        out.m_source = fmt::format("({}) and ({})", out.m_source, parts[i].m_source);
        out.m_metrics.insert(parts[i].m_metrics.begin(), parts[i].m_metrics.end());
    }
    return out;
}

bool Definitions::define(const std::string& name, std::string_view source, std::vector<ExprError>& errors) {
    auto e = Expression::compile(source, errors, this);
    if (!e) return false;
    m_exprs[name] = Named{std::const_pointer_cast<Node>(e->m_root), e->m_metrics};
    m_lists.erase(name);
    return true;
}

void Definitions::define_broken(const std::string& name) {
    auto n = std::make_shared<Node>();
    n->poisoned = true;
    m_exprs[name] = Named{std::move(n), {}};
    m_lists.erase(name);
}

void Definitions::define_list(const std::string& name, std::vector<std::string> items) {
    m_lists[name] = std::make_shared<const std::vector<std::string>>(std::move(items));
    m_exprs.erase(name);
}

const Definitions::Named* Definitions::expression(const std::string& name) const {
    auto it = m_exprs.find(name);
    if (it == m_exprs.end()) return nullptr;
    m_used.insert(name);
    return &it->second;
}

std::shared_ptr<const std::vector<std::string>> Definitions::list(const std::string& name) const {
    auto it = m_lists.find(name);
    if (it == m_lists.end()) return nullptr;
    m_used.insert(name);
    return it->second;
}

void Definitions::merge_used(const Definitions& other) const {
    for (const std::string& name : other.m_used)
        if (has(name)) m_used.insert(name);
}

std::vector<std::string> Definitions::unused() const {
    std::vector<std::string> out;
    for (const auto& [name, e] : m_exprs)
        if (!m_used.contains(name)) out.push_back(name);
    for (const auto& [name, l] : m_lists)
        if (!m_used.contains(name)) out.push_back(name);
    return out;
}

bool is_attribute_name(std::string_view name) {
    return std::find(expr::k_attributes.begin(), expr::k_attributes.end(), name) != expr::k_attributes.end();
}

}  // namespace perfwatch
