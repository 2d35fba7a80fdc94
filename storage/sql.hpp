#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/error.hpp"
#include "core/symbol.hpp"

namespace perfwatch::sql {

// Which server speaks: the few statements that differ (schema, locks, sizes) ask.
enum class Dialect { sqlite, postgresql };

// The type of a value in a result row.
enum class ValueKind { null, integer, real, text, blob };

// What a driver throws inside storage/; `guarded` turns it into an Error at the boundary.
// `refused`: the values were refused (constraint, type, size): the report's fault, not the
// database's.
class SqlError : public std::runtime_error {
public:
    SqlError(const std::string& what, bool refused) : std::runtime_error(what), m_refused(refused) {}
    bool refused() const { return m_refused; }

private:
    bool m_refused;
};

// One prepared statement of a driver. Parameters are 1-based, columns 0-based.
class StatementImpl {
public:
    virtual ~StatementImpl() = default;
    virtual void bind_null(int index) = 0;
    virtual void bind_int(int index, std::int64_t value) = 0;
    virtual void bind_double(int index, double value) = 0;
    virtual void bind_text(int index, std::string_view value) = 0;
    virtual void bind_blob(int index, const void* data, std::size_t size) = 0;
    // Runs the statement on the first call, then moves to the next row; false past the last.
    virtual bool step() = 0;
    // Runs a statement that returns no rows; the rows it changed.
    virtual std::int64_t exec() = 0;
    // Ready to run again, parameters kept.
    virtual void reset() = 0;
    virtual bool is_null(int column) const = 0;
    virtual std::int64_t get_int(int column) const = 0;
    virtual double get_double(int column) const = 0;
    virtual std::string get_text(int column) const = 0;
    virtual std::string get_blob(int column) const = 0;
    virtual ValueKind kind(int column) const = 0;
    virtual int column_count() const = 0;
    virtual std::string column_name(int column) const = 0;
};

// A connection of one driver.
class Connection {
public:
    virtual ~Connection() = default;
    virtual Dialect dialect() const = 0;
    // `sql` uses ? for parameters whatever the driver.
    virtual std::unique_ptr<StatementImpl> prepare(std::string_view sql) = 0;
    // Runs one or more statements without parameters or results.
    virtual void exec(std::string_view sql) = 0;
    // Starts a transaction; `write` takes the write lock at once where the driver has one.
    virtual void begin(bool write) = 0;
    virtual void commit() = 0;
    virtual void rollback() noexcept = 0;

    // Statements run on this connection through Statement (each execution once, however many
    // rows it gives; transaction control not counted): how many round trips a command made.
    std::uint64_t statements_run() const { return m_statements_run; }
    void count_statement() { ++m_statements_run; }

private:
    std::uint64_t m_statements_run = 0;
};

// A column of the current row.
class Column {
public:
    Column(const StatementImpl& st, int index) : m_st(st), m_index(index) {}
    bool is_null() const { return m_st.is_null(m_index); }
    std::int64_t as_int64() const { return m_st.get_int(m_index); }
    int as_int() const { return static_cast<int>(m_st.get_int(m_index)); }
    double as_double() const { return m_st.get_double(m_index); }
    std::string as_string() const { return m_st.get_text(m_index); }
    // The bytes of a BLOB (SQLite) or bytea (PostgreSQL) column.
    std::string as_blob() const { return m_st.get_blob(m_index); }
    // A BLOB of native doubles (entity_samples.data, as Db::store writes it); a trailing partial
    // value is left out.
    std::vector<double> as_doubles() const;
    std::optional<double> as_optional_double() const;
    std::optional<std::int64_t> as_optional_int64() const;
    ValueKind kind() const { return m_st.kind(m_index); }

private:
    const StatementImpl& m_st;
    int m_index;
};

// A statement on a connection: bind, then step through rows or exec. Binding after a run resets
// it first, so one statement serves a loop.
class Statement {
public:
    Statement(Connection& db, std::string_view sql) : m_db(db), m_impl(db.prepare(sql)) {}

    void bind(int index, std::int64_t value) { ready(); m_impl->bind_int(index, value); }
    void bind(int index, int value) { bind(index, static_cast<std::int64_t>(value)); }
    void bind(int index, double value) { ready(); m_impl->bind_double(index, value); }
    void bind(int index, std::string_view value) { ready(); m_impl->bind_text(index, value); }
    void bind(int index, const std::string& value) { bind(index, std::string_view(value)); }
    void bind(int index, const char* value) { bind(index, std::string_view(value)); }
    void bind(int index) { ready(); m_impl->bind_null(index); }
    void bind(int index, const std::optional<double>& value);
    void bind(int index, const std::optional<std::int64_t>& value);
    void bind_blob(int index, const void* data, std::size_t size) { ready(); m_impl->bind_blob(index, data, size); }

