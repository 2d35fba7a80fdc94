#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <string>

#include "core/error.hpp"

namespace perfwatch {

// A constraint, type or size violation comes from what a report holds (values the collectors
// should have refused): that report fails, the database stays healthy. Anything else (locked,
// full, read-only, I/O) is the database's.
Error database_error(const std::string& file, const SQLite::Exception& e);

// Runs `f`, turning an SQLite exception into the Error database_error names.
template <typename F>
auto guarded(const std::string& file, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const SQLite::Exception& e) {
        return std::unexpected(database_error(file, e));
    }
}

}  // namespace perfwatch
