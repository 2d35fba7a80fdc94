// The daemon against a hostile environment: its database on a filesystem that fills up or turns
// read-only, and report files it may not read. Each fault is logged clearly, nothing committed is
// lost, and the daemon keeps going (and catches up once the fault is gone).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/support.hpp"

namespace perfwatch {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

unsigned short port_in(const std::string& log) {
    const auto at = log.find("http://127.0.0.1:");
    if (at == std::string::npos) return 0;
    return static_cast<unsigned short>(std::stoi(log.substr(at + 17)));
}

// A report of our own (a small Kineto trace), written elsewhere and moved in whole.
void drop_report(const test::TempDir& dir, const fs::path& reports, const std::string& name, double dur_us) {
    const std::string staged = test::write_kineto_trace(dir, name, dur_us, 30);
    fs::create_directories(reports);
    fs::rename(staged, reports / name);
}

// The daemon's configuration: `db`, one watched directory, one worker, a short quiet period.
void write_config(const test::TempDir& dir, const fs::path& db, const fs::path& reports, const std::string& listen) {
    test::write_file(dir.path() / "perfwatch.yaml",
                     fmt::format("database: {}\nwatch:\n  - path: {}\nlisten: {}\nworkers: 1\nquiet_period: 300ms\n"
                                 "shutdown_timeout: 4s\n",
                                 db.string(), reports.string(), listen));
}

bool wait_until(const std::function<bool()>& done, double timeout_s) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
        if (done()) return true;
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

std::int64_t runs_in(const fs::path& db) {
    try {
        return test::query_int(db, "SELECT count(*) FROM runs WHERE processed_at IS NOT NULL");
    } catch (const std::exception&) {
        return -1;
    }
}

// A query on a database in another process's mount namespace (SQLite resolves /proc/PID/root
// back to our own root, so the sqlite3 shell runs in there).
std::int64_t query_in(int pid, const fs::path& db, const std::string& sql) {
    const auto r = test::run_program(
        {"nsenter", "--target", std::to_string(pid), "--mount", "sqlite3", "-readonly", db.string(), sql});
    if (r.exit_code != 0 || r.out.empty()) return -1;
    return std::stoll(r.out);
}

// Whether this machine lets the test make a private mount namespace with a tmpfs in it.
std::optional<std::string> mount_namespaces_unavailable() {
    const auto r = test::run_program({"unshare", "--mount", "--propagation", "private", "sh", "-c",
                                      "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs \"$d\" && umount \"$d\" && rmdir \"$d\""});
    if (r.exit_code != 0) return "cannot create a mount namespace with a tmpfs here (needs root or user namespaces): " + r.err;
    if (test::run_program({"nsenter", "--version"}).exit_code != 0) return "nsenter (util-linux) is missing";
    if (test::run_program({"sqlite3", "--version"}).exit_code != 0) return "the sqlite3 shell is missing";
    return std::nullopt;
}

}  // namespace

