#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>
#include <tuple>

#include "tests/support.hpp"
#include "tests/webhook_receiver.hpp"

namespace perfwatch {

namespace fs = std::filesystem;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

using test::query_int;
using test::write_file;

using test::eventually;
using test::Received;
using test::Receiver;

// The configuration's start: the database, `reports` watched with a project/branch/commit
// template, a short quiet period; then `rest` (receivers and route).
std::string daemon_config(const fs::path& reports, const std::string& listen, const std::string& rest) {
    return fmt::format(R"(database: perfwatch.db
watch:
  - path: {}
    path_template: "{{project}}/{{branch}}/{{commit}}/**"
listen: {}
quiet_period: 200ms
{})",
                       reports.string(), listen, rest);
}

std::string config_with_webhook(const fs::path& reports, const fs::path& secret_file) {
    return daemon_config(reports, "127.0.0.1:0", fmt::format(R"(reports:
  directory: {}
  base_url: https://perfwatch.example/reports
receivers:
  - name: gpu-team
    type: webhook
    url_file: {}
route:
  receiver: gpu-team
  group_by: [project]
)",
                                                             (reports.parent_path() / "html").string(),
                                                             secret_file.string()));
}

}  // namespace

// 500, then 429 with Retry-After, then 200: the message arrives exactly once more after each
// failure, always with the same key, carries the run's findings, and the URL never reaches a log.
TEST(Alerts, WebhookRetriedThrough500And429UntilDeliveredOnce) {
    PERFWATCH_CORPUS_FILE(report, "ncu/csv-details_B200-cc100_ncu2025_cublaslt_gemm_rules.log");
    Receiver receiver([](std::size_t n) {
        if (n == 0) return Receiver::Answer{500, "", 0ms};
        if (n == 1) return Receiver::Answer{429, "1", 0ms};
        return Receiver::Answer{200, "", 0ms};
    });
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports", db = dir.path() / "perfwatch.db";
    const std::string secret = "T0KEN-do-not-log-4f2a9";
    write_file(dir.path() / "webhook-url", fmt::format("http://127.0.0.1:{}/hooks/{}\n", receiver.port(), secret));
    write_file(dir.path() / "perfwatch.yaml", config_with_webhook(reports, dir.path() / "webhook-url"));
    fs::create_directories(reports);
    test::BackgroundProcess daemon({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    write_file(reports / "llm" / "main" / "abc123" / "gemm.csv", test::read_file(report));

    ASSERT_TRUE(eventually([&] { return receiver.received().size() >= 3 && receiver.received()[2].status == 200; }, 30s))
        << receiver.received().size() << " requests\n" << daemon.log();
    std::this_thread::sleep_for(2500ms);  // nothing more may come
    const auto got = receiver.received();
    ASSERT_EQ(got.size(), 3u) << daemon.log();
    EXPECT_EQ(got[0].status, 500u);
    EXPECT_EQ(got[1].status, 429u);
    EXPECT_EQ(got[2].status, 200u);
    EXPECT_FALSE(got[0].key.empty());
    for (const Received& r : got) {
        EXPECT_EQ(r.key, got[0].key);
        EXPECT_EQ(r.body, got[0].body);
        EXPECT_EQ(r.target, "/hooks/" + secret);
    }
    // The content: the run's findings, grouped by project, worst first, with the run's labels.
    const auto doc = nlohmann::json::parse(got[2].body);
    EXPECT_EQ(doc["status"], "firing");
    EXPECT_EQ(doc["key"], got[0].key);
    EXPECT_EQ(doc["group_labels"]["project"], "llm");
    EXPECT_EQ(doc["labels"]["commit"], "abc123");
    const std::int64_t findings = query_int(db, "SELECT count(*) FROM findings");
    ASSERT_GT(findings, 0);
    EXPECT_EQ(static_cast<std::int64_t>(doc["alerts"].size()), findings);
    EXPECT_NE(doc["title"].get<std::string>().find("in llm/main @ abc123"), std::string::npos) << doc["title"];
    // The daemon wrote the run's HTML report, and the message links to it.
    EXPECT_EQ(doc["report_url"], "https://perfwatch.example/reports/run-1.html");
    const std::string html = test::read_file((dir.path() / "html" / "run-1.html").string());
    EXPECT_NE(html.find("<h1>perfwatch: run 1</h1>"), std::string::npos);
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM outbox WHERE state = 'sent' AND attempts = 3"), 1);
    // /metrics: one sent, two failed attempts (not permanent), nothing left in the outbox.
    const unsigned short port = daemon.logged_port();
    ASSERT_NE(port, 0) << daemon.log();
    const std::string metrics = test::http_get(port, "/metrics").body;
    EXPECT_NE(metrics.find("perfwatch_alerts_sent_total{receiver=\"gpu-team\"} 1"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("perfwatch_alerts_failed_total{permanent=\"false\",receiver=\"gpu-team\"} 2"),
              std::string::npos)
        << metrics;
    EXPECT_NE(metrics.find("perfwatch_outbox_depth 0"), std::string::npos) << metrics;

    // The Retry-After was honoured: the third attempt came at least 1 s after the second.
    const std::string log = daemon.log();
    EXPECT_NE(log.find("failed: HTTP 500; attempt 1 of 12"), std::string::npos) << log;
    EXPECT_NE(log.find("failed: HTTP 429; attempt 2 of 12, retried in 1.0 s (Retry-After)"), std::string::npos) << log;
    EXPECT_EQ(log.find(secret), std::string::npos) << "the webhook URL reached the log";
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(5), 0);
    EXPECT_EQ(daemon.log().find(secret), std::string::npos);
}

// kill -9 while the receiver holds the request: after the restart the message is sent again with
// the same key; the receiver never sees a second distinct message.
TEST(Alerts, KillNineDuringDeliverySendsAtMostOnceMoreWithTheSameKey) {
    PERFWATCH_CORPUS_FILE(report, "ncu/csv-details_B200-cc100_ncu2025_cublaslt_gemm_rules.log");
    Receiver receiver([](std::size_t n) {
        return n == 0 ? Receiver::Answer{200, "", 3000ms} : Receiver::Answer{200, "", 0ms};
    });
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports";
    write_file(dir.path() / "webhook-url", fmt::format("http://127.0.0.1:{}/hook", receiver.port()));
    write_file(dir.path() / "perfwatch.yaml", config_with_webhook(reports, dir.path() / "webhook-url"));
    fs::create_directories(reports);
    {
        test::BackgroundProcess daemon({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon.log"));
        ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
        write_file(reports / "llm" / "main" / "abc123" / "gemm.csv", test::read_file(report));
        ASSERT_TRUE(eventually([&] { return !receiver.received().empty(); }, 30s)) << daemon.log();
        daemon.signal(SIGKILL);
        ASSERT_EQ(daemon.wait_exit(5), 128 + SIGKILL);
    }
    test::BackgroundProcess daemon({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon2.log"));
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    ASSERT_TRUE(eventually([&] { return receiver.received().size() >= 2; }, 30s)) << daemon.log();
    std::this_thread::sleep_for(4s);  // the first (held) request is answered meanwhile; nothing else comes
    const auto got = receiver.received();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].key, got[1].key);
    EXPECT_EQ(got[0].body, got[1].body);
    // The file was not ingested twice and no second message was built.
    EXPECT_EQ(query_int(dir.path() / "perfwatch.db", "SELECT count(*) FROM outbox"), 1);
    EXPECT_EQ(query_int(dir.path() / "perfwatch.db", "SELECT count(*) FROM outbox WHERE state = 'sent'"), 1);
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(5), 0);
}

namespace {

// The message with quoted-printable undone: soft line breaks joined, =XX decoded.
std::string decode_quoted_printable(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '=' && i + 2 < text.size() && text[i + 1] == '\r' && text[i + 2] == '\n') {
            i += 2;
        } else if (text[i] == '=' && i + 1 < text.size() && text[i + 1] == '\n') {
            i += 1;
        } else if (text[i] == '=' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
                   std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
            out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

unsigned short free_port() {
    boost::asio::io_context io;
    tcp::acceptor a(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    return a.local_endpoint().port();
}

}  // namespace

// A real SMTP server on loopback (Debian's python3-aiosmtpd) requiring STARTTLS and AUTH: the
// mail's subject and both bodies carry the findings; the password never reaches the log.
TEST(Alerts, EmailOverStartTlsWithAuthCarriesTheFindings) {
    PERFWATCH_CORPUS_FILE(report, "ncu/csv-details_B200-cc100_ncu2025_cublaslt_gemm_rules.log");
    if (test::run_program({"/usr/bin/python3", "-c", "import aiosmtpd"}).exit_code != 0)
        GTEST_SKIP() << "python3-aiosmtpd is not installed (scripts/deps.sh installs it)";
    if (test::run_program({"openssl", "version"}).exit_code != 0) GTEST_SKIP() << "openssl is not installed";
    test::TempDir dir;
    const auto cert = test::run_program({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                                         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout",
                                         dir.file("key.pem"), "-out", dir.file("cert.pem")});
    ASSERT_EQ(cert.exit_code, 0) << cert.err;
    const fs::path mail = dir.path() / "mail";
    fs::create_directories(mail);
    const std::string password = "p4ss-never-logged-77";
    const unsigned short port = free_port();
    test::BackgroundProcess smtp({std::string(PERFWATCH_SOURCE_DIR) + "/tests/app/smtp_peer.py", std::to_string(port),
                                  mail.string(), dir.file("cert.pem"), dir.file("key.pem"), "perfwatch", password},
                                 dir.file("smtp.log"), {}, "/usr/bin/python3");
    ASSERT_TRUE(smtp.wait_for_log("ready", 30)) << smtp.log();

    const fs::path reports = dir.path() / "reports";
    fs::create_directories(reports);
    write_file(dir.path() / "smtp-password", password + "\n");
    write_file(dir.path() / "perfwatch.yaml", daemon_config(reports, "off", fmt::format(R"(receivers:
  - name: gpu-mail
    type: email
    smtp_url: smtp://127.0.0.1:{}
    from: perfwatch@ci.example
    to: [gpu-team@example.com]
    username: perfwatch
    password_file: smtp-password
    ca_file: cert.pem
route:
  receiver: gpu-mail
)",
                                                                                       port)));
    test::BackgroundProcess daemon({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    write_file(reports / "llm" / "main" / "abc123" / "gemm.csv", test::read_file(report));
    ASSERT_TRUE(eventually([&] { return fs::exists(mail / "0000.eml"); }, 30s)) << daemon.log() << smtp.log();
    ASSERT_TRUE(daemon.wait_for_log("alert sent to 'gpu-mail'", 10)) << daemon.log();
    const std::string raw = test::read_file((mail / "0000.eml").string());
    EXPECT_NE(raw.find("Content-Transfer-Encoding: quoted-printable"), std::string::npos);
    const std::string message = decode_quoted_printable(raw);
    const std::int64_t findings = query_int(dir.path() / "perfwatch.db", "SELECT count(*) FROM findings");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(message, m, std::regex("Subject: (perfwatch: ([0-9]+) findings?[^\r\n]*)")))
        << message;
    EXPECT_EQ(std::stoll(m[2]), findings);
    EXPECT_NE(m[1].str().find("in llm/main @ abc123"), std::string::npos) << m[1];
    EXPECT_NE(message.find("Content-Type: multipart/alternative"), std::string::npos);
    EXPECT_NE(message.find("Content-Type: text/plain"), std::string::npos);
    EXPECT_NE(message.find("Content-Type: text/html"), std::string::npos);
    EXPECT_NE(message.find("Message-ID: <perfwatch-"), std::string::npos);
    // Every finding's title is in the text body.
    SQLite::Database d((dir.path() / "perfwatch.db").string(), SQLite::OPEN_READONLY);
    SQLite::Statement titles(d, "SELECT DISTINCT title FROM findings");
    while (titles.executeStep()) EXPECT_NE(message.find(titles.getColumn(0).getString()), std::string::npos);
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(5), 0);
    EXPECT_EQ(daemon.log().find(password), std::string::npos) << "the SMTP password reached the log";
    smtp.signal(SIGTERM);
    smtp.wait_exit(5);
}

// Several receiver types behind one route tree: one message per receiver and project, Slack's
// rate limit, a 404 given up at once, a JSON-lines archive, and a silence added from the CLI.
TEST(Alerts, RouteTreeReceiverTypesRateLimitPermanentFailureAndSilence) {
    PERFWATCH_CORPUS_FILE(report, "ncu/csv-details_B200-cc100_ncu2025_cublaslt_gemm_rules.log");
    Receiver receiver([&](std::size_t) { return Receiver::Answer{200, "", 0ms}; });
    Receiver gone([](std::size_t) { return Receiver::Answer{404, "", 0ms}; });
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports";
    fs::create_directories(reports);
    for (const char* name : {"slack", "teams", "mattermost"})
        write_file(dir.path() / (std::string(name) + ".url"), fmt::format("http://127.0.0.1:{}/{}", receiver.port(), name));
    write_file(dir.path() / "gone.url", fmt::format("http://127.0.0.1:{}/gone", gone.port()));
    write_file(dir.path() / "perfwatch.yaml", daemon_config(reports, "off", R"(receivers:
  - {name: chat, type: slack, url_file: slack.url}
  - {name: p1-team, type: teams, url_file: teams.url}
  - {name: p2-team, type: mattermost, url_file: mattermost.url}
  - {name: gone, type: webhook, url_file: gone.url}
  - {name: archive, type: jsonl, path: alerts.jsonl}
route:
  receiver: archive
  group_by: [project]
  routes:
    - {receiver: archive, continue: true}
    - {match: {severity: warning}, receiver: chat, continue: true}
    - {match: {project: p1}, receiver: p1-team, continue: true}
    - {match: {project: p2}, receiver: p2-team, continue: true}
    - {match: {project: p1}, receiver: gone}
)"));
    const auto silenced = test::run_perfwatch({"--config", dir.file("perfwatch.yaml"), "silence", "add", "--match",
                                               "project=p3", "--until", "1h", "--comment", "known"});
    ASSERT_EQ(silenced.exit_code, 0) << silenced.err;
    EXPECT_TRUE(silenced.out.starts_with("silence 1: project=p3 until ")) << silenced.out;

    test::BackgroundProcess daemon({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    const std::string csv = test::read_file(report);
    for (int i = 1; i <= 3; ++i)
        write_file(reports / fmt::format("p{}", i) / "main" / "c1" / "gemm.csv", csv + std::string(static_cast<std::size_t>(i), '\n'));

    auto count = [&](const std::string& target) {
        const auto got = receiver.received();
        return std::count_if(got.begin(), got.end(), [&](const Received& r) { return r.target == target; });
    };
    ASSERT_TRUE(eventually([&] { return count("/slack") == 2 && count("/teams") == 1 && count("/mattermost") == 1; }, 30s))
        << daemon.log();
    ASSERT_TRUE(daemon.wait_for_log("failed permanently", 10)) << daemon.log();
    std::this_thread::sleep_for(1500ms);
    EXPECT_EQ(count("/slack"), 2);
    EXPECT_EQ(count("/teams"), 1);
    EXPECT_EQ(count("/mattermost"), 1);
    EXPECT_EQ(gone.received().size(), 1u) << "a 404 is not retried";
    EXPECT_NE(daemon.log().find("alert to 'gone' (webhook) failed permanently after 1 attempt(s): HTTP 404"),
              std::string::npos);
    EXPECT_NE(daemon.log().find("alerts silenced"), std::string::npos) << daemon.log();

    std::vector<Received> slack;
    for (const Received& r : receiver.received()) {
        const auto doc = nlohmann::json::parse(r.body);
        if (r.target == "/slack") {
            slack.push_back(r);
            EXPECT_EQ(doc["blocks"][0]["type"], "header");
        } else if (r.target == "/teams") {
            EXPECT_EQ(doc["attachments"][0]["content"]["type"], "AdaptiveCard");
            EXPECT_NE(doc["attachments"][0]["content"]["body"][0]["text"].get<std::string>().find("in p1/main"),
                      std::string::npos);
        } else {
            EXPECT_NE(doc["text"].get<std::string>().find("in p2/main"), std::string::npos);
        }
        EXPECT_EQ(r.body.find("p3/main"), std::string::npos) << "a silenced project was alerted";
    }
    // Slack's default rate limit: one message per second.
    ASSERT_EQ(slack.size(), 2u);
    EXPECT_GE(slack[1].at - slack[0].at, 900ms);
    // The archive has one line per project (p3 silenced).
    std::ifstream archive(dir.file("alerts.jsonl"));
    std::vector<std::string> projects;
    for (std::string line; std::getline(archive, line);)
        projects.push_back(nlohmann::json::parse(line)["group_labels"]["project"]);
    std::sort(projects.begin(), projects.end());
    EXPECT_EQ(projects, (std::vector<std::string>{"p1", "p2"}));
    EXPECT_EQ(query_int(dir.path() / "perfwatch.db", "SELECT count(*) FROM outbox"), 7);
    EXPECT_EQ(query_int(dir.path() / "perfwatch.db", "SELECT count(*) FROM outbox WHERE state = 'failed'"), 1);
    // The permanent failure is reported by `perfwatch outbox` too.
    const auto outbox = test::run_perfwatch({"--config", dir.file("perfwatch.yaml"), "outbox"});
    EXPECT_EQ(outbox.exit_code, 0) << outbox.err;
    EXPECT_NE(outbox.out.find("failed   1 attempt(s)  gone"), std::string::npos) << outbox.out;
    EXPECT_NE(outbox.out.find("last error: HTTP 404"), std::string::npos) << outbox.out;

    const auto list = test::run_perfwatch({"--config", dir.file("perfwatch.yaml"), "silence", "list"});
    EXPECT_NE(list.out.find("active"), std::string::npos) << list.out;
    EXPECT_EQ(test::run_perfwatch({"--config", dir.file("perfwatch.yaml"), "silence", "expire", "1"}).exit_code, 0);
    EXPECT_EQ(test::run_perfwatch({"--config", dir.file("perfwatch.yaml"), "silence", "list"}).out, "no active silences\n");
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(5), 0);
}

// A regression opens (a firing alert), then three runs back inside the band resolve it: a
// resolved message follows.
// inhibit_rules in the daemon: while the GPU-idle alert fires, the run's hotspot alerts are not sent.
TEST(Alerts, InhibitRulesMuteAlertsInTheDaemon) {
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports";
    fs::create_directories(reports);
    write_file(dir.path() / "perfwatch.yaml", daemon_config(reports, "off", R"(receivers:
  - {name: archive, type: jsonl, path: alerts.jsonl}
route:
  receiver: archive
inhibit_rules:
  - source_match: {rule: launch-gpu-idle}
    target_match: {rule: "hotspot-*"}
)"));
    test::BackgroundProcess daemon({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    // Five kernels of four names over 1.01 ms, one every 250 us: the GPU idles 97% of the time
    // between launches, and gemm is the top kernel.
    std::string events;
    for (const auto& [name, ts, dur] : {std::tuple{"gemm", 1000, 10}, std::tuple{"relu", 1250, 2}, std::tuple{"add", 1500, 1},
                                        std::tuple{"mul", 1750, 1}, std::tuple{"gemm", 2000, 10}})
        events += fmt::format(R"({}{{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": 7, "ts": {}, "dur": {}, "args": {{"device": 0, "stream": 7}}}})",
                              events.empty() ? "" : ", ", name, ts, dur);
    write_file(reports / "p" / "main" / "c1" / "t.json",
               R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "numSms": 132}], "traceEvents": [)" +
                   events + "]}");
    ASSERT_TRUE(eventually([&] { return fs::exists(dir.path() / "alerts.jsonl") && fs::file_size(dir.path() / "alerts.jsonl") > 0; },
                           30s))
        << daemon.log();
    std::ifstream in(dir.file("alerts.jsonl"));
    std::string line;
    ASSERT_TRUE(std::getline(in, line));
    std::set<std::string> rules;
    const auto doc = nlohmann::json::parse(line);
    for (const auto& a : doc["alerts"]) rules.insert(a["rule"].get<std::string>());
    EXPECT_TRUE(rules.contains("launch-gpu-idle")) << line;
    EXPECT_FALSE(rules.contains("hotspot-top-kernel")) << line;
    EXPECT_GE(query_int(dir.path() / "perfwatch.db", "SELECT count(*) FROM findings WHERE rule = 'hotspot-top-kernel'"), 1)
        << "the finding is stored; only its alert is inhibited";
    EXPECT_TRUE(daemon.wait_for_log("alerts inhibited", 5)) << daemon.log();
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(10), 0);
}

namespace {

// A small Kineto trace whose GPU idles between launches (launch-gpu-idle fires);
// `variant` changes a duration so that each is a report of its own.
std::string idle_trace(int variant) {
    std::string events;
    for (const auto& [name, ts, dur] : {std::tuple{"gemm", 1000, 10}, std::tuple{"relu", 1500, 2 + variant},
                                        std::tuple{"gemm", 2000, 10}})
        events += fmt::format(R"({}{{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": 7, "ts": {}, "dur": {}, "args": {{"device": 0, "stream": 7}}}})",
                              events.empty() ? "" : ", ", name, ts, dur);
    return R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "numSms": 132}], "traceEvents": [)" +
           events + "]}";
}

