#pragma once

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "engine/expr.hpp"

namespace perfwatch::expr {

struct FunctionDef;

enum class NodeKind {
    number, string, boolean, metric, run_metric, attribute, neg, not_, binary, match, call, present, in_list,
    aggregate, rank, history, conditional
};

// The binary operators, resolved once by the parser.
enum class BinaryOp { and_, or_, eq, ne, lt, le, gt, ge, add, sub, mul, div };

// count(KIND[, FILTER]), sum(KIND, VALUE[, FILTER]), top(KIND, VALUE, K).
enum class AggregateOp { count, sum, top };

// One node of a compiled expression. Immutable once parsed.
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
    BinaryOp op = BinaryOp::and_;           // binary
    AggregateOp aggregate = AggregateOp::count;  // aggregate
    const FunctionDef* function = nullptr;  // call and history: its row of the function registry
    RegressionCheck check;  // history: the metric read and regressed()/improved() parameters
    bool poisoned = false;  // an error was reported inside: no further type errors about it
    std::size_t offset = 0;
};

// The value of `n` in `scope` (engine/expr/eval.cpp).
Value eval(const Node& n, const EvalScope& scope);

}  // namespace perfwatch::expr
