#include "storage/sqlite_connection.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>

namespace perfwatch::sql {

namespace {

// A constraint, type or size violation comes from what a report holds; anything else (locked,
// full, read-only, I/O) is the database's.
[[noreturn]] void rethrow(const SQLite::Exception& e) {
    switch (e.getErrorCode() & 0xff) {
        case SQLITE_CONSTRAINT:
        case SQLITE_MISMATCH:
        case SQLITE_TOOBIG:
        case SQLITE_RANGE: throw SqlError(e.what(), true);
        default: throw SqlError(e.what(), false);
    }
}

template <typename F>
auto translated(F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const SQLite::Exception& e) {
        rethrow(e);
    }
}

class SqliteStatement final : public StatementImpl {
public:
    SqliteStatement(SQLite::Database& db, std::string_view sql)
        : m_st(translated([&] { return SQLite::Statement(db, std::string(sql)); })) {}

    void bind_null(int index) override { translated([&] { m_st.bind(index); }); }
    void bind_int(int index, std::int64_t value) override { translated([&] { m_st.bind(index, value); }); }
    void bind_double(int index, double value) override { translated([&] { m_st.bind(index, value); }); }
    void bind_text(int index, std::string_view value) override {
        translated([&] { m_st.bind(index, std::string(value)); });
    }
    void bind_blob(int index, const void* data, std::size_t size) override {
        translated([&] { m_st.bind(index, data, static_cast<int>(size)); });
    }
    bool step() override { return translated([&] { return m_st.executeStep(); }); }
    std::int64_t exec() override { return translated([&] { return static_cast<std::int64_t>(m_st.exec()); }); }
    void reset() override { translated([&] { m_st.reset(); }); }
    bool is_null(int column) const override { return m_st.getColumn(column).isNull(); }
    std::int64_t get_int(int column) const override { return m_st.getColumn(column).getInt64(); }
    double get_double(int column) const override { return m_st.getColumn(column).getDouble(); }
    std::string get_text(int column) const override { return m_st.getColumn(column).getString(); }
    std::string get_blob(int column) const override {
        const SQLite::Column c = m_st.getColumn(column);
        return std::string(static_cast<const char*>(c.getBlob()), static_cast<std::size_t>(c.getBytes()));
    }

    ValueKind kind(int column) const override {
        switch (m_st.getColumn(column).getType()) {
            case SQLITE_INTEGER: return ValueKind::integer;
            case SQLITE_FLOAT: return ValueKind::real;
            case SQLITE_BLOB: return ValueKind::blob;
            case SQLITE_NULL: return ValueKind::null;
            default: return ValueKind::text;
        }
    }
    int column_count() const override { return m_st.getColumnCount(); }
    std::string column_name(int column) const override { return m_st.getColumnName(column); }

private:
    mutable SQLite::Statement m_st;
};

class SqliteConnection final : public Connection {
public:
    explicit SqliteConnection(const std::string& path) : m_db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE) {
        m_db.setBusyTimeout(5000);
        m_db.exec("PRAGMA journal_mode=WAL");
        m_db.exec("PRAGMA foreign_keys=ON");
        m_db.exec("PRAGMA synchronous=NORMAL");
    }

    Dialect dialect() const override { return Dialect::sqlite; }
    std::unique_ptr<StatementImpl> prepare(std::string_view sql) override {
        return std::make_unique<SqliteStatement>(m_db, sql);
    }
    void exec(std::string_view sql) override { translated([&] { m_db.exec(std::string(sql)); }); }
    // IMMEDIATE takes the write lock at once: two writers wait (busy timeout) instead of one
    // failing when it upgrades a read lock.
    void begin(bool write) override { exec(write ? "BEGIN IMMEDIATE" : "BEGIN"); }
    void commit() override { exec("COMMIT"); }
    void rollback() noexcept override {
        try {
            m_db.exec("ROLLBACK");
        } catch (const SQLite::Exception&) {
            // No transaction left to roll back (SQLite ended it on the error).
        }
    }

private:
    SQLite::Database m_db;
};

}  // namespace

std::unique_ptr<Connection> open_sqlite(const std::string& path) {
    return translated([&]() -> std::unique_ptr<Connection> { return std::make_unique<SqliteConnection>(path); });
}

}  // namespace perfwatch::sql
