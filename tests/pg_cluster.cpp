#include "tests/pg_cluster.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

// The newest installed server's bin directory (/usr/lib/postgresql/N/bin), or empty.
std::string server_bin_dir() {
    std::string best;
    int best_version = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
        const int version = std::atoi(entry.path().filename().c_str());
        if (version > best_version && std::filesystem::exists(entry.path() / "bin" / "initdb")) {
            best_version = version;
            best = (entry.path() / "bin").string();
        }
    }
    return best;
}

int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

}  // namespace

std::unique_ptr<PgCluster> PgCluster::start(std::string& why) {
    const std::string bin = server_bin_dir();
    if (bin.empty()) {
        why = "PostgreSQL server not installed (Debian package postgresql; scripts/test installs it)";
        return nullptr;
    }
    std::unique_ptr<PgCluster> c(new PgCluster());
    c->m_bin = bin;
    c->m_as_postgres = ::geteuid() == 0;
    char name[] = "/tmp/perfwatch-pg-XXXXXX";
    if (::mkdtemp(name) == nullptr) {
        why = "cannot make a temporary directory";
        return nullptr;
    }
    c->m_dir = name;
    c->m_port = free_port();
    std::mt19937_64 rng(std::random_device{}());
    c->m_password = "pw" + std::to_string(rng());
    write_file(c->m_dir + "/pwfile", c->m_password + "\n");
    // libpq takes the password from here for psql and for perfwatch alike.
    write_file(c->m_dir + "/pgpass", "127.0.0.1:" + std::to_string(c->m_port) + ":*:perfwatch:" + c->m_password + "\n");
    std::filesystem::permissions(c->m_dir + "/pgpass", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    ::setenv("PGPASSFILE", (c->m_dir + "/pgpass").c_str(), 1);
    std::vector<std::string> as;
    if (c->m_as_postgres) {
        const std::string cmd = "chown -R postgres " + c->m_dir + "/pwfile && chown postgres " + c->m_dir;
        if (run_program({"sh", "-c", cmd}).exit_code != 0) {
            why = "cannot hand the cluster directory to the postgres user";
            return nullptr;
        }
        as = {"runuser", "-u", "postgres", "--"};
    }
    auto with = [&](std::vector<std::string> argv) {
        argv.insert(argv.begin(), as.begin(), as.end());
        return run_program(argv);
    };
    const ProcessResult init = with({bin + "/initdb", "-D", c->m_dir + "/data", "-U", "perfwatch", "-A", "scram-sha-256",
                                     "--pwfile=" + c->m_dir + "/pwfile", "-E", "UTF8", "--locale=C", "--no-sync"});
    if (init.exit_code != 0) {
        why = "initdb failed: " + init.err;
        return nullptr;
    }
    const std::string options = "-p " + std::to_string(c->m_port) + " -k " + c->m_dir +
                                " -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
                                "-c full_page_writes=off -c max_connections=60";
    const ProcessResult started =
        with({bin + "/pg_ctl", "-D", c->m_dir + "/data", "-o", options, "-l", c->m_dir + "/server.log", "-w", "start"});
    if (started.exit_code != 0) {
        why = "pg_ctl start failed: " + started.out + started.err + read_file(c->m_dir + "/server.log");
        return nullptr;
    }
    return c;
}

PgCluster::~PgCluster() {
    std::vector<std::string> argv{m_bin + "/pg_ctl", "-D", m_dir + "/data", "-m", "immediate", "-w", "stop"};
    if (m_as_postgres) argv.insert(argv.begin(), {"runuser", "-u", "postgres", "--"});
    run_program(argv);
    std::error_code ec;
    std::filesystem::remove_all(m_dir, ec);
}

std::string PgCluster::uri(const std::string& database) const {
    return "postgresql://perfwatch@127.0.0.1:" + std::to_string(m_port) + "/" + database;
}

std::string PgCluster::query(const std::string& database, const std::string& sql) const {
    const ProcessResult r = run_program({m_bin + "/psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", uri(database),
                                         "-c", sql});
    if (r.exit_code != 0) std::cerr << "psql: " << r.err;
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

bool PgCluster::create_database(const std::string& name) const {
    const ProcessResult r =
        run_program({m_bin + "/psql", "-X", "-v", "ON_ERROR_STOP=1", "-d", uri("postgres"), "-c", "CREATE DATABASE " + name});
    if (r.exit_code != 0) std::cerr << "psql: " << r.err;
    return r.exit_code == 0;
}

}  // namespace perfwatch::test