    bool step() {
        if (!m_ran) m_db.count_statement();
        m_ran = true;
        return m_impl->step();
    }
    std::int64_t exec() {
        ready();
        m_db.count_statement();
        m_ran = true;
        return m_impl->exec();
    }
    void reset() {
        m_impl->reset();
        m_ran = false;
    }
    Column column(int index) const { return Column(*m_impl, index); }
    int column_count() const { return m_impl->column_count(); }
    std::string column_name(int index) const { return m_impl->column_name(index); }
    // Binds the value of `value`'s column as it is (a copy from one database to another).
    void bind_value(int index, const Column& value);
    // Runs an INSERT ... RETURNING id and gives the id; the statement is finished (SQLite does
    // not commit while a RETURNING statement is unfinished).
    std::int64_t insert_returning_id();

private:
    void ready() {
        if (m_ran) reset();
    }

    Connection& m_db;
    std::unique_ptr<StatementImpl> m_impl;
    bool m_ran = false;
};

// A transaction rolled back unless committed.
class Transaction {
public:
    explicit Transaction(Connection& db, bool write = true) : m_db(db) { m_db.begin(write); }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    ~Transaction() {
        if (!m_done) m_db.rollback();
    }
    void commit() {
        m_db.commit();
        m_done = true;
    }

private:
    Connection& m_db;
    bool m_done = false;
};

// Bytes bound as a BLOB (SQLite) or bytea (PostgreSQL).
struct Blob {
    std::string bytes;
};
using Value = std::variant<std::monostate, std::int64_t, double, std::string, Blob>;

// Rows of one table inserted many per statement on PostgreSQL: one round trip per
// `rows_per_statement` rows instead of one per row (SQLite: a row per statement, prepared once).
// Holds at most that many rows; flush() sends the rest.
class BatchInsert {
public:
    BatchInsert(Connection& db, std::string table, std::vector<std::string> columns,
                std::size_t rows_per_statement = 128);
    // One row, a value per column (std::nullopt or std::monostate for NULL).
    template <typename... V>
    void add(V&&... values) {
        static_assert(sizeof...(V) > 0);
        (push(std::forward<V>(values)), ...);
        if (m_values.size() == m_width * m_rows_per_statement) flush();
    }
    void flush();

private:
    void push(std::int64_t v) { m_values.emplace_back(v); }
    void push(double v) { m_values.emplace_back(v); }
    void push(std::string v) { m_values.emplace_back(std::move(v)); }
    void push(std::string_view v) { m_values.emplace_back(std::string(v)); }
    void push(const char* v) { m_values.emplace_back(std::string(v)); }
    void push(const Symbol& v) { m_values.emplace_back(v.str()); }
    void push(Blob v) { m_values.emplace_back(std::move(v)); }
    void push(std::nullopt_t) { m_values.emplace_back(std::monostate{}); }
    void push(const std::optional<double>& v) {
        if (v) m_values.emplace_back(*v);
        else m_values.emplace_back(std::monostate{});
    }
    void push(const std::optional<std::int64_t>& v) {
        if (v) m_values.emplace_back(*v);
        else m_values.emplace_back(std::monostate{});
    }
    std::string sql(std::size_t rows) const;

    Connection& m_db;
    std::string m_table;
    std::string m_columns;
    std::size_t m_width;
    std::size_t m_rows_per_statement;
    std::vector<Value> m_values;
    std::optional<Statement> m_full;  // the statement of a full batch, prepared once
};

// The clock as the database stores times: "2026-11-25T21:26:49Z" (UTC, seconds).
std::string now_utc();

// "(?,?,?)" for `n` values: an IN list of bound values.
std::string in_list(std::size_t n);

// The first column of the first row of `sql` as an integer (0 when NULL or no row).
std::int64_t query_int(Connection& db, std::string_view sql);

// `file` names the database in errors (a PostgreSQL address without its password).
Error database_error(const std::string& file, const SqlError& e);

// Runs `f`, turning a driver's SqlError into the Error database_error names.
template <typename F>
auto guarded(const std::string& file, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const SqlError& e) {
        return std::unexpected(database_error(file, e));
    }
}

}  // namespace perfwatch::sql
