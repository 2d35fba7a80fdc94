#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/model.hpp"

namespace perfwatch {

namespace sql {
class Connection;
}

// Alerts whose labels (the run's, plus rule and severity) match every matcher (a value or a glob)
// are not sent while it lasts.
struct Silence {
    std::int64_t id = 0;
    std::map<std::string, std::string> matchers;
    std::int64_t until_ms = 0;  // Unix time in ms
    std::string comment;
    std::int64_t created_ms = 0;
};

// Alert silences: a part of the database (Db::silences()).
class Silences {
public:
    Silences(sql::Connection& db, std::string name) : m_db(&db), m_name(std::move(name)) {}
    Result<std::int64_t> add(const Silence& silence);
    // Every silence, or those still active at `active_at` (Unix ms).
    Result<std::vector<Silence>> list(std::optional<std::int64_t> active_at) const;
    // Ends a silence now; false when there is no such silence.
    Result<bool> expire(std::int64_t id, std::int64_t now_ms);

private:
    sql::Connection* m_db;
    std::string m_name;
};

}  // namespace perfwatch
