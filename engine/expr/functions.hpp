#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "engine/expr/node.hpp"

namespace perfwatch::expr {

// How a call is parsed, type-checked and evaluated.
enum class CallForm {
    numeric,      // numbers in, a number out; missing when any argument is
    aggregate,    // count/sum/top over the run's entities of a kind
    history,      // reads the run's baseline
    metric_ref,   // metric("name"): any metric the report carries
    attr_ref,     // attr("name")
    rank,         // rank(VALUE) among the entities of the current kind
    conditional,  // if(condition, a, b)
    presence,     // present(x)
};

// What a history function takes after its name.
enum class HistoryArgs { none, entity_kind, metric, metric_and_parameters };

// One function of the rule language: a row of the registry (functions.cpp). Adding a numeric or
// history function is one row here and its test.
struct FunctionDef {
    std::string_view name;
    int min_args = 0;
    int max_args = 0;  // -1: any
    CallForm form = CallForm::numeric;
    ValueType result = ValueType::number;
    // numeric: the value of the arguments; nullopt where it has none (sqrt of a negative number).
    std::optional<double> (*numeric)(std::span<const double> args) = nullptr;
    HistoryArgs history_args = HistoryArgs::metric;
    // history: the value in the scope of the current entity, or missing.
    Value (*history)(const Node& call, const EvalScope& scope) = nullptr;
    // history: true for regressed(), whose calls the run pipeline follows as regressions.
    bool follows_regression = false;
};

// The row of `name`; nullptr for an unknown function.
const FunctionDef* find_function(std::string_view name);

}  // namespace perfwatch::expr
