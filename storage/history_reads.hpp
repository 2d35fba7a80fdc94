#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/model.hpp"

namespace perfwatch {

namespace sql {
class Connection;
}

// A run's id with its labels, for choosing comparable runs.
struct RunLabels {
    std::int64_t id = 0;
    std::map<std::string, std::string> labels;
};

// The reads history is judged on: a part of the database (Db::history()). Each reads a whole
// window in a fixed number of statements, however many runs it holds.
class HistoryReads {
public:
    HistoryReads(sql::Connection& db, std::string name) : m_db(&db), m_name(std::move(name)) {}

    // Runs stored before `before_id` (all runs when 0) whose labels include every pair of
    // `must_match`, newest first; at most `limit` (0: no limit).
    Result<std::vector<RunLabels>> find_runs(const std::map<std::string, std::string>& must_match,
                                             std::int64_t before_id = 0, std::size_t limit = 0) const;
    // Reads runs back as Db::load() does, in the order of `run_ids` (ids without a run skipped),
    // in eight statements for up to 500 runs whatever their number: a history window in one go.
    Result<std::vector<StoredRun>> load_runs(const std::vector<std::int64_t>& run_ids) const;

private:
    sql::Connection* m_db;
    std::string m_name;
};

}  // namespace perfwatch
