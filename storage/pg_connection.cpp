#include "storage/pg_connection.hpp"

#include <libpq-fe.h>
#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <vector>

namespace perfwatch::sql {

namespace {

// PostgreSQL's built-in type oids (pg_type.dat).
constexpr Oid k_int8 = 20;
constexpr Oid k_text = 25;
constexpr Oid k_float8 = 701;
constexpr Oid k_bytea = 17;

// The server's message for a failed command, one line.
std::string message_of(PGconn* conn, const PGresult* result) {
    std::string text = result != nullptr ? PQresultErrorMessage(result) : PQerrorMessage(conn);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    for (char& c : text)
        if (c == '\n') c = ' ';
    return text;
}

// Data exceptions (22), integrity constraint violations (23) and program limits (54: a value too
// large to index) come from the values sent: the report's fault.
bool refused(const PGresult* result) {
    const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
    if (state == nullptr) return false;
    const std::string_view s(state);
    return s.starts_with("22") || s.starts_with("23") || s.starts_with("54");
}

// `sql` with each ? outside quotes replaced by $1, $2, ...; `count` set to the number of them.
std::string numbered_parameters(std::string_view sql, int& count) {
    std::string out;
    out.reserve(sql.size() + 16);
    char quote = 0;
    count = 0;
    for (char c : sql) {
        if (quote != 0) {
            if (c == quote) quote = 0;
            out += c;
        } else if (c == '\'' || c == '"') {
            quote = c;
            out += c;
        } else if (c == '?') {
            out += fmt::format("${}", ++count);
        } else {
            out += c;
        }
    }
    return out;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 0;
}

class PgConnection;

class PgStatement final : public StatementImpl {
public:
    PgStatement(PgConnection& db, std::string_view sql);
    ~PgStatement() override { clear(); }

    void bind_null(int index) override { slot(index, std::nullopt, 0, 0); }
    void bind_int(int index, std::int64_t value) override { slot(index, std::to_string(value), k_int8, 0); }
    void bind_double(int index, double value) override { slot(index, fmt::format("{}", value), k_float8, 0); }
    void bind_text(int index, std::string_view value) override { slot(index, std::string(value), k_text, 0); }
    void bind_blob(int index, const void* data, std::size_t size) override {
        slot(index, std::string(static_cast<const char*>(data), size), k_bytea, 1);
    }
    bool step() override {
        if (m_result == nullptr) run();
        ++m_row;
        return m_row < PQntuples(m_result);
    }
    std::int64_t exec() override {
        run();
        const char* tuples = PQcmdTuples(m_result);
        return tuples[0] == '\0' ? 0 : std::strtoll(tuples, nullptr, 10);
    }
    void reset() override { clear(); }
    bool is_null(int column) const override { return PQgetisnull(m_result, m_row, column) != 0; }
    std::int64_t get_int(int column) const override {
        return std::strtoll(PQgetvalue(m_result, m_row, column), nullptr, 10);
    }
    double get_double(int column) const override { return std::strtod(PQgetvalue(m_result, m_row, column), nullptr); }
    std::string get_text(int column) const override {
        return std::string(PQgetvalue(m_result, m_row, column),
                           static_cast<std::size_t>(PQgetlength(m_result, m_row, column)));
    }
    // bytea in text form: \x then two hex digits a byte.
    std::string get_blob(int column) const override {
        const std::string text = get_text(column);
        std::string out;
        if (!text.starts_with("\\x")) return text;
        out.reserve((text.size() - 2) / 2);
        for (std::size_t i = 2; i + 1 < text.size(); i += 2)
            out += static_cast<char>(hex_value(text[i]) * 16 + hex_value(text[i + 1]));
        return out;
    }

    ValueKind kind(int column) const override {
        if (is_null(column)) return ValueKind::null;
        switch (PQftype(m_result, column)) {
            case k_int8:
            case 21:  // int2
            case 23:  // int4
                return ValueKind::integer;
            case 700:  // float4
            case k_float8: return ValueKind::real;
            case k_bytea: return ValueKind::blob;
            default: return ValueKind::text;
        }
    }
    int column_count() const override { return m_result == nullptr ? 0 : PQnfields(m_result); }
    std::string column_name(int column) const override { return PQfname(m_result, column); }

private:
    void slot(int index, std::optional<std::string> value, Oid type, int format) {
        const auto i = static_cast<std::size_t>(index - 1);
        if (index < 1 || i >= m_values.size())
            throw SqlError(fmt::format("parameter {} out of range (the statement has {})", index, m_values.size()), true);
        m_values[i] = std::move(value);
        m_types[i] = type;
        m_formats[i] = format;
    }
    void run();
    void clear() {
        if (m_result != nullptr) PQclear(m_result);
        m_result = nullptr;
        m_row = -1;
    }

