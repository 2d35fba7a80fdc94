#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "tests/support.hpp"
#include "tests/webhook_receiver.hpp"
#include "web/query.hpp"

namespace perfwatch {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

using test::eventually;
using test::query_int;
using test::write_file;

constexpr const char* k_token = "quarantine-token-0123456789";

// A daemon watching `reports` with one worker, its alerts going to a webhook at `hook_port`, its
// dashboard's actions open to k_token.
fs::path write_config(const test::TempDir& dir, const fs::path& reports, unsigned short hook_port,
                      const std::string& extra = "") {
    fs::create_directories(reports);
    write_file(dir.path() / "webhook-url", fmt::format("http://127.0.0.1:{}/hook\n", hook_port));
    write_file(dir.path() / "token", std::string(k_token) + "\n");
    fs::permissions(dir.path() / "token", fs::perms::owner_read | fs::perms::owner_write);
    const fs::path cfg = dir.path() / "perfwatch.yaml";
    write_file(cfg, fmt::format(R"(database: perfwatch.db
watch:
  - path: {}
listen: 127.0.0.1:0
workers: 1
quiet_period: 200ms
receivers:
  - name: oncall
    type: webhook
    url_file: {}
route:
  receiver: oncall
dashboard:
  token_file: {}
{})",
                                reports.string(), (dir.path() / "webhook-url").string(),
                                (dir.path() / "token").string(), extra));
    return cfg;
}

// The messages the receiver got that tell of a quarantined file (by their alert's rule).
std::vector<nlohmann::json> quarantine_alerts(const test::Receiver& receiver) {
    std::vector<nlohmann::json> out;
    for (const test::Received& r : receiver.received()) {
        const auto doc = nlohmann::json::parse(r.body, nullptr, false);
        if (doc.is_discarded() || !doc.contains("alerts")) continue;
        for (const auto& a : doc["alerts"])
            if (a.value("rule", "") == "file-quarantined") out.push_back(doc);
    }
    return out;
}

std::string mark_state(const fs::path& db, const std::string& path) {
    SQLite::Database d(db.string(), SQLite::OPEN_READONLY);
    d.setBusyTimeout(5000);
    SQLite::Statement st(d, "SELECT state FROM watched_files WHERE path = ?");
    st.bind(1, path);
    return st.executeStep() ? st.getColumn(0).getString() : "";
}

std::string mark_error(const fs::path& db, const std::string& path) {
    SQLite::Database d(db.string(), SQLite::OPEN_READONLY);
    d.setBusyTimeout(5000);
    SQLite::Statement st(d, "SELECT error FROM watched_files WHERE path = ?");
    st.bind(1, path);
    return st.executeStep() ? st.getColumn(0).getString() : "";
}

// The sum of the series of `name` in a Prometheus exposition; nullopt when it is absent.
std::optional<double> metric(const std::string& text, const std::string& name) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.starts_with(name + " ")) return std::stod(line.substr(name.size() + 1));
    return std::nullopt;
}

// Waits until the daemon has nothing waiting or in flight and the database holds `runs` runs.
bool idle_with(unsigned short port, const fs::path& db, std::int64_t runs, std::chrono::seconds timeout) {
    return eventually(
        [&] {
            const auto health = test::http_get(port, "/healthz");
            if (health.status != 200) return false;
            const auto doc = nlohmann::json::parse(health.body);
            return doc["waiting"] == 0 && doc["in_flight"] == 0 && query_int(db, "SELECT count(*) FROM runs") == runs;
        },
        timeout);
}

}  // namespace

