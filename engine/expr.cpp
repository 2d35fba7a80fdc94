#include "engine/expr.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <span>

#include "core/vocabulary.hpp"

namespace perfwatch {

namespace {

constexpr auto k_attributes = std::to_array<std::string_view>({
    "name", "kind", "occupancy_limiter", "grid", "block", "cc", "device", "stream", "context", "process", "time",
    "gpu", "direction", "host_memory", "synchronizing", "domain", "style", "kernel_type", "short_name",
});

struct LiteralUnit {
    std::string_view suffix;
    double factor;
};

// Units a number literal may carry; the value becomes the metric's base unit.
constexpr std::array k_literal_units = std::to_array<LiteralUnit>({
    {"ns", 1},     {"us", 1e3},  {"ms", 1e6},   {"s", 1e9},          {"B", 1},
    {"KB", 1e3},   {"MB", 1e6},  {"GB", 1e9},   {"TB", 1e12},        {"KiB", 1024.0},
    {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"%", 1}, {"Hz", 1}, {"kHz", 1e3},
    {"MHz", 1e6},  {"GHz", 1e9},
});

enum class Tok { number, ident, string, op, lparen, rparen, comma, colon, end };

struct Token {
    Tok kind = Tok::end;
    std::string text;
    double number = 0;
    std::size_t offset = 0;
};

}  // namespace

enum class NodeKind {
    number, string, boolean, metric, run_metric, attribute, neg, not_, binary, match, call, present, in_list,
    aggregate, rank, history
};

struct Node {
    NodeKind kind = NodeKind::number;
    ValueType type = ValueType::number;
    double number = 0;
    bool boolean = false;
    std::string text;  // identifier, string literal, operator or function name
    std::vector<std::shared_ptr<Node>> args;
    std::shared_ptr<std::regex> regex;
    std::shared_ptr<const std::vector<std::string>> list;  // in_list
    std::string entity_kind;                               // aggregate: the entities it runs over
    bool negate_match = false;
    RegressionCheck check;  // history: the metric read and regressed()/improved() parameters
    bool poisoned = false;  // an error was reported inside: no further type errors about it
    std::size_t offset = 0;
};

namespace {

class Lexer {
public:
    Lexer(std::string_view src, std::vector<ExprError>& errors) : m_src(src), m_errors(errors) {}

    std::vector<Token> run() {
        std::vector<Token> out;
        while (true) {
            skip_space();
            Token t;
            t.offset = m_pos;
            if (m_pos >= m_src.size()) {
                out.push_back(t);
                return out;
            }
            const char c = m_src[m_pos];
            if (std::isdigit(static_cast<unsigned char>(c)) ||
                (c == '.' && m_pos + 1 < m_src.size() && std::isdigit(static_cast<unsigned char>(m_src[m_pos + 1])))) {
                number(t);
            } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
                const std::size_t b = m_pos;
                while (m_pos < m_src.size() && (std::isalnum(static_cast<unsigned char>(m_src[m_pos])) ||
                                                m_src[m_pos] == '_' || m_src[m_pos] == '.'))
                    ++m_pos;
                t.kind = Tok::ident;
                t.text = std::string(m_src.substr(b, m_pos - b));
            } else if (c == '"' || c == '\'') {
                string(t, c);
            } else if (c == '(') {
                t.kind = Tok::lparen, ++m_pos;
            } else if (c == ')') {
                t.kind = Tok::rparen, ++m_pos;
            } else if (c == ',') {
                t.kind = Tok::comma, ++m_pos;
            } else if (c == ':') {
                t.kind = Tok::colon, ++m_pos;
            } else {
                static constexpr std::array<std::string_view, 13> k_ops{"<=", ">=", "==", "!=", "!~", "<", ">",
                                                                        "+",  "-",  "*",  "/",  "~",  "!"};
                bool matched = false;
                for (std::string_view op : k_ops) {
                    if (m_src.substr(m_pos).starts_with(op)) {
                        t.kind = Tok::op;
                        t.text = std::string(op == "!" ? "not" : op);
                        m_pos += op.size();
                        matched = true;
                        break;
                    }
                }
                if (!matched) {
                    m_errors.push_back({m_pos, fmt::format("unexpected character '{}'", c)});
                    ++m_pos;
                    continue;
                }
            }
            if (t.kind == Tok::ident && (t.text == "and" || t.text == "or" || t.text == "not" || t.text == "in"))
                t.kind = Tok::op;
            out.push_back(std::move(t));
        }
    }

private:
    void skip_space() {
        while (m_pos < m_src.size() && std::isspace(static_cast<unsigned char>(m_src[m_pos]))) ++m_pos;
    }

