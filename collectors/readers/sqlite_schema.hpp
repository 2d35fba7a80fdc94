#pragma once

#include <initializer_list>
#include <set>
#include <string>
#include <string_view>

#include <SQLiteCpp/Database.h>

#include "core/error.hpp"

namespace perfwatch {

// The tables and views of an SQLite report, asked of the database itself.
std::set<std::string> sqlite_tables(SQLite::Database& db);

// The columns of `table`, asked of the database (PRAGMA table_info).
std::set<std::string> sqlite_columns(SQLite::Database& db, const std::string& table);

// The columns of `table` for a SELECT, each quoted: every one of `required` (an Error naming
// `path`, the table, the column and the columns there are when one is missing; `what` names the
// kind of database, "the nsys export"), then every one of `optional`, NULL in place of one the
// table lacks. Readers of tools whose schema changes between versions ask, never assume.
Result<std::string> sqlite_select_list(SQLite::Database& db, const std::string& path, std::string_view what,
                                       const std::string& table, std::initializer_list<std::string_view> required,
                                       std::initializer_list<std::string_view> optional = {});

}  // namespace perfwatch
