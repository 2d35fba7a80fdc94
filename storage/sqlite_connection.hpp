#pragma once

#include <memory>
#include <string>

#include "storage/sql.hpp"

namespace perfwatch::sql {

// Opens (creating it) the SQLite file at `path` in WAL mode with foreign keys on. Throws SqlError.
std::unique_ptr<Connection> open_sqlite(const std::string& path);

}  // namespace perfwatch::sql