std::vector<nlohmann::json> jsonl(const fs::path& path) {
    std::vector<nlohmann::json> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
}

}  // namespace

// group_wait and group_interval: a CI job writing 10 reports into one commit folder within a
// second gets one message holding all 10; runs of that commit arriving later make one follow-up
// (not one each) no sooner than group_interval after it, also across a kill -9 of the daemon.
TEST(Alerts, OneMessagePerPipelineWithGroupWaitAndGroupInterval) {
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports", db = dir.path() / "perfwatch.db";
    fs::create_directories(reports);
    write_file(dir.path() / "perfwatch.yaml", daemon_config(reports, "off", R"(receivers:
  - {name: archive, type: jsonl, path: alerts.jsonl}
route:
  receiver: archive
  group_by: [project, commit]
  group_wait: 3s
  group_interval: 4s
# Reports read in the daemon's own process: 10 reader processes of the sanitizer build take
# longer than group_wait, and this test is about grouping, not reading.
reader:
  isolation: none
)"));
    const fs::path commit = reports / "llm" / "main" / "c1";
    auto daemon = std::make_unique<test::BackgroundProcess>(
        std::vector<std::string>{"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon->wait_for_log("ready:", 30)) << daemon->log();
    for (int i = 0; i < 10; ++i) write_file(commit / fmt::format("bench{}.json", i), idle_trace(i));
    ASSERT_TRUE(eventually([&] { return !jsonl(dir.path() / "alerts.jsonl").empty(); }, 30s)) << daemon->log();
    std::this_thread::sleep_for(1500ms);
    auto sent = jsonl(dir.path() / "alerts.jsonl");
    ASSERT_EQ(sent.size(), 1u) << daemon->log();
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs"), 10);
    EXPECT_EQ(sent[0]["sources"].size(), 10u) << sent[0].dump();
    EXPECT_NE(sent[0]["title"].get<std::string>().find("from 10 reports"), std::string::npos) << sent[0]["title"];
    std::set<std::string> alert_sources;
    for (const auto& a : sent[0]["alerts"]) alert_sources.insert(a["source"].get<std::string>());
    EXPECT_EQ(alert_sources.size(), 10u);

    // kill -9, then two more reports of the commit: one follow-up holding both.
    daemon->signal(SIGKILL);
    daemon->wait_exit(5);
    daemon.reset();
    write_file(commit / "late1.json", idle_trace(20));
    write_file(commit / "late2.json", idle_trace(21));
    daemon = std::make_unique<test::BackgroundProcess>(
        std::vector<std::string>{"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon2.log"));
    ASSERT_TRUE(daemon->wait_for_log("ready:", 30)) << daemon->log();
    ASSERT_TRUE(eventually([&] { return jsonl(dir.path() / "alerts.jsonl").size() >= 2; }, 30s)) << daemon->log();
    std::this_thread::sleep_for(1500ms);
    sent = jsonl(dir.path() / "alerts.jsonl");
    ASSERT_EQ(sent.size(), 2u) << daemon->log();
    EXPECT_EQ(sent[1]["sources"].size(), 2u) << sent[1].dump();
    EXPECT_NE(sent[1]["key"], sent[0]["key"]);
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM runs"), 12);
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM outbox WHERE state = 'sent'"), 2);
    EXPECT_GE(query_int(db, "SELECT max(done_ms) - min(done_ms) FROM outbox WHERE state = 'sent'"), 4000)
        << "the follow-up waited group_interval";
    daemon->signal(SIGTERM);
    EXPECT_EQ(daemon->wait_exit(10), 0);
}

TEST(Alerts, ARegressionThatGoesAwaySendsAResolvedMessage) {
    Receiver receiver([](std::size_t) { return Receiver::Answer{200, "", 0ms}; });
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports";
    fs::create_directories(reports);
    write_file(dir.path() / "hook.url", fmt::format("http://127.0.0.1:{}/hook", receiver.port()));
    // With a dashboard published, messages link to its run and regression pages.
    write_file(dir.path() / "perfwatch.yaml", config_with_webhook(reports, dir.path() / "hook.url") +
                                                  "dashboard:\n  base_url: http://dash.example/\n"
                                                  "  commit_url: https://git.example/app/commit/{commit}\n");
    test::BackgroundProcess daemon({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    test::TempDir scratch;
    const double series[] = {100, 101, 99, 100, 102, 100, 99, 101, 125, 100, 101, 99};
    for (std::size_t i = 0; i < std::size(series); ++i) {
        const std::string trace = test::write_kineto_trace(scratch, fmt::format("t{}.json", i), series[i], 40,
                                                           "NVIDIA H100", 1000.0 * static_cast<double>(i + 1));
        const fs::path target = reports / "vision" / "main" / fmt::format("c{}", i) / "trace.json";
        fs::create_directories(target.parent_path());
        fs::copy_file(trace, target);
        ASSERT_TRUE(daemon.wait_for_log(fmt::format("info: run {}:", i + 1), 30)) << daemon.log();
    }
    auto find_message = [&](const std::string& status) -> std::optional<nlohmann::json> {
        for (const Received& r : receiver.received()) {
            const auto doc = nlohmann::json::parse(r.body);
            if (doc["status"] != status) continue;
            for (const auto& a : doc["alerts"])
                if (a["rule"] == "kernel-time-regression") return doc;
        }
        return std::nullopt;
    };
    ASSERT_TRUE(eventually([&] { return find_message("resolved").has_value(); }, 30s)) << daemon.log();
    const auto opened = find_message("firing");
    ASSERT_TRUE(opened.has_value());
    EXPECT_EQ((*opened)["labels"]["commit"], "c8");
    EXPECT_EQ((*opened)["report_url"], "http://dash.example/run/9");
    // And to the commit on the code host (dashboard.commit_url).
    EXPECT_EQ((*opened)["commit_url"], "https://git.example/app/commit/c8");
    // The regression's alert carries its page and where a bisection starts: c7 at 101 us (the
    // trace's launches average exactly the value written) .. c8 at 125 us.
    bool linked = false;
    for (const auto& a : (*opened)["alerts"]) {
        if (a["rule"] != "kernel-time-regression") continue;
        linked = true;
        EXPECT_TRUE(a["url"].get<std::string>().starts_with("http://dash.example/regression/")) << a.dump(2);
        const auto& c = a["comparison"];
        EXPECT_EQ(c["last_good"]["commit"], "c7") << c.dump(2);
        EXPECT_EQ(c["last_good"]["run"], 8);
        EXPECT_NEAR(c["last_good"]["value"].get<double>(), 101e3, 1e-6);
        EXPECT_EQ(c["first_bad"]["commit"], "c8");
        EXPECT_NEAR(c["first_bad"]["value"].get<double>(), 125e3, 1e-6);
    }
    EXPECT_TRUE(linked) << opened->dump(2);
    const auto resolved = *find_message("resolved");
    EXPECT_EQ(resolved["labels"]["commit"], "c11");
    bool kernel = false;
    for (const auto& a : resolved["alerts"])
        kernel = kernel || (a["rule"] == "kernel-time-regression" && a["entity"]["name"] == "gemm");
    EXPECT_TRUE(kernel) << resolved.dump();
    EXPECT_EQ(resolved["title"], fmt::format("perfwatch: resolved: {} regressions in vision/main @ c11 on NVIDIA H100",
                                             resolved["alerts"].size()));
    // Exactly one resolved message for the episode.
    std::size_t resolved_messages = 0;
    for (const Received& r : receiver.received())
        resolved_messages += nlohmann::json::parse(r.body)["status"] == "resolved" ? 1 : 0;
    EXPECT_EQ(resolved_messages, 1u);
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(5), 0);
}

}  // namespace perfwatch