// The database lives on a 1 MiB tmpfs in the daemon's own mount namespace (the test reaches it
// through /proc/PID/root and nsenter). Filling the filesystem makes every store fail with
// "database or disk is full": reports wait and are retried, /healthz says so, the runs already
// committed stay intact. Freeing space lets the waiting reports in.
TEST(Faults, DatabaseOnAFullFilesystemLosesNothingAndTheDaemonCatchesUp) {
    if (auto why = mount_namespaces_unavailable()) GTEST_SKIP() << *why;
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports", mnt = dir.path() / "dbfs";
    fs::create_directories(reports);
    fs::create_directories(mnt);
    write_config(dir, mnt / "perfwatch.db", reports, "127.0.0.1:0");
    test::BackgroundProcess daemon(
        {"--mount", "--propagation", "private", "sh", "-c",
         "mount -t tmpfs -o size=1m tmpfs \"$1\" && exec \"$2\" daemon --config \"$3\"", "sh", mnt.string(),
         PERFWATCH_BINARY, dir.file("perfwatch.yaml")},
        dir.file("daemon.log"), {}, "/usr/bin/unshare");
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    const unsigned short port = port_in(daemon.log());
    // The daemon's view of its tmpfs, from outside its mount namespace.
    const fs::path inside = fs::path(fmt::format("/proc/{}/root", daemon.pid())) / mnt.relative_path();
    const fs::path db = mnt / "perfwatch.db";
    ASSERT_TRUE(fs::exists(inside / "perfwatch.db")) << "the database is not on the daemon's tmpfs";
    const int pid = daemon.pid();
    auto stored = [&] { return query_in(pid, db, "SELECT count(*) FROM runs WHERE processed_at IS NOT NULL"); };
    auto intact = [&] { return query_in(pid, db, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"); };
    EXPECT_FALSE(fs::exists(mnt / "perfwatch.db")) << "the tmpfs leaked out of the daemon's namespace";

    drop_report(dir, reports, "first.json", 100);
    ASSERT_TRUE(wait_until([&] { return stored() == 1; }, 30)) << daemon.log();

    // Fill the filesystem: a filler file takes every free block.
    {
        std::ofstream filler(inside / "filler", std::ios::binary);
        const std::string block(4096, 'x');
        for (int i = 0; i < 1024 && filler.write(block.data(), static_cast<std::streamsize>(block.size())); ++i) {
        }
    }
    for (int i = 0; i < 3; ++i) drop_report(dir, reports, fmt::format("full-{}.json", i), 200 + i);
    ASSERT_TRUE(daemon.wait_for_log("database or disk is full", 30)) << daemon.log();
    ASSERT_TRUE(daemon.wait_for_log("retried in", 10)) << daemon.log();
    const auto health = test::http_get(port, "/healthz");
    EXPECT_EQ(health.status, 503) << health.body;
    EXPECT_EQ(stored(), 1);
    EXPECT_EQ(intact(), 1);

    fs::remove(inside / "filler");
    ASSERT_TRUE(wait_until([&] { return stored() == 4; }, 90)) << daemon.log();
    EXPECT_TRUE(wait_until([&] { return test::http_get(port, "/healthz").status == 200; }, 10));

    EXPECT_EQ(query_in(pid, db, "SELECT count(DISTINCT sha256) FROM runs"), 4);
    EXPECT_EQ(intact(), 1);

    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(10), 0) << daemon.log();
}

// A database on a read-only filesystem (a read-only bind mount in the daemon's namespace): the
// daemon refuses to start, saying why, and the database keeps what it held.
TEST(Faults, DatabaseOnAReadOnlyFilesystemIsAClearStartUpError) {
    if (auto why = mount_namespaces_unavailable()) GTEST_SKIP() << *why;
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports", dbdir = dir.path() / "db";
    fs::create_directories(reports);
    fs::create_directories(dbdir);
    const fs::path db = dbdir / "perfwatch.db";
    write_config(dir, db, reports, "off");
    {
        test::BackgroundProcess first({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("first.log"));
        ASSERT_TRUE(first.wait_for_log("ready:", 30)) << first.log();
        drop_report(dir, reports, "kept.json", 100);
        ASSERT_TRUE(wait_until([&] { return runs_in(db) == 1; }, 30)) << first.log();
        first.signal(SIGTERM);
        ASSERT_EQ(first.wait_exit(10), 0) << first.log();
    }
    drop_report(dir, reports, "later.json", 200);
    test::BackgroundProcess daemon(
        {"--mount", "--propagation", "private", "sh", "-c",
         "mount --bind \"$1\" \"$1\" && mount -o remount,bind,ro \"$1\" && exec \"$2\" daemon --config \"$3\"", "sh",
         dbdir.string(), PERFWATCH_BINARY, dir.file("perfwatch.yaml")},
        dir.file("daemon.log"), {}, "/usr/bin/unshare");
    const auto code = daemon.wait_exit(30);
    ASSERT_TRUE(code.has_value()) << daemon.log();
    EXPECT_EQ(*code, 2) << daemon.log();
    EXPECT_NE(daemon.log().find(db.string() + ": cannot open database"), std::string::npos) << daemon.log();
    EXPECT_NE(daemon.log().find("mounted read-only"), std::string::npos) << daemon.log();
    EXPECT_EQ(runs_in(db), 1);
    EXPECT_EQ(test::query_int(db, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"), 1);
}

// Files and directories the daemon may not read: each is named in the log with the reason,
// the rest of the directory is ingested, and the daemon stays healthy. Root reads everything,
// so as root the daemon runs as nobody (setpriv).
TEST(Faults, UnreadableReportsAndDirectoriesAreLoggedAndSkipped) {
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports";
    fs::create_directories(reports / "locked");
    std::vector<std::string> args = {"daemon", "--config", dir.file("perfwatch.yaml")};
    std::string program = PERFWATCH_BINARY;
    if (::geteuid() == 0) {
        if (test::run_program({"setpriv", "--version"}).exit_code != 0) GTEST_SKIP() << "running as root without setpriv";
        args.insert(args.begin(), {"--reuid=65534", "--regid=65534", "--clear-groups", PERFWATCH_BINARY});
        program = "/usr/bin/setpriv";
        fs::permissions(dir.path(), fs::perms::all);
        fs::permissions(reports, fs::perms::all);
    }
    write_config(dir, dir.path() / "perfwatch.db", reports, "127.0.0.1:0");
    fs::permissions(dir.path() / "perfwatch.yaml", fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    // One unreadable report and one unreadable directory (with a report inside) before start.
    drop_report(dir, reports, "secret.json", 50);
    fs::permissions(reports / "secret.json", fs::perms::none);
    drop_report(dir, reports / "locked", "inside.json", 60);
    fs::permissions(reports / "locked", fs::perms::none);
    test::BackgroundProcess daemon(args, dir.file("daemon.log"), {}, program);
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    const unsigned short port = port_in(daemon.log());
    drop_report(dir, reports, "open.json", 70);
    fs::permissions(reports / "open.json", fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    const fs::path db = dir.path() / "perfwatch.db";
    ASSERT_TRUE(wait_until([&] { return runs_in(db) == 1; }, 30)) << daemon.log();
    EXPECT_TRUE(daemon.wait_for_log("secret.json", 10)) << daemon.log();
    EXPECT_TRUE(daemon.wait_for_log("Permission denied", 10)) << daemon.log();
    EXPECT_TRUE(daemon.wait_for_log("locked", 10)) << daemon.log();
    EXPECT_EQ(test::http_get(port, "/healthz").status, 200);
    EXPECT_EQ(test::query_int(db, "SELECT count(*) FROM runs WHERE source LIKE '%open.json'"), 1);
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(10), 0) << daemon.log();
    fs::permissions(reports / "locked", fs::perms::all);
}

}  // namespace perfwatch
