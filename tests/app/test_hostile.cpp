#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tests/support.hpp"

namespace perfwatch {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct HostileInput {
    std::string file;
    bool ok = false;    // a sane result is expected; otherwise a clear error
    std::string text;   // what the error says, or a kernel name the stored run holds
};

// "\xef\xbf\xbd" escapes (as make_hostile.py writes them) to bytes.
std::string unescape(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text.compare(i, 2, "\\x") == 0 && i + 3 < text.size()) {
            out += static_cast<char>(std::stoi(text.substr(i + 2, 2), nullptr, 16));
            i += 3;
        } else {
            out += text[i];
        }
    }
    return out;
}

// tests/fixtures/hostile/make_hostile.py run into `dir`: the crafted inputs and what each must give.
std::vector<HostileInput> make_hostile(const fs::path& dir) {
    const auto made = test::run_program({"/usr/bin/python3",
                                         std::string(PERFWATCH_SOURCE_DIR) + "/tests/fixtures/hostile/make_hostile.py",
                                         dir.string()});
    EXPECT_EQ(made.exit_code, 0) << made.err;
    std::vector<HostileInput> out;
    std::ifstream in(dir / "expect.tsv");
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        HostileInput h;
        std::string expectation;
        std::getline(fields, h.file, '\t');
        std::getline(fields, expectation, '\t');
        std::getline(fields, h.text);
        h.ok = expectation == "ok";
        h.text = unescape(h.text);
        out.push_back(std::move(h));
    }
    fs::remove(dir / "expect.tsv");
    return out;
}

std::int64_t count_entities_named(const fs::path& db, const std::string& name) {
    SQLite::Database d(db.string(), SQLite::OPEN_READONLY);
    SQLite::Statement st(d, "SELECT count(*) FROM entities WHERE kind = 'kernel' AND name = ?");
    st.bind(1, name);
    return st.executeStep() ? st.getColumn(0).getInt64() : 0;
}

bool sanitizer_spoke(const std::string& err) {
    return err.find("AddressSanitizer") != std::string::npos || err.find("runtime error:") != std::string::npos;
}

}  // namespace

// Every crafted input through the CLI: a clear error naming the file (exit 2), or a stored run
// with sane names; never a crash, a sanitizer report or a hang.
TEST(Hostile, CheckGivesAClearErrorOrASaneResultForEveryCraftedInput) {
    test::TempDir dir;
    const auto inputs = make_hostile(dir.path() / "in");
    ASSERT_GE(inputs.size(), 15u);
    const fs::path db = dir.path() / "h.db";
    for (const HostileInput& h : inputs) {
        const std::string path = (dir.path() / "in" / h.file).string();
        const auto r = test::run_program({"timeout", "120", PERFWATCH_BINARY, "check", "--db", db.string(), "--format",
                                          "json", path});
        SCOPED_TRACE(h.file);
        EXPECT_NE(r.exit_code, 124) << "hung";
        EXPECT_FALSE(sanitizer_spoke(r.err)) << r.err;
        if (!h.ok) {
            EXPECT_EQ(r.exit_code, 2) << r.err;
            EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
            EXPECT_NE(r.err.find(h.text), std::string::npos) << r.err;
            continue;
        }
        EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
        EXPECT_TRUE(nlohmann::json::accept(r.out)) << r.out.substr(0, 500);
        // Names are stored as valid UTF-8 without control characters, as the expectation spells them.
        EXPECT_EQ(count_entities_named(db, h.text), 1) << h.text;
    }
}

TEST(Hostile, CheckAndIngestRefuseAFifoAtOnce) {
    test::TempDir dir;
    const std::string fifo = dir.file("report.json");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    for (const std::string command : {"check", "ingest"}) {
        const auto start = std::chrono::steady_clock::now();
        const auto r = test::run_program({"timeout", "20", PERFWATCH_BINARY, command, "--db", dir.file("a.db"), fifo});
        EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << command;
        EXPECT_EQ(r.exit_code, 2) << command << ": " << r.err;
        EXPECT_NE(r.err.find(fifo + ": is not a regular file"), std::string::npos) << r.err;
    }
}

