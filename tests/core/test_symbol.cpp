#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/symbol.hpp"

using namespace perfwatch;

TEST(Symbol, EqualTextsShareOneInternedCopyAndCompareAsTheirText) {
    const std::string built = std::string("duration") + "_total";
    const Symbol a("duration_total"), b(built), c(std::string_view("duration_mean"));
    EXPECT_TRUE(a.interned());
    EXPECT_EQ(&a.str(), &b.str());  // one copy
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    EXPECT_EQ(a, "duration_total");
    EXPECT_EQ(a, built);
    EXPECT_EQ(std::string_view("duration_total"), a);
    EXPECT_LT(c, a);  // "duration_mean" < "duration_total", as the texts order
    EXPECT_GT(a, std::string("duration_max"));
    EXPECT_EQ(fmt::format("[{:>16}]", a), "[  duration_total]");
    EXPECT_EQ(a + "!", "duration_total!");

    const Symbol empty, also_empty("");
    EXPECT_TRUE(empty.empty());
    EXPECT_EQ(empty, also_empty);
    EXPECT_EQ(empty.str(), "");
    EXPECT_EQ(empty.size(), 0u);

    // A map keyed by strings finds a Symbol's text; a map keyed by Symbols orders them as texts.
    std::map<std::string, int, std::less<>> by_text{{"duration_total", 1}};
    EXPECT_EQ(by_text.find(a)->second, 1);
    std::map<Symbol, int> by_symbol{{Symbol("b"), 2}, {Symbol("a"), 1}};
    EXPECT_EQ(by_symbol.begin()->first, "a");
}

TEST(Symbol, ThreadsInterningTheSameTextsGetTheSameCopies) {
    constexpr std::size_t k_threads = 4, k_names = 5000;
    std::vector<std::vector<const std::string*>> seen(k_threads);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < k_threads; ++t)
        threads.emplace_back([t, &seen] {
            for (std::size_t i = 0; i < k_names; ++i) seen[t].push_back(&Symbol(fmt::format("thread_test_{}", i)).str());
        });
    for (auto& th : threads) th.join();
    for (std::size_t t = 1; t < k_threads; ++t) EXPECT_EQ(seen[t], seen[0]);
    for (std::size_t i = 0; i < k_names; ++i) EXPECT_EQ(*seen[0][i], fmt::format("thread_test_{}", i));
}

TEST(Symbol, PastItsBoundTheTableStopsGrowingAndNewTextsAreCountedCopies) {
    const Symbol before("interned_before_the_bound");
    // Distinct 1 MB texts fill the table to its bound.
    std::size_t i = 0;
    while (Symbol::interned_bytes() + (1u << 20) <= k_max_interned_bytes)
        (void)Symbol(std::string(1u << 20, 'a') + std::to_string(i++));
    const std::size_t full = Symbol::interned_bytes();
    ASSERT_LE(full, k_max_interned_bytes);

    const std::string big = std::string(2u << 20, 'b');
    Symbol x(big), y(big);
    EXPECT_FALSE(x.interned());
    EXPECT_EQ(Symbol::interned_bytes(), full);
    EXPECT_NE(&x.str(), &y.str());  // not shared: each construction is its own copy
    EXPECT_EQ(x, y);                // yet equal, as their texts are
    EXPECT_NE(x, before);
    EXPECT_EQ(x, big);
    {
        Symbol copy = x;  // shares x's copy, counted
        EXPECT_EQ(&copy.str(), &x.str());
        Symbol moved = std::move(copy);
        EXPECT_EQ(moved, big);
        x = y;            // x's first copy lives on in `moved`
        EXPECT_EQ(moved, x);
    }  // the first copy is freed here (LeakSanitizer would tell otherwise)
    EXPECT_EQ(x, big);
    // Texts interned before the bound are still found, not copied again.
    EXPECT_TRUE(Symbol("interned_before_the_bound").interned());
    EXPECT_EQ(&Symbol("interned_before_the_bound").str(), &before.str());
}
