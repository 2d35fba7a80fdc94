#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "core/model.hpp"

using namespace perfwatch;

static_assert(sizeof(Metric) == 16, "a metric is its interned key and its value");

TEST(MetricKey, EqualNamesShareOneKey) {
    const MetricKey a("duration", "ns", "Duration", "us"), b(std::string("duration"), "ns", "Duration", "us");
    const MetricKey other_unit("duration", "ns", "Duration", "ms");
    EXPECT_TRUE(a.interned());
    EXPECT_EQ(a.identity(), b.identity());  // one copy
    EXPECT_EQ(a, b);
    EXPECT_NE(a, other_unit);
    EXPECT_EQ(a.name(), "duration");
    EXPECT_EQ(a.unit(), "ns");
    EXPECT_EQ(a.tool_name(), "Duration");
    EXPECT_EQ(a.tool_unit(), "us");
    EXPECT_EQ(other_unit.tool_unit(), "ms");

    const MetricKey none, also_none("", "", "", "");
    EXPECT_EQ(none.identity(), 0u);
    EXPECT_EQ(none, also_none);
    EXPECT_TRUE(none.name().empty());
    EXPECT_TRUE(none.tool_unit().empty());

    const Metric m{"duration", 5.0, "ns", "Duration", "us"};
    EXPECT_EQ(m.key, a);
    EXPECT_EQ(m.name(), "duration");
    EXPECT_EQ(m.tool_unit(), "us");
    EXPECT_EQ(m.value, 5.0);
    EXPECT_EQ(Metric(a, 2.0).name(), "duration");
}

TEST(MetricKey, PastItsBoundNewKeysAreCountedAndFreedWithTheirCopies) {
    const MetricKey before("interned_before_the_bound", "count");
    // 512 x 512 keys of 1,024 interned names fill the table (unless an earlier test of this process
    // filled Symbol's table: then the names are counted, and so would the keys be).
    std::vector<Symbol> names;
    for (std::size_t i = 0; i < 512; ++i) {
        names.emplace_back(fmt::format("bound_test_{}", i));
        names.emplace_back(fmt::format("bound_tool_{}", i));
        if (!names.back().interned()) GTEST_SKIP() << "Symbol's table was filled by an earlier test in this process";
    }
    for (std::size_t i = 0; i < 512 && MetricKey::interned_count() < k_max_metric_keys; ++i)
        for (std::size_t j = 0; j < 512 && MetricKey::interned_count() < k_max_metric_keys; ++j)
            (void)MetricKey(names[2 * i], "count", names[2 * j + 1]);
    const std::size_t full = MetricKey::interned_count();
    EXPECT_EQ(full, k_max_metric_keys);

    MetricKey x("past_the_bound", "ns"), y("past_the_bound", "ns");
    EXPECT_FALSE(x.interned());
    EXPECT_EQ(MetricKey::interned_count(), full);
    EXPECT_NE(x.identity(), y.identity());  // each construction is its own copy
    EXPECT_EQ(x, y);                        // yet equal, as their names are
    EXPECT_NE(x, MetricKey("past_the_bound", "byte"));
    EXPECT_EQ(x.name(), "past_the_bound");
    {
        MetricKey copy = x;  // shares x's copy, counted
        EXPECT_EQ(copy.identity(), x.identity());
        Metric moved(std::move(copy), 1.0);
        x = y;  // x's first copy lives on in `moved`
        EXPECT_EQ(moved.key, x);
        EXPECT_EQ(moved.unit(), "ns");
    }  // the first copy is freed here (LeakSanitizer would tell otherwise)
    // Keys interned before the bound are still found, not copied again.
    EXPECT_EQ(MetricKey("interned_before_the_bound", "count").identity(), before.identity());
}

TEST(MetricKey, ACountedNameMakesACountedKey) {
    const MetricKey known("duration", "ns");
    // Distinct 1 MB texts fill Symbol's table; a name past it is counted, and so is its key.
    for (std::size_t i = 0; Symbol::interned_bytes() + (1u << 20) <= k_max_interned_bytes; ++i)
        (void)Symbol(std::string(1u << 20, 'k') + std::to_string(i));
    const std::string big(2u << 20, 'n');
    const std::size_t keys = MetricKey::interned_count();
    const MetricKey a(big, "ns"), b(big, "ns");
    EXPECT_FALSE(a.name().interned());
    EXPECT_FALSE(a.interned());
    EXPECT_EQ(MetricKey::interned_count(), keys);
    EXPECT_EQ(a, b);
    EXPECT_EQ(a.name(), big);
    // Known names still find their key (unless an earlier test of this process filled the keys' table).
    EXPECT_EQ(MetricKey("duration", "ns"), known);
    if (known.interned()) {
        EXPECT_EQ(MetricKey("duration", "ns").identity(), known.identity());
    }
}
