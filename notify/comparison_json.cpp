#include "notify/comparison_json.hpp"

namespace perfwatch {

namespace {

template <typename T>
nlohmann::json optional_value(const std::optional<T>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

template <typename T>
std::optional<T> optional_of(const nlohmann::json& doc, const char* key) {
    if (!doc.contains(key) || doc.at(key).is_null()) return std::nullopt;
    return doc.at(key).get<T>();
}

}  // namespace

nlohmann::json comparison_json(const FindingComparison& c) {
    return {
        {"metric", c.metric},
        {"baseline", c.baseline},
        {"current", c.current},
        {"change_pct", c.change_pct},
        {"confidence_pct", optional_value(c.confidence_pct)},
        {"first_bad_run", optional_value(c.first_bad_run)},
        {"reference", c.reference},
        {"first_bad", {{"run", optional_value(c.first_bad_run)}, {"commit", c.first_bad_commit}, {"value", optional_value(c.first_bad_value)}}},
        {"last_good", {{"run", optional_value(c.last_good_run)}, {"commit", c.last_good_commit}, {"value", optional_value(c.last_good_value)}}},
    };
}

std::optional<FindingComparison> comparison_from_json(const nlohmann::json& doc) {
    if (!doc.is_object() || !doc.contains("metric")) return std::nullopt;
    FindingComparison c;
    c.metric = doc.at("metric").get<std::string>();
    c.baseline = doc.at("baseline").get<double>();
    c.current = doc.at("current").get<double>();
    c.change_pct = doc.at("change_pct").get<double>();
    c.confidence_pct = optional_of<double>(doc, "confidence_pct");
    c.first_bad_run = optional_of<std::int64_t>(doc, "first_bad_run");
    c.reference = doc.value("reference", std::string());
    if (doc.contains("first_bad")) {
        const auto& b = doc.at("first_bad");
        c.first_bad_commit = b.value("commit", std::string());
        c.first_bad_value = optional_of<double>(b, "value");
    }
    if (doc.contains("last_good")) {
        const auto& g = doc.at("last_good");
        c.last_good_run = optional_of<std::int64_t>(g, "run");
        c.last_good_commit = g.value("commit", std::string());
        c.last_good_value = optional_of<double>(g, "value");
    }
    return c;
}

}  // namespace perfwatch