    void number(Token& t) {
        const std::size_t b = m_pos;
        while (m_pos < m_src.size() && (std::isdigit(static_cast<unsigned char>(m_src[m_pos])) || m_src[m_pos] == '.'))
            ++m_pos;
        if (m_pos < m_src.size() && (m_src[m_pos] == 'e' || m_src[m_pos] == 'E') && m_pos + 1 < m_src.size() &&
            (std::isdigit(static_cast<unsigned char>(m_src[m_pos + 1])) ||
             ((m_src[m_pos + 1] == '-' || m_src[m_pos + 1] == '+') && m_pos + 2 < m_src.size() &&
              std::isdigit(static_cast<unsigned char>(m_src[m_pos + 2]))))) {
            m_pos += 2;
            while (m_pos < m_src.size() && std::isdigit(static_cast<unsigned char>(m_src[m_pos]))) ++m_pos;
        }
        double v = 0;
        const auto [ptr, ec] = std::from_chars(m_src.data() + b, m_src.data() + m_pos, v);
        if (ec != std::errc() || ptr != m_src.data() + m_pos)
            m_errors.push_back({b, fmt::format("malformed number '{}'", m_src.substr(b, m_pos - b))});
        const std::size_t ub = m_pos;
        if (m_pos < m_src.size() && m_src[m_pos] == '%') {
            ++m_pos;
        } else {
            while (m_pos < m_src.size() && std::isalpha(static_cast<unsigned char>(m_src[m_pos]))) ++m_pos;
        }
        const std::string_view unit = m_src.substr(ub, m_pos - ub);
        if (!unit.empty()) {
            bool known = false;
            for (const auto& u : k_literal_units)
                if (u.suffix == unit) {
                    v *= u.factor;
                    known = true;
                }
            if (!known)
                m_errors.push_back({ub, fmt::format("unknown unit '{}' (known: ns us ms s, B KB MB GB KiB MiB GiB, "
                                                    "%, Hz kHz MHz GHz)",
                                                    unit)});
        }
        t.kind = Tok::number;
        t.number = v;
    }

    void string(Token& t, char quote) {
        const std::size_t b = m_pos++;
        std::string out;
        while (m_pos < m_src.size() && m_src[m_pos] != quote) {
            if (m_src[m_pos] == '\\' && m_pos + 1 < m_src.size()) ++m_pos;
            out.push_back(m_src[m_pos++]);
        }
        if (m_pos >= m_src.size())
            m_errors.push_back({b, "unterminated string"});
        else
            ++m_pos;
        t.kind = Tok::string;
        t.text = std::move(out);
    }

