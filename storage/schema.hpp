#pragma once

#include <string>
#include <vector>

#include "core/error.hpp"
#include "storage/sql.hpp"

namespace perfwatch {

// A table of the schema, in the order their references need; `has_id`: an identity column `id`.
struct SchemaTable {
    std::string name;
    bool has_id = false;
};
// Every table of the schema (storage/schema.cpp's one description), in creation order.
std::vector<SchemaTable> schema_tables();

// The schema version of the database on `db` (0: empty).
int schema_version(sql::Connection& db);

// Brings the database to current_schema_version(): a new database is created from the schema,
// an older one migrated in order. On PostgreSQL an advisory lock makes a fleet of daemons starting together
// migrate once. `name` names the database in errors. A database newer than this build is refused.
Result<void> migrate(sql::Connection& db, const std::string& name);

}  // namespace perfwatch
