#include "storage/sql.hpp"

#include <fmt/format.h>

namespace perfwatch::sql {

std::optional<double> Column::as_optional_double() const {
    if (is_null()) return std::nullopt;
    return as_double();
}

std::optional<std::int64_t> Column::as_optional_int64() const {
    if (is_null()) return std::nullopt;
    return as_int64();
}

void Statement::bind(int index, const std::optional<double>& value) {
    if (value)
        bind(index, *value);
    else
        bind(index);
}

void Statement::bind(int index, const std::optional<std::int64_t>& value) {
    if (value)
        bind(index, *value);
    else
        bind(index);
}

void Statement::bind_value(int index, const Column& value) {
    switch (value.kind()) {
        case ValueKind::null: return bind(index);
        case ValueKind::integer: return bind(index, value.as_int64());
        case ValueKind::real: return bind(index, value.as_double());
        case ValueKind::text: return bind(index, value.as_string());
        case ValueKind::blob: {
            const std::string bytes = value.as_blob();
            return bind_blob(index, bytes.data(), bytes.size());
        }
    }
}

std::int64_t Statement::insert_returning_id() {
    ready();
    if (!step()) throw SqlError("INSERT ... RETURNING gave no row", false);
    const std::int64_t id = column(0).as_int64();
    reset();
    return id;
}

std::int64_t query_int(Connection& db, std::string_view sql) {
    Statement st(db, sql);
    if (!st.step() || st.column(0).is_null()) return 0;
    return st.column(0).as_int64();
}

Error database_error(const std::string& file, const SqlError& e) {
    Error out{file, 0, 0, false, fmt::format("database error: {}", e.what())};
    out.kind = ErrorKind::database;
    if (e.refused()) {
        out.kind = ErrorKind::report;
        out.message = fmt::format("the report holds values the database refuses: {}", e.what());
    }
    return out;
}

}  // namespace perfwatch::sql
