#include <gtest/gtest.h>

#include <string>

#include "web/query.hpp"

namespace perfwatch::web {

TEST(WebQuery, DecodesPercentAndPlusAndKeepsOrder) {
    auto q = Query::parse("key=benchmark%3Dbert%3Bgpu%3DNVIDIA+H100&label=a%3Db&label=c%3Dd&page=2&empty=");
    ASSERT_TRUE(q) << q.error().message;
    EXPECT_EQ(q->get("key"), "benchmark=bert;gpu=NVIDIA H100");
    EXPECT_EQ(q->all("label"), (std::vector<std::string>{"a=b", "c=d"}));
    EXPECT_EQ(q->id("page"), 2);
    EXPECT_TRUE(q->has("empty"));
    EXPECT_EQ(q->get("missing"), "");
    EXPECT_FALSE(q->id("key"));
}

TEST(WebQuery, RefusesMalformedOverlongAndTooManyParameters) {
    EXPECT_FALSE(Query::parse("a=%G1"));
    EXPECT_FALSE(Query::parse("a=%4"));
    EXPECT_FALSE(Query::parse("a=%FF%FE"));  // not UTF-8 once decoded
    EXPECT_FALSE(Query::parse("a=" + std::string(Query::k_max_value + 1, 'x')));
    std::string many;
    for (std::size_t i = 0; i <= Query::k_max_params; ++i) many += "a=1&";
    EXPECT_FALSE(Query::parse(many));
    for (const char* bad : {"page=0", "page=-3", "page=2x", "page=99999999999999999999"}) {
        auto q = Query::parse(bad);
        ASSERT_TRUE(q);
        EXPECT_FALSE(q->id("page")) << bad;
    }
}

TEST(WebQuery, MadeUrlsDecodeToWhatWasEncoded) {
    const std::string hostile = "<script>alert(1)</script> @channel&x=y;z=%";
    const std::string url = make_url("/series", {{"key", hostile}, {"entity", ""}, {"metric", "duration"}});
    EXPECT_EQ(url.find_first_of("<> &;"), url.find('&'));  // the only '&' separates parameters
    auto q = Query::parse(url.substr(url.find('?') + 1));
    ASSERT_TRUE(q);
    EXPECT_EQ(q->get("key"), hostile);
    EXPECT_FALSE(q->has("entity"));
    EXPECT_EQ(q->get("metric"), "duration");
}

// A commit from a report's labels fills dashboard.commit_url's {commit} percent-encoded: it can
// end neither the URL nor a Markdown or Slack link.
TEST(WebQuery, CommitLinksEncodeTheCommit) {
    EXPECT_EQ(commit_link("https://git.example/o/r/commit/{commit}?x=1", "abc123"), "https://git.example/o/r/commit/abc123?x=1");
    EXPECT_EQ(commit_link("https://git.example/c/{commit}", "a)|b> c"), "https://git.example/c/a%29%7Cb%3E%20c");
    EXPECT_EQ(commit_link("https://git.example/c/{commit}", ""), "");
    EXPECT_EQ(commit_link("", "abc"), "");
}

}  // namespace perfwatch::web
