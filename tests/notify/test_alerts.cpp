#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

#include "notify/alerts.hpp"
#include "notify/sinks.hpp"
#include "storage/db.hpp"
#include "tests/support.hpp"

namespace perfwatch {

namespace {

Finding finding(const std::string& rule, Severity severity, const std::string& kernel, double impact) {
    Finding f;
    f.rule = rule;
    f.title = fmt::format("Title of {}", rule);
    f.severity = severity;
    f.entity_name = kernel;
    f.message = "measured 42% of peak";
    f.metrics = {{"occupancy", 42}};
    f.impact = impact;
    return f;
}

StoredRun run_with(std::map<std::string, std::string> labels) {
    StoredRun run;
    run.id = 7;
    run.batch.source = "/srv/reports/r.csv";
    run.batch.labels = std::move(labels);
    return run;
}

Route tree() {
    Route root;
    root.receiver = "default";
    root.group_by = std::vector<std::string>{"project"};
    Route pager;
    pager.match = {{"severity", "error"}};
    pager.receiver = "pager";
    pager.continue_matching = true;
    Route chat;
    chat.match = {{"project", "llm*"}, {"severity", "warning"}};
    chat.receiver = "llm-chat";
    root.routes = {pager, chat};
    return root;
}

const AlertGroup* group_for(const std::vector<AlertGroup>& groups, const std::string& receiver) {
    for (const AlertGroup& g : groups)
        if (g.receiver == receiver) return &g;
    return nullptr;
}

}  // namespace

TEST(AlertRouting, FirstMatchingRouteUnlessContinueWithInheritedGrouping) {
    const StoredRun run = run_with({{"project", "llm-7b"}, {"branch", "main"}, {"commit", "abc"}, {"gpu", "NVIDIA H100"}});
    const std::vector<Finding> findings = {finding("low-occupancy", Severity::warning, "gemm", 5),
                                           finding("kernel-time-regression", Severity::error, "attn", 20),
                                           finding("hotspot-top-kernel", Severity::info, "gemm", 1)};
    const auto groups = group_alerts(tree(), run, findings, {});
    ASSERT_EQ(groups.size(), 3u);
    const AlertGroup* pager = group_for(groups, "pager");
    const AlertGroup* chat = group_for(groups, "llm-chat");
    const AlertGroup* fallback = group_for(groups, "default");
    ASSERT_TRUE(pager && chat && fallback);
    ASSERT_EQ(pager->alerts.size(), 1u);
    EXPECT_EQ(pager->alerts[0].rule, "kernel-time-regression");
    // `continue` on the pager route: the error also goes on to the chat route; worst first.
    ASSERT_EQ(chat->alerts.size(), 2u);
    EXPECT_EQ(chat->alerts[0].severity, Severity::error);
    EXPECT_EQ(chat->alerts[1].rule, "low-occupancy");
    ASSERT_EQ(fallback->alerts.size(), 1u);
    EXPECT_EQ(fallback->alerts[0].rule, "hotspot-top-kernel");
    // group_by inherited from the top route.
    EXPECT_EQ(chat->group_labels.at("project"), "llm-7b");
    EXPECT_EQ(chat->title(), "perfwatch: 2 findings (1 error, 1 warning) in llm-7b/main @ abc on NVIDIA H100");
    // One key per run, receiver, group and status; stable.
    EXPECT_EQ(chat->key(), group_alerts(tree(), run, findings, {})[1].key());
    EXPECT_NE(chat->key(), pager->key());
}

TEST(AlertRouting, LongGroupsKeepTheWorstAndCountTheRest) {
    std::vector<Finding> findings;
    for (int i = 0; i < 120; ++i) findings.push_back(finding("r", Severity::warning, fmt::format("k{}", i), i));
    Route root;
    root.receiver = "all";
    const auto groups = group_alerts(root, run_with({}), findings, {}, 50);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].alerts.size(), 50u);
    EXPECT_EQ(groups[0].omitted, 70u);
    EXPECT_EQ(groups[0].alerts[0].entity_name, "k119");
    EXPECT_EQ(groups[0].title(), "perfwatch: 120 findings (50 warnings) in run 7");
    const auto back = alert_group_from_json(to_json(groups[0]));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->alerts.size(), 50u);
    EXPECT_EQ(back->omitted, 70u);
    EXPECT_EQ(back->key(), groups[0].key());
}