// Issue 46: a report whose reading crashes the reader (here the test trigger: the worker aborts
// before reading a path holding "poison") kills the daemon. At the restart it is quarantined,
// never read again, listed by /healthz, /metrics, the dashboard and `perfwatch files`, and told
// once; the daemon goes on storing other reports. A retry (the dashboard's button, with the token
// and from the same origin; `perfwatch files retry`) reads it once more: it kills the reader again
// and is quarantined again (told again), until the reader no longer dies on it and it is stored.
TEST(Quarantine, AReportThatCrashesTheReaderIsQuarantinedToldOnceAndReadAgainOnlyWhenRetried) {
    test::Receiver receiver([](std::size_t) { return test::Receiver::Answer{}; });
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports", db = dir.path() / "perfwatch.db";
    const fs::path cfg = write_config(dir, reports, receiver.port());
    const std::vector<std::string> crash_on_poison = {"PERFWATCH_TEST_ABORT_ON=poison"};
    // A hostile name: a quote, markup and a space, for the JSON of /healthz and the page's HTML.
    const std::string poison = test::write_kineto_trace(dir, "reports/main/c1/poison \"<b>x</b>.pt.trace.json", 100);
    const std::string start_log = dir.file("daemon1.log");
    {
        test::BackgroundProcess daemon({"daemon", "--config", cfg.string()}, start_log, crash_on_poison);
        const auto code = daemon.wait_exit(60);
        ASSERT_EQ(code, 128 + SIGABRT) << daemon.log();
    }
    // The reading mark was committed before the worker read the file.
    EXPECT_EQ(mark_state(db, poison), "reading");
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs"), 0);

    std::optional<test::BackgroundProcess> daemon;
    daemon.emplace(std::vector<std::string>{"daemon", "--config", cfg.string()}, dir.file("daemon2.log"),
                   crash_on_poison);
    ASSERT_TRUE(daemon->wait_for_log("ready:", 30)) << daemon->log();
    ASSERT_TRUE(daemon->wait_for_log("quarantined: the daemon crashed (SIGABRT) while reading it", 30)) << daemon->log();
    unsigned short port = daemon->logged_port();
    EXPECT_EQ(mark_state(db, poison), "quarantined");
    EXPECT_EQ(mark_error(db, poison), "the daemon crashed (SIGABRT) while reading it");
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM watched_files WHERE state = 'quarantined' AND quarantined_at IS NOT NULL"), 1);
    // Another report is stored meanwhile (the crash trigger is still set: the poison is not read).
    test::write_kineto_trace(dir, "reports/main/c2/good.pt.trace.json", 120);
    ASSERT_TRUE(idle_with(port, db, 1, 30s)) << daemon->log();
    EXPECT_EQ(mark_state(db, (reports / "main" / "c2" / "good.pt.trace.json").string()), "read");

    // /healthz lists it, whole, in valid JSON; /metrics counts it.
    const auto health = test::http_get(port, "/healthz");
    ASSERT_EQ(health.status, 200) << health.body;
    const auto doc = nlohmann::json::parse(health.body);
    EXPECT_EQ(doc["quarantined"]["count"], 1);
    ASSERT_EQ(doc["quarantined"]["files"].size(), 1u);
    EXPECT_EQ(doc["quarantined"]["files"][0]["path"], poison);
    EXPECT_EQ(doc["quarantined"]["files"][0]["reason"], "the daemon crashed (SIGABRT) while reading it");
    EXPECT_EQ(metric(test::http_get(port, "/metrics").body, "perfwatch_quarantined_files"), 1.0);
    // The dashboard's alerts page lists it, escaped.
    const auto page = test::http_get(port, "/alerts");
    ASSERT_EQ(page.status, 200);
    EXPECT_NE(page.body.find("id=\"quarantined\""), std::string::npos) << page.body;
    EXPECT_NE(page.body.find("poison &quot;&lt;b&gt;x&lt;/b&gt;.pt.trace.json"), std::string::npos) << page.body;
    EXPECT_EQ(page.body.find("<b>x</b>"), std::string::npos);
    // `perfwatch files`: every mark; --quarantined --format json: that one.
    const auto listed = test::run_perfwatch({"files", "--db", db.string()});
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    EXPECT_NE(listed.out.find("quarantined"), std::string::npos) << listed.out;
    EXPECT_NE(listed.out.find(poison + "  the daemon crashed (SIGABRT) while reading it"), std::string::npos) << listed.out;
    EXPECT_NE(listed.out.find("good.pt.trace.json  run 1"), std::string::npos) << listed.out;
    const auto as_json = test::run_perfwatch({"files", "--db", db.string(), "--quarantined", "--format", "json"});
    ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
    const auto files = nlohmann::json::parse(as_json.out);
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(files[0]["path"], poison);
    EXPECT_EQ(files[0]["state"], "quarantined");

    // One alert, to the configured receiver, naming the file and the reason.
    ASSERT_TRUE(eventually([&] { return !quarantine_alerts(receiver).empty(); }, 20s)) << daemon->log();
    auto told = quarantine_alerts(receiver);
    ASSERT_EQ(told.size(), 1u);
    EXPECT_EQ(told[0]["alerts"][0]["entity"]["name"], poison);
    EXPECT_NE(told[0]["alerts"][0]["message"].get<std::string>().find("the daemon crashed (SIGABRT)"), std::string::npos);
    EXPECT_NE(told[0]["title"].get<std::string>().find("quarantined"), std::string::npos);

    // A restart reads nothing again and tells nothing again.
    daemon->signal(SIGTERM);
    ASSERT_EQ(daemon->wait_exit(10), 0) << daemon->log();
    daemon.emplace(std::vector<std::string>{"daemon", "--config", cfg.string()}, dir.file("daemon3.log"),
                   crash_on_poison);
    ASSERT_TRUE(daemon->wait_for_log("ready:", 30)) << daemon->log();
    port = daemon->logged_port();
    ASSERT_TRUE(idle_with(port, db, 1, 30s)) << daemon->log();
    std::this_thread::sleep_for(2500ms);
    EXPECT_FALSE(daemon->wait_exit(0).has_value()) << "the quarantined file was read again\n" << daemon->log();
    EXPECT_EQ(quarantine_alerts(receiver).size(), 1u);
    EXPECT_EQ(mark_state(db, poison), "quarantined");

    // Retried from the dashboard (its button needs the token and the same origin) while the reader
    // still dies on it: read once more, it ends the daemon again, and the next start quarantines it
    // again and tells it again.
    const auto with_token = test::http_get(port, "/alerts");
    EXPECT_NE(with_token.body.find("action=\"/files/retry\""), std::string::npos) << with_token.body;
    const std::vector<std::pair<std::string, std::string>> form{{"Content-Type", "application/x-www-form-urlencoded"}};
    const std::string body = "path=" + web::url_encode(poison);
    EXPECT_EQ(test::http_request(port, "POST", "/files/retry", body, form).status, 403);
    auto cross = form;
    cross.emplace_back("Origin", "http://evil.example");
    EXPECT_EQ(test::http_request(port, "POST", "/files/retry", body + "&token=" + k_token, cross).status, 403);
    EXPECT_EQ(mark_state(db, poison), "quarantined");
    const auto retried = test::http_request(port, "POST", "/files/retry", body + "&token=" + k_token, form);
    EXPECT_EQ(retried.status, 303) << retried.body;
    ASSERT_EQ(daemon->wait_exit(30), 128 + SIGABRT) << daemon->log();
    daemon.emplace(std::vector<std::string>{"daemon", "--config", cfg.string()}, dir.file("daemon4.log"),
                   crash_on_poison);
    ASSERT_TRUE(daemon->wait_for_log("quarantined: the daemon crashed (SIGABRT)", 30)) << daemon->log();
    ASSERT_TRUE(eventually([&] { return quarantine_alerts(receiver).size() >= 2; }, 20s)) << daemon->log();
    EXPECT_EQ(quarantine_alerts(receiver).size(), 2u);
    EXPECT_EQ(mark_state(db, poison), "quarantined");
    daemon->signal(SIGTERM);
    ASSERT_EQ(daemon->wait_exit(10), 0) << daemon->log();

    // The reader fixed (no trigger): retried, it is read once more and stored.
    daemon.emplace(std::vector<std::string>{"daemon", "--config", cfg.string()}, dir.file("daemon5.log"));
    ASSERT_TRUE(daemon->wait_for_log("ready:", 30)) << daemon->log();
    port = daemon->logged_port();
    ASSERT_TRUE(idle_with(port, db, 1, 30s)) << daemon->log();
    EXPECT_EQ(mark_state(db, poison), "quarantined") << "read again without a retry";
    const auto retried_cli = test::run_perfwatch({"files", "retry", poison, "--db", db.string()});
    ASSERT_EQ(retried_cli.exit_code, 0) << retried_cli.err;
    EXPECT_NE(retried_cli.out.find("quarantined -> retry"), std::string::npos) << retried_cli.out;
    ASSERT_TRUE(idle_with(port, db, 2, 30s)) << daemon->log();
    EXPECT_EQ(mark_state(db, poison), "read");
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs WHERE processed_at IS NOT NULL"), 2);
    ASSERT_TRUE(eventually(
        [&] {
            return nlohmann::json::parse(test::http_get(port, "/healthz").body)["quarantined"]["count"] == 0 &&
                   metric(test::http_get(port, "/metrics").body, "perfwatch_quarantined_files") == 0.0;
        },
        10s));
    EXPECT_EQ(quarantine_alerts(receiver).size(), 2u);
    daemon->signal(SIGTERM);
    EXPECT_EQ(daemon->wait_exit(10), 0) << daemon->log();
}

