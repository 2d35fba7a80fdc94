#include <gtest/gtest.h>

#include "app/quiet_queue.hpp"
#include "tests/support.hpp"

namespace perfwatch {

using namespace std::chrono_literals;

// A file is ready once unchanged for the quiet period; a write or a change starts the wait again;
// a busy file waits; a vanished one is forgotten.
TEST(QuietQueue, ReadyOnlyWhenUnchangedForTheQuietPeriod) {
    test::TempDir dir;
    const std::string a = dir.file("a.json"), b = dir.file("b.json");
    test::write_file(a, "one");
    test::write_file(b, "two");
    QuietQueue q;
    const auto t0 = QuietQueue::Clock::now();
    q.wait(a, 0, t0 + 1s, t0, *stat_file(a));
    q.wait(b, 1, t0 + 1s, t0, *stat_file(b));
    EXPECT_TRUE(q.take_ready(t0 + 500ms, 1s, {}).empty());
    EXPECT_EQ(q.next_deadline(), t0 + 1s);
    // a is written again (an event), b changed on disk without one.
    EXPECT_TRUE(q.written(a, t0 + 800ms, 1s));
    test::write_file(b, "two, longer");
    EXPECT_TRUE(q.take_ready(t0 + 1s, 1s, {}).empty());  // b changed: waits again from 1 s
    EXPECT_EQ(q.size(), 2u);
    // At 1.8 s a's wait is over; b is busy (being read) and waits on.
    auto ready = q.take_ready(t0 + 1800ms, 1s, {});
    ASSERT_EQ(ready.size(), 1u);
    EXPECT_EQ(ready[0].path, a);
    EXPECT_EQ(ready[0].since, t0 + 800ms);
    EXPECT_TRUE(q.take_ready(t0 + 2s, 1s, {b}).empty());
    ready = q.take_ready(t0 + 3s, 1s, {});
    ASSERT_EQ(ready.size(), 1u);
    EXPECT_EQ(ready[0].watch, 1u);
    // A file removed while waiting is forgotten.
    q.wait(a, 0, t0 + 4s, t0 + 3s, *stat_file(a));
    std::filesystem::remove(a);
    EXPECT_TRUE(q.take_ready(t0 + 5s, 1s, {}).empty());
    EXPECT_EQ(q.size(), 0u);
    EXPECT_FALSE(q.next_deadline());
    EXPECT_FALSE(q.written(a, t0, 1s));
    EXPECT_FALSE(stat_file(dir.path().string()));  // a directory is no report
}

}  // namespace perfwatch
