#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/error.hpp"
#include "storage/model.hpp"

namespace SQLite {
class Database;
}

namespace perfwatch {

// The schema version this build migrates databases to (PRAGMA user_version).
int current_schema_version();

struct StoreOutcome {
    std::int64_t run_id = 0;
    bool inserted = false;  // false: the same content was already stored as run_id
};

struct RunSummary {
    std::int64_t id = 0;
    std::string source;
    std::string format;
    std::string ingested_at;
    std::int64_t kernels = 0;
};

// The embedded SQLite store. All SQL of the project lives behind this class.
class Db {
public:
    // Opens or creates the database at `path`, enables WAL and applies pending migrations.
    static Result<Db> open(const std::string& path);

    Db(Db&&) noexcept;
    Db& operator=(Db&&) noexcept;
    ~Db();

    int schema_version() const;

    // Stores one report in one transaction: either all of it or nothing. Content already
    // stored (same sha256) is not stored twice; its run id is returned with inserted=false.
    Result<StoreOutcome> store(const RunBatch& batch);

    // Reads a run back with its labels, entities, metrics and tool findings.
    Result<std::optional<StoredRun>> load(std::int64_t run_id) const;

    std::optional<std::int64_t> find_by_sha256(const std::string& sha256) const;
    Result<std::vector<RunSummary>> list_runs() const;
    std::int64_t count_runs() const;

    // Replaces the stored findings of a run with `findings` (one transaction).
    Result<void> store_findings(std::int64_t run_id, const std::vector<Finding>& findings);
    Result<std::vector<Finding>> load_findings(std::int64_t run_id) const;

private:
    explicit Db(std::unique_ptr<SQLite::Database> db, std::string path);
    Result<void> migrate();

    std::unique_ptr<SQLite::Database> m_db;
    std::string m_path;
};

}  // namespace perfwatch
