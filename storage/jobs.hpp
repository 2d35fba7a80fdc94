#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace perfwatch {

namespace sql {
class Connection;
}

// A run that is a rank of a job (labels `rank` and `world_size`) and is in no job yet.
struct UnjoinedRank {
    std::int64_t run_id = 0;
    std::map<std::string, std::string> labels;
};

// One rank of a stored job.
struct JobRank {
    int rank = 0;
    std::int64_t run_id = 0;
};

// A stored job: its own run and the rank runs it was built from.
struct StoredJob {
    std::int64_t job_run = 0;
    std::string source;
    std::string ingested_at;
    std::map<std::string, std::string> labels;
    std::vector<JobRank> ranks;
};

// Distributed jobs: a part of the database (Db::jobs()). A job's own run is stored like any run
// (format "job"); this part keeps which rank runs it was built from.
class Jobs {
public:
    Jobs(sql::Connection& db, std::string name) : m_db(&db), m_name(std::move(name)) {}

    // Rank runs in no job, oldest first, at most `limit`, with their labels (two statements).
    Result<std::vector<UnjoinedRank>> unjoined(std::size_t limit = 10000) const;
    // Records that `job_run` was built from `ranks` (again: nothing changes).
    Result<void> add(std::int64_t job_run, const std::vector<JobRank>& ranks);
    // Stored jobs, newest first, at most `limit` (three statements).
    Result<std::vector<StoredJob>> list(std::size_t limit = 50) const;
    // The job whose own run is `job_run`; empty ranks when it is no job.
    Result<StoredJob> get(std::int64_t job_run) const;

private:
    Result<std::vector<StoredJob>> read(const std::string& where, std::int64_t value, std::size_t limit) const;

    sql::Connection* m_db;
    std::string m_name;
};

}  // namespace perfwatch
