#pragma once

#include <nlohmann/json.hpp>

#include <optional>

#include "core/model.hpp"

namespace perfwatch {

// A regression finding's comparison as JSON (check --format json and the alert payload alike): the
// levels and change, and the bisection's ends ("last_good" and "first_bad": run, commit, value).
nlohmann::json comparison_json(const FindingComparison& c);
// Read back; nullopt when `doc` is not such an object.
std::optional<FindingComparison> comparison_from_json(const nlohmann::json& doc);

}  // namespace perfwatch