    PgConnection& m_db;
    std::string m_sql;
    std::vector<std::optional<std::string>> m_values;
    std::vector<Oid> m_types;
    std::vector<int> m_formats;
    PGresult* m_result = nullptr;
    int m_row = -1;
};

class PgConnection final : public Connection {
public:
    PgConnection(const std::string& uri, const std::string& password) {
        const char* keys[] = {"dbname", password.empty() ? nullptr : "password", nullptr};
        const char* values[] = {uri.c_str(), password.empty() ? nullptr : password.c_str(), nullptr};
        m_conn = PQconnectdbParams(keys, values, 1);
        if (m_conn == nullptr) throw SqlError("cannot allocate a PostgreSQL connection", false);
        if (PQstatus(m_conn) != CONNECTION_OK) {
            const std::string why = message_of(m_conn, nullptr);
            PQfinish(m_conn);
            m_conn = nullptr;
            throw SqlError(why, false);
        }
        // Notices (an IF NOT EXISTS that found the table) are not errors; perfwatch does not print them.
        PQsetNoticeProcessor(m_conn, [](void*, const char*) {}, nullptr);
        exec("SET client_min_messages = warning");
    }
    ~PgConnection() override {
        if (m_conn != nullptr) PQfinish(m_conn);
    }

    Dialect dialect() const override { return Dialect::postgresql; }
    std::unique_ptr<StatementImpl> prepare(std::string_view sql) override {
        return std::make_unique<PgStatement>(*this, sql);
    }
    void exec(std::string_view sql) override {
        ensure_connected();
        PGresult* r = PQexec(m_conn, std::string(sql).c_str());
        check(r);
        PQclear(r);
    }
    void begin(bool) override {
        exec("BEGIN");
        m_in_transaction = true;
    }
    void commit() override {
        m_in_transaction = false;
        exec("COMMIT");
    }
    void rollback() noexcept override {
        m_in_transaction = false;
        if (m_conn != nullptr && PQstatus(m_conn) == CONNECTION_OK) PQclear(PQexec(m_conn, "ROLLBACK"));
    }

    // A connection lost between transactions is made again (the server restarted, a network
    // blip); one lost inside a transaction fails that transaction, which the caller retries.
    void ensure_connected() {
        if (PQstatus(m_conn) == CONNECTION_OK) return;
        if (m_in_transaction) throw SqlError("the connection to the PostgreSQL server was lost", false);
        PQreset(m_conn);
        if (PQstatus(m_conn) != CONNECTION_OK) throw SqlError(message_of(m_conn, nullptr), false);
        PQclear(PQexec(m_conn, "SET client_min_messages = warning"));
    }

    // Throws (and frees `r`) unless `r` is a success.
    void check(PGresult* r) {
        const ExecStatusType status = r == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(r);
        if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return;
        SqlError error(message_of(m_conn, r), refused(r));
        if (r != nullptr) PQclear(r);
        throw error;
    }

    PGconn* handle() { return m_conn; }

private:
    PGconn* m_conn = nullptr;
    bool m_in_transaction = false;
};

PgStatement::PgStatement(PgConnection& db, std::string_view sql) : m_db(db) {
    int count = 0;
    m_sql = numbered_parameters(sql, count);
    m_values.resize(static_cast<std::size_t>(count));
    m_types.assign(static_cast<std::size_t>(count), 0);
    m_formats.assign(static_cast<std::size_t>(count), 0);
}

void PgStatement::run() {
    clear();
    m_db.ensure_connected();
    std::vector<const char*> values(m_values.size());
    std::vector<int> lengths(m_values.size());
    for (std::size_t i = 0; i < m_values.size(); ++i) {
        values[i] = m_values[i] ? m_values[i]->data() : nullptr;
        lengths[i] = m_values[i] ? static_cast<int>(m_values[i]->size()) : 0;
    }
    PGresult* r = PQexecParams(m_db.handle(), m_sql.c_str(), static_cast<int>(m_values.size()), m_types.data(),
                               values.data(), lengths.data(), m_formats.data(), 0);
    m_db.check(r);
    m_result = r;
}

std::string read_password(const std::string& file) {
    std::ifstream in(file);
    if (!in) throw SqlError(fmt::format("cannot read the password file {}", file), false);
    std::string line;
    std::getline(in, line);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    return line;
}

}  // namespace

bool is_postgresql_uri(std::string_view location) {
    return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

std::string redact_uri(std::string_view uri) {
    std::string out(uri);
    const std::size_t scheme = out.find("://");
    if (scheme != std::string::npos) {
        const std::size_t host_end = out.find_first_of("/?", scheme + 3);
        const std::size_t at = out.rfind('@', host_end == std::string::npos ? out.size() : host_end);
        if (at != std::string::npos && at > scheme) {
            const std::size_t colon = out.find(':', scheme + 3);
            if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "<redacted>");
        }
    }
    for (std::size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p + 1)) {
        const std::size_t end = out.find('&', p);
        out.replace(p + 9, (end == std::string::npos ? out.size() : end) - p - 9, "<redacted>");
    }
    return out;
}

std::unique_ptr<Connection> open_postgresql(const std::string& uri, const std::string& password_file) {
    const std::string password = password_file.empty() ? std::string() : read_password(password_file);
    return std::make_unique<PgConnection>(uri, password);
}

}  // namespace perfwatch::sql
