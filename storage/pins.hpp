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

// A run pinned as the baseline of the runs comparable with it.
struct BaselinePin {
    std::int64_t run_id = 0;
    std::string pinned_at;
    std::string comment;
};

// Pinned baselines: a part of the database (Db::pins()).
class Pins {
public:
    Pins(sql::Connection& db, std::string name) : m_db(&db), m_name(std::move(name)) {}
    // Pins a run (replacing an earlier pin of it); false when the run does not exist.
    Result<bool> pin(std::int64_t run_id, const std::string& comment);
    // False when the run was not pinned.
    Result<bool> unpin(std::int64_t run_id);
    // Newest first.
    Result<std::vector<BaselinePin>> list() const;

private:
    sql::Connection* m_db;
    std::string m_name;
};

}  // namespace perfwatch
