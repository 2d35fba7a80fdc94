#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "collectors/readers/span_set.hpp"
#include "collectors/readers/timeline.hpp"

namespace perfwatch::test {

namespace {

// The test's own union: sort, merge, in memory.
std::vector<Span> merged(std::vector<Span> spans) {
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
    std::vector<Span> out;
    for (const Span& s : spans) {
        if (!out.empty() && s.start <= out.back().end) out.back().end = std::max(out.back().end, s.end);
        else out.push_back(s);
    }
    return out;
}

std::vector<Span> random_spans(std::mt19937_64& rng, std::size_t n, double horizon) {
    std::uniform_real_distribution<double> at(0, horizon), length(0, horizon / static_cast<double>(n) * 3);
    std::vector<Span> spans;
    for (std::size_t i = 0; i < n; ++i) {
        const double s = at(rng);
        spans.push_back({s, s + length(rng)});
    }
    return spans;
}

}  // namespace

// Past its buffer a SpanSet spills sorted runs to a temporary file; the union it reads back is
// the one computed here in memory, interval by interval.
TEST(SpanSet, SpilledRunsMergeToTheExactUnion) {
    std::mt19937_64 rng(7);
    const auto spans = random_spans(rng, 20000, 1e6);
    SpanSet set(64);
    for (const Span& s : spans) set.add(s.start, s.end);
    EXPECT_GT(set.spilled_runs(), 10u);
    const auto expected = merged(spans);
    auto reader = set.merged();
    std::size_t i = 0;
    while (auto got = reader.next()) {
        ASSERT_LT(i, expected.size());
        EXPECT_EQ(got->start, expected[i].start) << i;
        EXPECT_EQ(got->end, expected[i].end) << i;
        ++i;
    }
    EXPECT_EQ(i, expected.size());
}

TEST(SpanSet, UnionStatsAndOverlapMatchABruteForceWalk) {
    std::mt19937_64 rng(11);
    const auto a = random_spans(rng, 3000, 1e5), b = random_spans(rng, 3000, 1e5);
    const auto ma = merged(a), mb = merged(b);
    double length = 0, gap = 0, both = 0;
    for (std::size_t i = 0; i < ma.size(); ++i) {
        length += ma[i].end - ma[i].start;
        if (i > 0) gap = std::max(gap, ma[i].start - ma[i - 1].end);
        for (const Span& y : mb) both += std::max(0.0, std::min(ma[i].end, y.end) - std::max(ma[i].start, y.start));
    }
    SpanSet sa(100), sa2(100), sb(100);
    for (const Span& s : a) {
        sa.add(s.start, s.end);
        sa2.add(s.start, s.end);
    }
    for (const Span& s : b) sb.add(s.start, s.end);
    const UnionStats u = union_stats(sa);
    EXPECT_NEAR(u.length, length, 1e-6 * length);
    EXPECT_DOUBLE_EQ(u.longest_gap, gap);
    EXPECT_DOUBLE_EQ(u.first, ma.front().start);
    EXPECT_DOUBLE_EQ(u.last, ma.back().end);
    const Overlap o = overlap(sa2, sb);
    EXPECT_NEAR(o.a_length, length, 1e-6 * length);
    EXPECT_NEAR(o.both, both, 1e-6 * both);
}

// Past max_kept_durations a timeline stops keeping every duration: count, total, min, max and
// the spread stay exact, the median is estimated from a uniform sample, and a note says so.
TEST(Timeline, PastTheDurationLimitMediansAreSampledWithANote) {
    for (const std::size_t limit : {std::size_t{100000}, std::size_t{300}}) {
        TimelineOptions options{false, true, limit};
        TimelineBuilder builder(options);
        for (int i = 1; i <= 5001; ++i) {
            const double d = static_cast<double>((i * 7919) % 5001 + 1);  // 1..5001, shuffled
            builder.add(TimelineEvent::Kind::kernel, "k", "device 0", i * 10000.0, i * 10000.0 + d);
        }
        RunBatch batch;
        builder.finish(batch);
        const auto k = std::find_if(batch.entities.begin(), batch.entities.end(),
                                    [](const Entity& e) { return e.kind == EntityKind::kernel; });
        ASSERT_NE(k, batch.entities.end());
        EXPECT_EQ(k->value("launches").value_or(-1), 5001);
        EXPECT_EQ(k->value("duration_total").value_or(-1), 5001.0 * 5002 / 2);
        EXPECT_EQ(k->value("duration_min").value_or(-1), 1);
        EXPECT_EQ(k->value("duration_max").value_or(-1), 5001);
        const double median = k->value("duration_median").value_or(-1);
        const bool sampled = limit < 5001;
        if (sampled) {
            EXPECT_NEAR(median, 2501, 400) << "a 512-sample median of 1..5001";
            ASSERT_EQ(batch.notes.size(), 1u);
            EXPECT_NE(batch.notes[0].find("estimated from a uniform sample"), std::string::npos);
        } else {
            EXPECT_EQ(median, 2501);
            EXPECT_TRUE(batch.notes.empty());
        }
    }
}

// Events added through a group found once (group_index) make the same entities as events added
// by name: names on one device and on two, copies on no device, launches kept up to their limit.
TEST(Timeline, EventsAddedByGroupMakeTheSameEntitiesAsByName) {
    struct Event {
        TimelineEvent::Kind kind;
        std::string name, device;
        double start, end;
    };
    std::vector<Event> events;
    for (int i = 0; i < 3000; ++i) {
        const double start = i * 1000.0 + (i % 7) * 100.0;
        events.push_back({TimelineEvent::Kind::kernel, "k" + std::to_string(i % 5), i % 5 == 4 ? "device " + std::to_string(i % 2) : "device 0",
                          start, start + 50.0 + (i % 13) * 90.0});
        if (i % 3 == 0) events.push_back({TimelineEvent::Kind::memory, "copy", i % 2 == 0 ? "" : "device 1", start, start + 400.0});
    }
    TimelineOptions options;
    options.max_launch_entities = 2500;
    TimelineBuilder by_name(options), by_group(options);
    std::map<std::pair<int, std::string>, std::size_t> groups;
    for (const Event& e : events) {
        by_name.add(e.kind, e.name, e.device, e.start, e.end);
        const auto key = std::pair{static_cast<int>(e.kind), e.name};
        if (!groups.contains(key)) groups[key] = by_group.group_index(e.kind, e.name, e.device);
        by_group.add(groups.at(key), e.device, e.start, e.end);
    }
    RunBatch a, b;
    by_name.finish(a);
    by_group.finish(b);
    ASSERT_EQ(a.entities.size(), b.entities.size());
    EXPECT_GT(a.entities.size(), 2500u);
    for (std::size_t i = 0; i < a.entities.size(); ++i) {
        const Entity &x = a.entities[i], &y = b.entities[i];
        ASSERT_EQ(x.kind, y.kind) << i;
        ASSERT_EQ(x.name, y.name) << i;
        EXPECT_EQ(x.parent, y.parent) << x.name;
        EXPECT_EQ(x.attributes, y.attributes) << x.name;
        ASSERT_EQ(x.metrics.size(), y.metrics.size()) << x.name;
        for (std::size_t m = 0; m < x.metrics.size(); ++m) {
            EXPECT_EQ(x.metrics[m].name(), y.metrics[m].name()) << x.name;
            EXPECT_EQ(x.metrics[m].value, y.metrics[m].value) << x.name << " " << x.metrics[m].name();
        }
    }
    EXPECT_EQ(a.notes, b.notes);
    EXPECT_EQ(by_name.kernel_events(), by_group.kernel_events());
}

}  // namespace perfwatch::test
