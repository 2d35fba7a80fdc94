#pragma once

#include <string>

namespace perfwatch {

// `perfwatch db migrate --from A --to B`: copies the whole history of A (runs, findings,
// regressions, pins, silences, the outbox) into the empty database B, typically a SQLite file
// into PostgreSQL; prints each table's rows, counted on both sides. Exit 0, or 2.
int run_db_migrate(const std::string& from, const std::string& to);

}  // namespace perfwatch
