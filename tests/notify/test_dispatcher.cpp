#include <gtest/gtest.h>

#include "notify/dispatcher.hpp"
#include "storage/db.hpp"
#include "tests/support.hpp"

namespace perfwatch {

namespace {

// A database with one stored run and `messages` pending messages for the given receivers.
std::int64_t enqueue(Db& db, const std::vector<std::string>& receivers) {
    RunBatch b;
    b.source = "r.json";
    b.format = "generated";
    b.sha256 = "run";
    b.run_entity();
    auto stored = db.store(b);
    EXPECT_TRUE(stored);
    std::vector<OutboxMessage> messages;
    for (std::size_t i = 0; i < receivers.size(); ++i) {
        AlertGroup g;
        g.receiver = receivers[i];
        g.run_id = stored->run_id;
        g.alerts.push_back({"rule", "title", Severity::warning, "kernel", "gemm", "slow", {}, std::nullopt, "", {}, {}});
        OutboxMessage m;
        m.key = "key-" + std::to_string(i);
        m.receiver = receivers[i];
        m.run_id = stored->run_id;
        m.payload = to_json(g);
        m.next_attempt_ms = 1000 + static_cast<std::int64_t>(i);
        m.created_ms = 1000;
        messages.push_back(std::move(m));
    }
    EXPECT_TRUE(db.complete_run(stored->run_id, messages));
    return stored->run_id;
}

Receiver receiver(const std::string& name, int rate_limit_ms = 0, int max_attempts = 3) {
    Receiver r;
    r.name = name;
    r.type = "webhook";
    r.rate_limit = std::chrono::milliseconds(rate_limit_ms);
    r.max_attempts = max_attempts;
    return r;
}

}  // namespace

// One message per receiver in flight; a receiver that is gone fails its message; the next message
// of a receiver goes after the first's outcome and its rate limit.
TEST(Dispatcher, OneMessagePerReceiverAtATimeWithinItsRateLimit) {
    test::TempDir dir;
    auto db = Db::open(dir.file("d.db"));
    ASSERT_TRUE(db);
    enqueue(*db, {"team", "team", "gone", "ops"});
    Dispatcher dispatcher(db->outbox(), "host:a.yaml");
    const std::vector<Receiver> receivers{receiver("team", 500), receiver("ops")};
    auto plan = dispatcher.plan(receivers, std::chrono::seconds(60), 2000);
    ASSERT_FALSE(plan.error);
    ASSERT_EQ(plan.sends.size(), 2u);
    EXPECT_EQ(plan.sends[0].message.key, "key-0");
    EXPECT_EQ(plan.sends[1].message.key, "key-3");
    ASSERT_EQ(plan.given_up.size(), 1u);
    EXPECT_EQ(plan.given_up[0].why, "receiver 'gone' is no longer configured");
    EXPECT_EQ(dispatcher.in_flight(), 2u);

    // Nothing more while team's send is in flight.
    EXPECT_TRUE(dispatcher.plan(receivers, std::chrono::seconds(60), 2100).sends.empty());
    auto recorded = dispatcher.record(plan.sends[0], Delivery{}, 2100);
    ASSERT_TRUE(recorded);
    EXPECT_EQ(recorded->recorded, Dispatcher::Recorded::sent);
    // team's rate limit (500 ms from 2000) holds its second message until 2500.
    auto held = dispatcher.plan(receivers, std::chrono::seconds(60), 2200);
    EXPECT_TRUE(held.sends.empty());
    EXPECT_EQ(held.wake_ms, 2500);
    auto next = dispatcher.plan(receivers, std::chrono::seconds(60), 2500);
    ASSERT_EQ(next.sends.size(), 1u);
    EXPECT_EQ(next.sends[0].message.key, "key-1");

    // A retried attempt waits; the last attempt fails for good.
    auto retry = dispatcher.record(next.sends[0], Delivery{Delivery::Outcome::retry, 503, std::chrono::seconds(7), "503"}, 2600);
    ASSERT_TRUE(retry);
    EXPECT_EQ(retry->recorded, Dispatcher::Recorded::retry);
    EXPECT_EQ(retry->retry_in, std::chrono::seconds(7));
    auto states = db->outbox().newest(10);
    ASSERT_TRUE(states);
    std::map<std::string, MessageState> by_key;
    for (const auto& m : *states) by_key[m.key] = m.state;
    EXPECT_EQ(by_key["key-0"], MessageState::sent);
    EXPECT_EQ(by_key["key-1"], MessageState::pending);
    EXPECT_EQ(by_key["key-2"], MessageState::failed);
}

// A message another daemon has claimed is not sent here until that claim's lease lapses.
TEST(Dispatcher, AMessageClaimedByAnotherDaemonWaitsForItsLease) {
    test::TempDir dir;
    auto db = Db::open(dir.file("d.db"));
    ASSERT_TRUE(db);
    enqueue(*db, {"team"});
    Dispatcher first(db->outbox(), "host-a:perfwatch.yaml"), second(db->outbox(), "host-b:perfwatch.yaml");
    const std::vector<Receiver> receivers{receiver("team")};
    ASSERT_EQ(first.plan(receivers, std::chrono::seconds(10), 2000).sends.size(), 1u);
    // host-a dies with the message claimed until 12000.
    auto during = second.plan(receivers, std::chrono::seconds(10), 5000);
    EXPECT_TRUE(during.sends.empty());
    EXPECT_EQ(during.wake_ms, 12000);
    auto after = second.plan(receivers, std::chrono::seconds(10), 12000);
    ASSERT_EQ(after.sends.size(), 1u);
    EXPECT_EQ(after.sends[0].message.key, "key-0");
}

}  // namespace perfwatch