// Issue 46 with the reader sandbox: a reader process that crashes on one report and one that
// passes its memory limit on another each quarantine their file at once; the daemon itself stays
// up and healthy, stores the next report, tells each quarantine once, and after a restart reads
// neither again; `perfwatch files retry` reads one of them once more (here it kills its reader
// again: quarantined and told again).
TEST(Quarantine, AReaderProcessThatDiesQuarantinesItsFileWhileTheDaemonGoesOn) {
    test::Receiver receiver([](std::size_t) { return test::Receiver::Answer{}; });
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports", db = dir.path() / "perfwatch.db";
    const fs::path cfg = write_config(dir, reports, receiver.port(), "reader:\n  memory_mb: 300\n");
    const std::vector<std::string> faults = {"PERFWATCH_TEST_READER_FAULT=crash:poison,memory:hog"};
    std::optional<test::BackgroundProcess> daemon;
    daemon.emplace(std::vector<std::string>{"daemon", "--config", cfg.string()}, dir.file("daemon1.log"), faults);
    ASSERT_TRUE(daemon->wait_for_log("ready:", 30)) << daemon->log();
    unsigned short port = daemon->logged_port();
    const std::string poison = test::write_kineto_trace(dir, "reports/main/c1/poison.pt.trace.json", 100);
    const std::string hog = test::write_kineto_trace(dir, "reports/main/c1/hog.pt.trace.json", 100);
    ASSERT_TRUE(eventually([&] { return mark_state(db, poison) == "quarantined" && mark_state(db, hog) == "quarantined"; }, 60s))
        << daemon->log();
    EXPECT_NE(mark_error(db, poison).find("the reader process "), std::string::npos) << mark_error(db, poison);
    EXPECT_TRUE(mark_error(db, hog).starts_with("the reader process was killed after exceeding its memory limit of 300 MB ("))
        << mark_error(db, hog);
    EXPECT_TRUE(daemon->wait_for_log(poison + ": quarantined: the reader process", 5)) << daemon->log();
    EXPECT_FALSE(daemon->wait_exit(0).has_value()) << "the daemon died with its reader\n" << daemon->log();
    // The next report is stored; the daemon is healthy and counts both files.
    test::write_kineto_trace(dir, "reports/main/c2/good.pt.trace.json", 120);
    ASSERT_TRUE(idle_with(port, db, 1, 60s)) << daemon->log();
    const auto health = test::http_get(port, "/healthz");
    ASSERT_EQ(health.status, 200) << health.body;
    EXPECT_EQ(nlohmann::json::parse(health.body)["quarantined"]["count"], 2);
    EXPECT_EQ(metric(test::http_get(port, "/metrics").body, "perfwatch_quarantined_files"), 2.0);
    ASSERT_TRUE(eventually([&] { return quarantine_alerts(receiver).size() >= 2; }, 20s)) << daemon->log();
    EXPECT_EQ(quarantine_alerts(receiver).size(), 2u);

    // A restart reads neither again.
    daemon->signal(SIGTERM);
    ASSERT_EQ(daemon->wait_exit(10), 0) << daemon->log();
    daemon.emplace(std::vector<std::string>{"daemon", "--config", cfg.string()}, dir.file("daemon2.log"), faults);
    ASSERT_TRUE(daemon->wait_for_log("ready:", 30)) << daemon->log();
    port = daemon->logged_port();
    ASSERT_TRUE(idle_with(port, db, 1, 30s)) << daemon->log();
    std::this_thread::sleep_for(2500ms);
    EXPECT_EQ(daemon->log().find("the reader process"), std::string::npos) << "read again:\n" << daemon->log();
    EXPECT_EQ(quarantine_alerts(receiver).size(), 2u);

    // Retried on purpose: read once more, its reader dies again, quarantined and told again.
    const auto retried = test::run_perfwatch({"files", "retry", poison, "--db", db.string()});
    ASSERT_EQ(retried.exit_code, 0) << retried.err;
    ASSERT_TRUE(daemon->wait_for_log(poison + ": quarantined: the reader process", 30)) << daemon->log();
    ASSERT_TRUE(eventually([&] { return quarantine_alerts(receiver).size() >= 3; }, 20s)) << daemon->log();
    EXPECT_EQ(mark_state(db, poison), "quarantined");
    EXPECT_EQ(mark_state(db, hog), "quarantined");
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs"), 1);
    daemon->signal(SIGTERM);
    EXPECT_EQ(daemon->wait_exit(10), 0) << daemon->log();
}