    std::string_view m_src;
    std::size_t m_pos = 0;
    std::vector<ExprError>& m_errors;
};

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

struct FunctionDef {
    std::string_view name;
    int min_args;
    int max_args;  // -1: any
};

constexpr std::array k_functions = std::to_array<FunctionDef>({
    {"min", 1, -1},   {"max", 1, -1},   {"abs", 1, 1},  {"sqrt", 1, 1},   {"log", 1, 1},
    {"floor", 1, 1},  {"ceil", 1, 1},   {"round", 1, 1}, {"clamp", 3, 3}, {"metric", 1, 1},
    {"attr", 1, 1},   {"present", 1, 1}, {"count", 1, 2}, {"sum", 2, 3}, {"rank", 1, 1}, {"top", 3, 3},
    {"if", 3, 3},
});

// Functions over history. The metric ones take a metric (or run.METRIC) first; regressed() and
// improved() take named parameters min_change, confidence and worse.
constexpr auto k_history_functions = std::to_array<std::string_view>({
    "baseline", "change", "spread", "confidence", "regressed", "improved", "changed", "first_bad", "is_new",
    "vanished", "vanished_names", "current", "uniform_change", "uniform_kernels", "changed_labels",
});

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
        if (name.text == "top") {
            // top(KIND, VALUE, K): the sum of the K largest values; K a constant.
            if (n->args.size() != 2 || n->args[1]->kind != NodeKind::number || n->args[1]->number < 1) {
                error(name.offset, "top() takes a kind, a value and a constant count: top(kernel, duration_total, 3)");
                n->poisoned = true;
            } else if (!expect_type(*n->args[0], ValueType::number, "the value of top()")) {
                n->poisoned = true;
            }
            return n;
        }
        const std::size_t want_value = name.text == "sum" ? 1 : 0;
        if (n->args.size() < want_value || n->args.size() > want_value + 1) {
            error(name.offset, name.text == "sum" ? "sum() takes a kind, a value and an optional filter"
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
    std::shared_ptr<Node> history(const Token& name) {
        auto n = std::make_shared<Node>();
        n->kind = NodeKind::history;
        n->offset = name.offset;
        n->text = name.text;
        const std::string& f = name.text;
        n->type = f == "regressed" || f == "improved" || f == "changed" || f == "is_new" ? ValueType::boolean
                  : f == "first_bad" || f == "vanished_names" || f == "changed_labels"  ? ValueType::string
                                                                                         : ValueType::number;
        auto close = [&] {
            if (peek().kind != Tok::rparen) {
                error(peek().offset, fmt::format("expected ')' to close the call of {}()", f));
                while (peek().kind != Tok::rparen && peek().kind != Tok::end) take();
            }
            take();
        };
        if (f == "is_new" || f == "changed_labels") {
            if (peek().kind != Tok::rparen) error(peek().offset, fmt::format("{}() takes no arguments", f));
            close();
            return n;
        }
        if (f == "vanished" || f == "vanished_names") {
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
            const MetricDef* def = find_metric_def(m->text);
            const std::string_view unit = def != nullptr ? def->unit : "";
            n->check.higher_is_worse = !(unit == "percent" || unit == "byte/s" || unit == "hz");
        }
        while (peek().kind == Tok::comma) {
            take();
            const Token key = take();
            if (key.kind != Tok::ident || peek().kind != Tok::colon || (f != "regressed" && f != "improved")) {
                error(key.offset, f == "regressed" || f == "improved"
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
        if (name.text == "count" || name.text == "sum" || name.text == "top") {
            take();  // (
            return aggregate(name);
        }
        if (std::find(k_history_functions.begin(), k_history_functions.end(), name.text) != k_history_functions.end()) {
            take();  // (
            return history(name);
        }
        auto n = std::make_shared<Node>();
        n->kind = NodeKind::call;
        n->offset = name.offset;
        n->text = name.text;
        take();  // (
        // present(m) is never missing whatever the report holds: what it tests is not read.
        std::set<std::string> tested;
        std::set<std::string>* outer = m_metrics;
        if (name.text == "present") m_metrics = &tested;
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
        const FunctionDef* def = nullptr;
        for (const auto& f : k_functions)
            if (f.name == name.text) def = &f;
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
        if (name.text == "metric" || name.text == "attr") {
            if (n->args[0]->kind != NodeKind::string) {
                error(n->args[0]->offset, fmt::format("{}() takes a quoted name", name.text));
                return n;
            }
            n->kind = name.text == "metric" ? NodeKind::metric : NodeKind::attribute;
            n->type = name.text == "metric" ? ValueType::number : ValueType::string;
            n->text = n->args[0]->text;
            n->args.clear();
            if (n->kind == NodeKind::metric) m_metrics->insert(n->text);
            return n;
        }
        if (name.text == "rank") {
            n->kind = NodeKind::rank;
            n->type = ValueType::number;
            n->poisoned = !expect_type(*n->args[0], ValueType::number, "rank()");
            return n;
        }
        if (name.text == "if") {
            // if(condition, a, b): a where the condition holds, b where it does not, missing
            // where it is missing; a and b of one type (numbers or text).
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
        if (name.text == "present") {
            const NodeKind k = n->args[0]->kind;
            if (k != NodeKind::metric && k != NodeKind::run_metric && k != NodeKind::attribute)
                error(n->args[0]->offset, "present() takes a metric or attribute");
            n->kind = NodeKind::present;
            n->type = ValueType::boolean;
            return n;
        }
        for (const auto& a : n->args)
            if (!expect_type(*a, ValueType::number, fmt::format("{}()", name.text))) n->poisoned = true;
        n->type = ValueType::number;
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

Value eval(const Node& n, const EvalScope& s);
Value eval_history(const Node& n, const EvalScope& s);

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

Value eval_history(const Node& n, const EvalScope& s) {
    const std::string& f = n.text;
    if (f == "is_new") {
        if (auto v = s.is_new()) return *v;
        return std::monostate{};
    }
    if (f == "changed_labels") {
        if (auto v = s.changed_labels()) return *v;
        return std::monostate{};
    }
    if (f == "vanished" || f == "vanished_names") {
        const auto names = s.vanished(n.entity_kind);
        if (!names) return std::monostate{};
        if (f == "vanished") return static_cast<double>(names->size());
        std::string out;
        for (std::size_t i = 0; i < names->size() && i < 10; ++i) out += (i ? ", " : "") + (*names)[i];
        if (names->size() > 10) out += fmt::format(" and {} more", names->size() - 10);
        return out;
    }
    const RegressionCheck& c = n.check;
    if (f == "changed") {
        const auto before = s.latest_baseline(c.metric, c.run_level);
        const auto now = c.run_level ? s.run_metric(c.metric) : s.metric(c.metric);
        if (!before || !now) return std::monostate{};
        return std::fabs(*now - *before) > 1e-9 * std::max(std::fabs(*now), std::fabs(*before));
    }
    if (f == "first_bad") {
        if (auto v = s.first_bad(c.metric, c.run_level)) return *v;
        return std::monostate{};
    }
    if (f == "uniform_change" || f == "uniform_kernels") {
        const auto u = s.uniform_change(c.metric);
        if (!u) return std::monostate{};
        return f == "uniform_change" ? u->change_pct : static_cast<double>(u->kernels);
    }
    const auto cmp = s.compare(c.metric, c.run_level);
    if (!cmp) return std::monostate{};
    if (f == "baseline") return cmp->baseline;
    if (f == "current") return cmp->current;
    if (f == "change") return cmp->change_pct;
    if (f == "spread") {
        if (!cmp->window_test) return std::monostate{};
        return cmp->spread;
    }
    const bool tested = cmp->window_test || cmp->rank_test;
    if (f == "confidence") {
        if (!tested) return std::monostate{};
        return 100.0 * (cmp->change_pct >= 0 ? cmp->confidence_up : cmp->confidence_down);
    }
    // regressed / improved: the change in the worse (better) direction, large and confident enough.
    if (!tested) return std::monostate{};
    const bool up = (f == "regressed") == c.higher_is_worse;
    const double change = up ? cmp->change_pct : -cmp->change_pct;
    const double confidence = up ? cmp->confidence_up : cmp->confidence_down;
    return change >= c.min_change_pct && confidence >= c.confidence;
}

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
                if (n.text == "top") {
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
                const bool is_sum = n.text == "sum";
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
        case NodeKind::history: return eval_history(n, s);
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
            const std::string& o = n.text;
            if (o == "and" || o == "or") {
                // Three-valued: false and missing = false; true or missing = true.
                const Value l = eval(*n.args[0], s);
                const bool* lb = std::get_if<bool>(&l);
                if (lb && o == "and" && !*lb) return false;
                if (lb && o == "or" && *lb) return true;
                const Value r = eval(*n.args[1], s);
                const bool* rb = std::get_if<bool>(&r);
                if (rb && o == "and" && !*rb) return false;
                if (rb && o == "or" && *rb) return true;
                if (lb && rb) return o == "and";
                return std::monostate{};
            }
            const Value l = eval(*n.args[0], s);
            const Value r = eval(*n.args[1], s);
            if (std::holds_alternative<std::monostate>(l) || std::holds_alternative<std::monostate>(r))
                return std::monostate{};
            if (o == "==") return l == r;
            if (o == "!=") return l != r;
            const double a = std::get<double>(l), b = std::get<double>(r);
            if (o == "<") return a < b;
            if (o == "<=") return a <= b;
            if (o == ">") return a > b;
            if (o == ">=") return a >= b;
            if (o == "+") return a + b;
            if (o == "-") return a - b;
            if (o == "*") return a * b;
            if (o == "/") {
                if (b == 0) return std::monostate{};  // no meaningful ratio: treat as missing
                return a / b;
            }
            return std::monostate{};
        }
        case NodeKind::call: {
            if (n.text == "if") {
                const Value c = eval(*n.args[0], s);
                const bool* cb = std::get_if<bool>(&c);
                if (cb == nullptr) return std::monostate{};
                return eval(*n.args[*cb ? 1 : 2], s);
            }
            std::vector<double> a;
            a.reserve(n.args.size());
            for (const auto& arg : n.args) {
                const Value v = eval(*arg, s);
                const double* d = std::get_if<double>(&v);
                if (d == nullptr) return std::monostate{};
                a.push_back(*d);
            }
            const std::string& f = n.text;
            if (f == "min") return *std::min_element(a.begin(), a.end());
            if (f == "max") return *std::max_element(a.begin(), a.end());
            if (f == "abs") return std::fabs(a[0]);
            if (f == "floor") return std::floor(a[0]);
            if (f == "ceil") return std::ceil(a[0]);
            if (f == "round") return std::round(a[0]);
            if (f == "clamp") return std::clamp(a[0], a[1], std::max(a[1], a[2]));
            if (f == "sqrt") return a[0] < 0 ? Value{} : Value{std::sqrt(a[0])};
            if (f == "log") return a[0] <= 0 ? Value{} : Value{std::log(a[0])};
            return std::monostate{};
        }
    }
    return std::monostate{};
}

}  // namespace

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
    Lexer lexer(source, errors);
    std::vector<Token> tokens = lexer.run();
    Expression e;
    e.m_source = std::string(source);
    Parser parser(std::move(tokens), errors, e.m_metrics, definitions);
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
            if (n.kind == NodeKind::history && n.text == "regressed") out.push_back(n.check);
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

Value Expression::evaluate(const EvalScope& scope) const { return eval(*m_root, scope); }

ValueType Expression::type() const { return m_root->type; }

namespace {

// "{x:time}" prints nanoseconds in the largest fitting unit; "{x:bytes}" prints bytes in SI units.
std::optional<std::string> format_human(double d, const std::string& spec) {
    return spec == "time" || spec == "bytes" ? format_in_unit(d, spec) : std::nullopt;
}

}  // namespace

bool is_attribute_name(std::string_view name) {
    return std::find(k_attributes.begin(), k_attributes.end(), name) != k_attributes.end();
}

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
