#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "storage/sql.hpp"

namespace perfwatch::sql {

// True for a postgresql:// or postgres:// connection URI.
bool is_postgresql_uri(std::string_view location);

// The URI with the password of its user information (and any password= parameter) masked, for
// logs and errors.
std::string redact_uri(std::string_view uri);

// Connects to the PostgreSQL server of `uri` (libpq's URI: host, port, database, sslmode,
// sslrootcert...). The password comes from `password_file` (its first line) when given, else as
// libpq finds it (PGPASSWORD, ~/.pgpass). Throws SqlError, whose text never holds the password.
std::unique_ptr<Connection> open_postgresql(const std::string& uri, const std::string& password_file);

}  // namespace perfwatch::sql