TEST(AlertRouting, RepeatIntervalSuppressesTheSameAlert) {
    auto db = Db::open(":memory:");
    ASSERT_TRUE(db);
    Route root;
    root.receiver = "chat";
    root.repeat_interval = std::chrono::hours(4);
    RunBatch batch;
    batch.sha256 = "a";
    auto stored = db->store(batch);
    ASSERT_TRUE(stored);
    StoredRun run = run_with({{"project", "p"}});
    run.id = stored->run_id;
    const std::vector<Finding> findings = {finding("low-occupancy", Severity::warning, "gemm", 5)};
    const std::int64_t t0 = 1'800'000'000'000;
    auto first = outbox_messages(db->outbox(), group_alerts(root, run, findings, {}), t0);
    ASSERT_TRUE(first);
    ASSERT_EQ(first->size(), 1u);
    ASSERT_TRUE(db->complete_run(run.id, *first));
    // The same alert an hour later: suppressed; a new one in the same group still goes out alone.
    run.id += 1;
    auto again = outbox_messages(db->outbox(), group_alerts(root, run, findings, {}), t0 + 3600'000);
    ASSERT_TRUE(again);
    EXPECT_TRUE(again->empty());
    std::vector<Finding> more = findings;
    more.push_back(finding("tail-effect", Severity::warning, "gemm", 1));
    auto mixed = outbox_messages(db->outbox(), group_alerts(root, run, more, {}), t0 + 3600'000);
    ASSERT_TRUE(mixed);
    ASSERT_EQ(mixed->size(), 1u);
    const auto payload = nlohmann::json::parse((*mixed)[0].payload);
    ASSERT_EQ(payload["alerts"].size(), 1u);
    EXPECT_EQ(payload["alerts"][0]["rule"], "tail-effect");
    // After the interval it is sent again.
    auto later = outbox_messages(db->outbox(), group_alerts(root, run, findings, {}), t0 + 5 * 3600'000);
    ASSERT_TRUE(later);
    EXPECT_EQ(later->size(), 1u);
    // Enqueueing the same key twice keeps one message.
    ASSERT_TRUE(db->complete_run(run.id, *later));
    EXPECT_EQ(*db->complete_run(run.id, *later), 0u);
    EXPECT_EQ(*db->outbox().outbox_depth(), 2);
}

TEST(AlertRouting, ResolvedRegressionsMakeAResolvedMessage) {
    Route root;
    root.receiver = "chat";
    const auto groups = group_alerts(root, run_with({{"project", "p"}}), {},
                                     {{"kernel-time-regression", Severity::error, "kernel", "gemm", "back"}});
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].status, "resolved");
    EXPECT_EQ(groups[0].title(), "perfwatch: resolved: 1 regression in p");
}

TEST(AlertSinks, SlackEscapesKernelNamesAndKeepsATextFallback) {
    Route root;
    root.receiver = "slack";
    const auto groups = group_alerts(root, run_with({{"project", "p"}}),
                                     {finding("r", Severity::error, "void f<float, 4>(A&B)", 3)}, {});
    const auto doc = nlohmann::json::parse(slack_message(groups[0]));
    const std::string fallback = doc["text"];
    EXPECT_NE(fallback.find("void f&lt;float, 4&gt;(A&amp;B)"), std::string::npos) << fallback;
    EXPECT_EQ(doc["blocks"][0]["type"], "header");
    const std::string section = doc["blocks"][1]["text"]["text"];
    EXPECT_EQ(doc["blocks"][1]["text"]["type"], "mrkdwn");
    EXPECT_NE(section.find("`void f&lt;float, 4&gt;(A&amp;B)`"), std::string::npos) << section;
    EXPECT_EQ(section.find('<'), std::string::npos);
    EXPECT_EQ(slack_escape("a<b>&c"), "a&lt;b&gt;&amp;c");
}

TEST(AlertSinks, TeamsAdaptiveCardMattermostAndEmailBodies) {
    Route root;
    root.receiver = "r";
    const auto g = group_alerts(root, run_with({{"project", "p"}, {"gpu", "A100"}}),
                                {finding("r", Severity::warning, "k<T>", 3)}, {})[0];
    const auto teams = nlohmann::json::parse(teams_message(g));
    EXPECT_EQ(teams["type"], "message");
    EXPECT_EQ(teams["attachments"][0]["contentType"], "application/vnd.microsoft.card.adaptive");
    const auto& card = teams["attachments"][0]["content"];
    EXPECT_EQ(card["type"], "AdaptiveCard");
    EXPECT_EQ(card["body"][0]["text"], g.title());
    EXPECT_EQ(card["body"][1]["type"], "FactSet");
    const auto mm = nlohmann::json::parse(mattermost_message(g));
    EXPECT_NE(mm["text"].get<std::string>().find("`k<T>`"), std::string::npos);
    EXPECT_NE(email_html(g).find("<code>k&lt;T&gt;</code>"), std::string::npos);
    EXPECT_NE(email_text(g).find("[warning] Title of r: kernel 'k<T>'"), std::string::npos) << email_text(g);
    // With a published HTML report, every message links to it.
    AlertGroup linked = g;
    linked.report_url = "https://perfwatch.example/reports/run-7.html";
    EXPECT_NE(slack_message(linked).find("<https://perfwatch.example/reports/run-7.html|HTML report>"), std::string::npos);
    EXPECT_EQ(nlohmann::json::parse(teams_message(linked))["attachments"][0]["content"]["actions"][0]["url"],
              linked.report_url);
    EXPECT_NE(mattermost_message(linked).find("[HTML report](https://perfwatch.example/reports/run-7.html)"),
              std::string::npos);
    EXPECT_NE(email_html(linked).find("<a href=\"https://perfwatch.example/reports/run-7.html\">"), std::string::npos);
    // With dashboard.commit_url, every message links to the run's commit.
    linked.commit_url = "https://git.example/app/commit/abc%7C123";
    EXPECT_NE(slack_message(linked).find("<https://git.example/app/commit/abc%7C123|commit>"), std::string::npos);
    EXPECT_EQ(nlohmann::json::parse(teams_message(linked))["attachments"][0]["content"]["actions"][1]["url"], linked.commit_url);
    EXPECT_NE(mattermost_message(linked).find("[commit](https://git.example/app/commit/abc%7C123)"), std::string::npos);
    EXPECT_NE(email_html(linked).find("<a href=\"https://git.example/app/commit/abc%7C123\">Commit</a>"), std::string::npos);
    EXPECT_NE(email_text(linked).find("Commit: https://git.example/app/commit/abc%7C123\n"), std::string::npos);
    EXPECT_EQ(alert_group_from_json(to_json(linked))->commit_url, linked.commit_url);
    EXPECT_NE(email_text(linked).find("Report: https://perfwatch.example/reports/run-7.html"), std::string::npos);
    const auto hook = nlohmann::json::parse(webhook_message(g, "key-1"));
    EXPECT_EQ(hook["key"], "key-1");
    EXPECT_EQ(hook["alerts"][0]["metrics"]["occupancy"], 42);
    ASSERT_EQ(sinks().size(), receiver_types().size());
    for (std::size_t i = 0; i < sinks().size(); ++i) EXPECT_EQ(sinks()[i]->type(), receiver_types()[i]);
}

TEST(AlertSinks, RetryDelayIsExponentialWithJitterAndHonoursRetryAfter) {
    std::mt19937_64 rng(1);
    for (int i = 0; i < 100; ++i) {
        const auto first = retry_delay(1, std::nullopt, rng).count();
        EXPECT_GE(first, 1000);
        EXPECT_LE(first, 2000);
        const auto third = retry_delay(3, std::nullopt, rng).count();
        EXPECT_GE(third, 4000);
        EXPECT_LE(third, 8000);
        EXPECT_LE(retry_delay(30, std::nullopt, rng).count(), 600000);
    }
    EXPECT_EQ(retry_delay(2, std::chrono::seconds(7), rng).count(), 7000);
}

// A regression on a kernel mutes the lesser findings on that kernel, and only those; an alert
// never inhibits itself.
TEST(AlertRouting, InhibitRulesMuteLesserFindingsOnTheSameEntity) {
    Route root;
    root.receiver = "r";
    Finding regression = finding("kernel-time-regression", Severity::error, "k", 5);
    Finding hot_k = finding("hotspot-top-kernel", Severity::info, "k", 4);
    Finding hot_j = finding("hotspot-top-kernel", Severity::info, "j", 3);
    InhibitRule rule;
    rule.source_match = {{"rule", "*-regression"}};
    rule.target_match = {{"rule", "hotspot-*"}};
    rule.equal = {"entity"};
    std::size_t inhibited = 0;
    const auto groups = group_alerts(root, run_with({{"project", "p"}}), {regression, hot_k, hot_j}, {}, 50, {},
                                     nullptr, {rule}, &inhibited);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(inhibited, 1u);
    std::vector<std::pair<std::string, std::string>> sent;
    for (const AlertItem& a : groups[0].alerts) sent.emplace_back(a.rule, a.entity_name);
    EXPECT_EQ(sent, (std::vector<std::pair<std::string, std::string>>{{"kernel-time-regression", "k"},
                                                                        {"hotspot-top-kernel", "j"}}));

    InhibitRule self;
    self.source_match = {{"rule", "hotspot-*"}};
    self.target_match = {{"rule", "hotspot-*"}};
    self.equal = {"entity"};
    inhibited = 0;
    const auto alone = group_alerts(root, run_with({}), {hot_k}, {}, 50, {}, nullptr, {self}, &inhibited);
    ASSERT_EQ(alone.size(), 1u);
    EXPECT_EQ(alone[0].alerts.size(), 1u);
    EXPECT_EQ(inhibited, 0u);
}

// libcurl sends a mail without authenticating when the server offers no AUTH. A receiver with
// credentials sends nothing there and says why; told to allow it, the same mail goes out.
TEST(AlertSinks, EmailWithCredentialsIsNotSentWhereTheServerOffersNoAuth) {
    if (test::run_program({"/usr/bin/python3", "-c", "import aiosmtpd"}).exit_code != 0)
        GTEST_SKIP() << "python3-aiosmtpd is not installed (scripts/deps.sh installs it)";
    test::TempDir dir;
    const std::filesystem::path mail = dir.path() / "mail";
    std::filesystem::create_directories(mail);
    unsigned short port = 0;
    {
        boost::asio::io_context io;
        boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
        port = a.local_endpoint().port();
    }
    test::BackgroundProcess smtp({std::string(PERFWATCH_SOURCE_DIR) + "/tests/app/smtp_peer.py", std::to_string(port),
                                  mail.string(), "--plain"},
                                 dir.file("smtp.log"), {}, "/usr/bin/python3");
    ASSERT_TRUE(smtp.wait_for_log("ready", 30)) << smtp.log();
    Receiver r;
    r.name = "mail";
    r.type = "email";
    r.url = fmt::format("smtp://127.0.0.1:{}", port);
    r.from = "perfwatch@ci.example";
    r.to = {"gpu-team@example.com"};
    r.username = "perfwatch";
    r.password = "pw-never-sent-31";
    r.starttls = false;
    Route root;
    root.receiver = "mail";
    const AlertGroup g = group_alerts(root, run_with({{"project", "p"}}), {finding("r", Severity::error, "k", 3)}, {})[0];
    const Sink* sink = find_sink("email");
    ASSERT_NE(sink, nullptr);
    const Delivery refused = sink->deliver(r, g, "key-1");
    EXPECT_EQ(refused.outcome, Delivery::Outcome::permanent);
    EXPECT_NE(refused.error.find("offered no authentication"), std::string::npos) << refused.error;
    EXPECT_EQ(refused.error.find(r.password), std::string::npos);

    // The peer numbers mails in arrival order: once the allowed mail is there, it must be the
    // first and only one (no timed wait for the refused one).
    r.allow_unauthenticated = true;
    const Delivery sent = sink->deliver(r, g, "key-2");
    EXPECT_EQ(sent.outcome, Delivery::Outcome::sent) << sent.error;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!std::filesystem::exists(mail / "0000.eml") && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(std::filesystem::exists(mail / "0000.eml"));
    EXPECT_NE(test::read_file((mail / "0000.eml").string()).find("key-2"), std::string::npos)
        << "the first mail to arrive is not the allowed one: a mail went out without authentication";
    EXPECT_FALSE(std::filesystem::exists(mail / "0001.eml"));
    smtp.signal(SIGTERM);
    smtp.wait_exit(5);
}

}  // namespace perfwatch