// The whole hostile corpus, a FIFO and a symbolic link to /etc/shadow dropped into a watched
// directory: /healthz stays 200, each bad report is logged as failed (naming it) and marked,
// each good one is stored, evaluated and alerted once, and each path that is no report is said
// once. A restart reads nothing again and sends nothing again.
TEST(Hostile, DaemonStaysHealthyOnEveryCraftedInputAndAfterARestart) {
    test::TempDir dir;
    const auto inputs = make_hostile(dir.path() / "staging");
    const fs::path reports = dir.path() / "reports", db = dir.path() / "perfwatch.db";
    const fs::path commit_dir = reports / "p" / "main" / "c1";
    fs::create_directories(commit_dir);
    test::write_file(dir.path() / "perfwatch.yaml", fmt::format(R"(database: perfwatch.db
watch:
  - path: {}
    path_template: "{{project}}/{{branch}}/{{commit}}/**"
listen: 127.0.0.1:0
quiet_period: 200ms
receivers:
  - {{name: archive, type: jsonl, path: alerts.jsonl}}
route:
  receiver: archive
)",
                                                                reports.string()));
    test::BackgroundProcess daemon({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    const unsigned short port = daemon.logged_port();
    ASSERT_NE(port, 0);
    // Moved in whole (rename keeps the sparse file sparse).
    for (const HostileInput& h : inputs) fs::rename(dir.path() / "staging" / h.file, commit_dir / h.file);
    ASSERT_EQ(::mkfifo((commit_dir / "pipe.json").c_str(), 0600), 0);
    fs::create_symlink("/etc/shadow", commit_dir / "shadow.json");

    const auto marked = [&] { return test::query_int(db, "SELECT count(*) FROM watched_files"); };
    const auto deadline = std::chrono::steady_clock::now() + 180s;
    bool idle = false;
    while (std::chrono::steady_clock::now() < deadline) {
        const auto health = test::http_get(port, "/healthz");
        ASSERT_EQ(health.status, 200) << health.body << "\n" << daemon.log();
        const auto doc = nlohmann::json::parse(health.body);
        if (marked() == static_cast<std::int64_t>(inputs.size()) && doc["waiting"] == 0 && doc["in_flight"] == 0) {
            idle = true;
            break;
        }
        std::this_thread::sleep_for(100ms);
    }
    ASSERT_TRUE(idle) << marked() << " of " << inputs.size() << " marked\n" << daemon.log();
    EXPECT_EQ(test::http_get(port, "/healthz").status, 200);

    const std::string log = daemon.log();
    EXPECT_FALSE(sanitizer_spoke(log)) << log;
    std::size_t good = 0;
    for (const HostileInput& h : inputs) {
        SCOPED_TRACE(h.file);
        const std::string path = (commit_dir / h.file).string();
        SQLite::Database d(db.string(), SQLite::OPEN_READONLY);
        SQLite::Statement mark(d, "SELECT coalesce(run_id, 0), error FROM watched_files WHERE path = ?");
        mark.bind(1, path);
        ASSERT_TRUE(mark.executeStep());
        const std::int64_t run = mark.getColumn(0).getInt64();
        if (!h.ok) {
            EXPECT_EQ(run, 0);
            EXPECT_NE(mark.getColumn(1).getString().find(h.text), std::string::npos) << mark.getColumn(1).getString();
            EXPECT_NE(log.find("not ingested: " + path), std::string::npos) << log;
            continue;
        }
        ++good;
        EXPECT_GT(run, 0);
        EXPECT_EQ(test::query_int(db, fmt::format("SELECT count(*) FROM runs WHERE id = {} AND processed_at IS NOT NULL",
                                                  run)),
                  1);
        EXPECT_EQ(count_entities_named(db, h.text), 1) << h.text;
    }
    EXPECT_EQ(test::query_int(db, "SELECT count(*) FROM runs"), static_cast<std::int64_t>(good));
    for (const auto& [name, what] : {std::pair<std::string, std::string>{"pipe.json", "skipped: a FIFO"},
                                     {"shadow.json", "skipped: a symbolic link"}}) {
        const std::string line = (commit_dir / name).string() + ": " + what;
        const auto first = log.find(line);
        EXPECT_NE(first, std::string::npos) << log;
        EXPECT_EQ(log.find(line, first + 1), std::string::npos) << "said twice: " << line;
    }

    // One message per evaluated run (each run here has findings), the invalid UTF-8 one included.
    const auto messages = [&] {
        std::vector<nlohmann::json> out;
        std::ifstream in(dir.file("alerts.jsonl"));
        for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
        return out;
    };
    const auto sent = messages();
    const auto for_file = [&](const std::vector<nlohmann::json>& all, const std::string& file) {
        return std::count_if(all.begin(), all.end(), [&](const nlohmann::json& m) {
            return m["source"].get<std::string>().ends_with("/" + file);
        });
    };
    EXPECT_EQ(for_file(sent, "kineto_invalid_utf8_name.json"), 1);
    EXPECT_EQ(for_file(sent, "kineto_absurd_ts.json"), 0);

    daemon.signal(SIGTERM);
    ASSERT_EQ(daemon.wait_exit(10), 0) << daemon.log();
    test::BackgroundProcess again({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon2.log"));
    ASSERT_TRUE(again.wait_for_log("ready:", 30)) << again.log();
    const unsigned short port2 = again.logged_port();
    std::this_thread::sleep_for(2s);
    EXPECT_EQ(test::http_get(port2, "/healthz").status, 200);
    EXPECT_EQ(again.log().find("not ingested"), std::string::npos) << again.log();
    EXPECT_EQ(again.log().find("internal error"), std::string::npos) << again.log();
    EXPECT_EQ(messages().size(), sent.size());
    again.signal(SIGTERM);
    EXPECT_EQ(again.wait_exit(10), 0);
}

}  // namespace perfwatch
