#include "engine/expr/lexer.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>

namespace perfwatch::expr {

namespace {

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

}  // namespace

std::vector<Token> lex(std::string_view source, std::vector<ExprError>& errors) { return Lexer(source, errors).run(); }

}  // namespace perfwatch::expr
