#pragma once

#include <string>

#include "core/error.hpp"
#include "storage/sql.hpp"

namespace perfwatch {

// The schema version of the database on `db` (0: empty).
int schema_version(sql::Connection& db);

// Brings the database to current_schema_version(): SQLite by its migrations in order, PostgreSQL
// from its schema. On PostgreSQL an advisory lock makes a fleet of daemons starting together
// migrate once. `name` names the database in errors. A database newer than this build is refused.
Result<void> migrate(sql::Connection& db, const std::string& name);

}  // namespace perfwatch
