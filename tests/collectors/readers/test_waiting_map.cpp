#include <gtest/gtest.h>

#include <deque>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "collectors/readers/waiting_map.hpp"

namespace perfwatch::test {

// The test's own model of the contract: a map, and the order of puts for dropping the oldest.
TEST(WaitingMap, TakesWhatWasPutAndDropsTheOldestPastItsLimitAsAPlainMapWould) {
    for (const std::uint64_t seed : {1u, 2u, 3u}) {
        std::mt19937_64 rng(seed);
        constexpr std::size_t k_limit = 300;
        WaitingMap<std::int64_t> map(k_limit);
        std::map<std::int64_t, std::int64_t> model;
        std::deque<std::int64_t> order;
        // Sequential IDs with gaps (correlation IDs), then IDs drawn again and again from 2,000
        // random ones (puts over waiting IDs, takes of missing ones).
        std::vector<std::int64_t> pool(2000);
        for (auto& id : pool) id = static_cast<std::int64_t>(rng() >> 24);
        std::int64_t next_id = 0;
        std::size_t taken = 0, dropped_seen = 0;
        for (int step = 0; step < 200000; ++step) {
            const bool sequential = step < 100000;
            const std::int64_t id = sequential ? next_id += static_cast<std::int64_t>(rng() % 3) : pool[rng() % pool.size()];
            if (rng() % 2 == 0) {
                const std::int64_t value = static_cast<std::int64_t>(rng());
                map.put(id, value);
                model[id] = value;
                order.push_back(id);
                while (model.size() > k_limit || order.size() > 2 * k_limit) {
                    dropped_seen += model.erase(order.front());
                    order.pop_front();
                }
            } else {
                const std::int64_t probe = sequential ? id - static_cast<std::int64_t>(rng() % 4) : pool[rng() % pool.size()];
                const auto got = map.take(probe);
                const auto want = model.find(probe);
                ASSERT_EQ(got.has_value(), want != model.end()) << "seed " << seed << " step " << step << " id " << probe;
                if (got) {
                    EXPECT_EQ(*got, want->second);
                    model.erase(want);
                    ++taken;
                }
            }
        }
        // Every entry still waiting is found exactly once, then none.
        for (const auto& [id, value] : model) {
            const auto got = map.take(id);
            ASSERT_TRUE(got) << "id " << id;
            EXPECT_EQ(*got, value);
            EXPECT_FALSE(map.take(id));
        }
        // The ID that marks an empty slot is never kept.
        map.put(std::numeric_limits<std::int64_t>::min(), 1);
        EXPECT_FALSE(map.take(std::numeric_limits<std::int64_t>::min()));
        EXPECT_GT(taken, 10000u);
        EXPECT_GT(dropped_seen, 100u);  // the limit was exercised
    }
}

// An entry 127 slots past its home (the farthest kept), behind 126 entries at their own homes:
// when its home empties, the walk back from the hole reaches it and moves it home, so it is still
// found. (IDs below 2^17 have themselves as home, modulo the table's 256 slots.)
TEST(WaitingMap, AnEntryTheFarthestFromItsHomeMovesBackWhenItsHomeEmpties) {
    WaitingMap<std::int64_t> map(1000);
    for (std::int64_t id = 0; id <= 126; ++id) map.put(id, id);
    map.put(1024, 1024);  // home 0: slots 0 to 126 are taken, so it lies in slot 127
    ASSERT_EQ(map.take(0), 0);
    EXPECT_EQ(map.take(1024), 1024);
    for (std::int64_t id = 1; id <= 126; ++id) EXPECT_EQ(map.take(id), id) << id;
    // Home 0 for 129 IDs: the one past the farthest slot is dropped, never kept out of reach.
    for (std::int64_t id = 0; id <= 127; ++id) map.put(id * 256, id);
    map.put(128 * 256, 128);
    EXPECT_FALSE(map.take(128 * 256));
    for (std::int64_t id = 0; id <= 127; ++id) EXPECT_EQ(map.take(id * 256), id) << id;
}

}  // namespace perfwatch::test