// A daemon that ended while reading with no crash note (kill -9, the OOM killer, a power cut)
// leaves its reading marks: the first such end is forgiven (the file is read again, so a kill -9
// loses no report), a second one while reading the same file quarantines it. Marks of another
// daemon of the fleet are not its own to judge.
TEST(Quarantine, AnUnexplainedEndIsForgivenOnceAndQuarantinesTheSecondTime) {
    test::Receiver receiver([](std::size_t) { return test::Receiver::Answer{}; });
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports", db = dir.path() / "perfwatch.db";
    const fs::path cfg = write_config(dir, reports, receiver.port());
    const std::string once = test::write_kineto_trace(dir, "reports/main/c1/once.pt.trace.json", 100);
    const std::string twice = test::write_kineto_trace(dir, "reports/main/c2/twice.pt.trace.json", 110);
    const std::string theirs = test::write_kineto_trace(dir, "reports/main/c3/theirs.pt.trace.json", 120);
    // The database as a killed daemon leaves it: its marks in the reading state, under its name
    // (host and configuration file).
    ASSERT_EQ(test::run_perfwatch({"files", "--db", db.string()}).exit_code, 0);  // creates the database
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    const std::string me = fmt::format("{}:{}", host, fs::absolute(cfg).lexically_normal().string());
    {
        SQLite::Database d(db.string(), SQLite::OPEN_READWRITE);
        // Each as the file is (a daemon marks a file with its size and time when it starts reading it).
        SQLite::Statement ins(d, "INSERT INTO watched_files(path, size, mtime_ns, seen_at, state, reader, deaths) "
                                 "VALUES(?, ?, ?, 'then', 'reading', ?, ?)");
        for (const auto& [path, reader, deaths] : {std::tuple{once, me, 0}, {twice, me, 1}, {theirs, std::string("elsewhere:/x.yaml"), 1}}) {
            struct stat st {};
            ASSERT_EQ(::stat(path.c_str(), &st), 0);
            ins.bind(1, path);
            ins.bind(2, static_cast<std::int64_t>(st.st_size));
            ins.bind(3, static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec);
            ins.bind(4, reader);
            ins.bind(5, deaths);
            ins.exec();
            ins.reset();
        }
    }
    test::BackgroundProcess daemon({"daemon", "--config", cfg.string()}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    const unsigned short port = daemon.logged_port();
    ASSERT_TRUE(idle_with(port, db, 2, 30s)) << daemon.log();
    EXPECT_EQ(mark_state(db, once), "read");
    EXPECT_EQ(mark_state(db, theirs), "read");
    EXPECT_EQ(mark_state(db, twice), "quarantined");
    EXPECT_EQ(mark_error(db, twice), "the daemon ended while reading it (2 times)");
    EXPECT_NE(daemon.log().find(once + ": the previous process ended while reading it; read again"), std::string::npos)
        << daemon.log();
    ASSERT_TRUE(eventually([&] { return quarantine_alerts(receiver).size() == 1; }, 20s)) << daemon.log();
    EXPECT_EQ(quarantine_alerts(receiver)[0]["alerts"][0]["entity"]["name"], twice);
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(10), 0) << daemon.log();
    // A clean stop leaves no reading mark behind.
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM watched_files WHERE state = 'reading'"), 0);
}

}  // namespace perfwatch
