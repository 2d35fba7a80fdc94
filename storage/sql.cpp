#include "storage/sql.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <cstring>

namespace perfwatch::sql {

std::vector<double> Column::as_doubles() const {
    const std::string data = as_blob();
    std::vector<double> values(data.size() / sizeof(double));
    if (!values.empty()) std::memcpy(values.data(), data.data(), values.size() * sizeof(double));
    return values;
}

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

BatchInsert::BatchInsert(Connection& db, std::string table, std::vector<std::string> columns,
                         std::size_t rows_per_statement)
    : m_db(db),
      m_table(std::move(table)),
      m_width(columns.size()),
      // SQLite has no round trips to save: one single-row statement, prepared once, is fastest
      // there (a statement of hundreds of parameters costs more to prepare than it saves).
      m_rows_per_statement(db.dialect() == Dialect::sqlite ? 1 : rows_per_statement) {
    for (std::size_t i = 0; i < columns.size(); ++i) m_columns += (i > 0 ? ", " : "") + columns[i];
    m_values.reserve(m_width * m_rows_per_statement);
}

std::string BatchInsert::sql(std::size_t rows) const {
    std::string row = "(";
    for (std::size_t i = 0; i < m_width; ++i) row += i > 0 ? ",?" : "?";
    row += ")";
    std::string out = fmt::format("INSERT INTO {}({}) VALUES", m_table, m_columns);
    for (std::size_t r = 0; r < rows; ++r) out += (r > 0 ? "," : "") + row;
    return out;
}

void BatchInsert::flush() {
    if (m_values.empty()) return;
    const std::size_t rows = m_values.size() / m_width;
    std::optional<Statement> partial;
    Statement* st = nullptr;
    if (rows == m_rows_per_statement) {
        if (!m_full) m_full.emplace(m_db, sql(rows));
        st = &*m_full;
    } else {
        partial.emplace(m_db, sql(rows));
        st = &*partial;
    }
    for (std::size_t i = 0; i < m_values.size(); ++i) {
        const int index = static_cast<int>(i + 1);
        std::visit(
            [&](const auto& v) {
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<T, std::monostate>) st->bind(index);
                else if constexpr (std::is_same_v<T, Blob>) st->bind_blob(index, v.bytes.data(), v.bytes.size());
                else st->bind(index, v);
            },
            m_values[i]);
    }
    st->exec();
    m_values.clear();
}

std::string in_list(std::size_t n) {
    std::string out = "(";
    for (std::size_t i = 0; i < n; ++i) out += i > 0 ? ",?" : "?";
    return out + ")";
}

std::string now_utc() {
    return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                       std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
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
