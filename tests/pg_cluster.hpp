#pragma once

#include <memory>
#include <string>

namespace perfwatch::test {

// A private PostgreSQL server for one test: Debian's initdb and pg_ctl in a temporary directory
// (as the unprivileged `postgres` user when the tests run as root), password authentication,
// listening on a free port of 127.0.0.1 only. Stopped and removed at destruction. Its password is
// found through $PGPASSFILE, which start() sets for this process and the programs it runs.
class PgCluster {
public:
    // nullptr, with the reason in `why`, when the server binaries are absent or it does not start.
    static std::unique_ptr<PgCluster> start(std::string& why);
    ~PgCluster();
    PgCluster(const PgCluster&) = delete;
    PgCluster& operator=(const PgCluster&) = delete;

    // postgresql://perfwatch@127.0.0.1:PORT/NAME (no password in it).
    std::string uri(const std::string& database) const;
    // Creates an empty database `name`; false (and why on stderr) when psql fails.
    bool create_database(const std::string& name) const;
    // The value of one query, run with psql on `database`.
    std::string query(const std::string& database, const std::string& sql) const;
    const std::string& password() const { return m_password; }

private:
    PgCluster() = default;
    std::string m_dir;
    std::string m_bin;
    int m_port = 0;
    std::string m_password;
    bool m_as_postgres = false;
};

}  // namespace perfwatch::test

// Starts a private PostgreSQL server as `var`; skips the test with the reason when none can start,
// unless $PERFWATCH_REQUIRE_POSTGRESQL is set (scripts/test sets it: CI must run these).
#define PERFWATCH_PG_CLUSTER(var)                                                                  \
    std::string var##_why;                                                                         \
    const auto var = ::perfwatch::test::PgCluster::start(var##_why);                               \
    if (!var) {                                                                                    \
        if (std::getenv("PERFWATCH_REQUIRE_POSTGRESQL") != nullptr) FAIL() << var##_why;          \
        GTEST_SKIP() << var##_why;                                                                 \
    }
