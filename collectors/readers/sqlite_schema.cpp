#include "collectors/readers/sqlite_schema.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <SQLiteCpp/Statement.h>

namespace perfwatch {

std::set<std::string> sqlite_tables(SQLite::Database& db) {
    std::set<std::string> out;
    SQLite::Statement st(db, "SELECT name FROM sqlite_master WHERE type IN ('table','view')");
    while (st.executeStep()) out.insert(st.getColumn(0).getString());
    return out;
}

std::set<std::string> sqlite_columns(SQLite::Database& db, const std::string& table) {
    std::set<std::string> out;
    SQLite::Statement st(db, "SELECT name FROM pragma_table_info(?)");
    st.bind(1, table);
    while (st.executeStep()) out.insert(st.getColumn(0).getString());
    return out;
}

Result<std::string> sqlite_select_list(SQLite::Database& db, const std::string& path, std::string_view what,
                                       const std::string& table, std::initializer_list<std::string_view> required,
                                       std::initializer_list<std::string_view> optional) {
    const auto cols = sqlite_columns(db, table);
    std::string out;
    const auto add = [&](std::string_view text) { out += fmt::format("{}{}", out.empty() ? "" : ", ", text); };
    for (std::string_view c : required) {
        if (!cols.contains(std::string(c)))
            return fail(path, 0, fmt::format("{}'s {} table has no {} column (a schema perfwatch does not know; "
                                             "its columns: {})",
                                             what, table, c, fmt::join(cols, ", ")));
        add(fmt::format("\"{}\"", c));
    }
    for (std::string_view c : optional) add(cols.contains(std::string(c)) ? fmt::format("\"{}\"", c) : std::string("NULL"));
    return out;
}

}  // namespace perfwatch
