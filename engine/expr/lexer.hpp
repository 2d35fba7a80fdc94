#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/expr.hpp"

namespace perfwatch::expr {

enum class Tok { number, ident, string, op, lparen, rparen, comma, colon, end };

struct Token {
    Tok kind = Tok::end;
    std::string text;
    double number = 0;  // in the base unit of its literal suffix (5ms: 5e6)
    std::size_t offset = 0;
};

// The tokens of `source`, ending with one Tok::end; problems go to `errors` and lexing goes on.
std::vector<Token> lex(std::string_view source, std::vector<ExprError>& errors);

}  // namespace perfwatch::expr
