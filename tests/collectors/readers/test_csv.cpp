#include <gtest/gtest.h>

#include <list>

#include "collectors/readers/csv.hpp"

namespace perfwatch {

TEST(Csv, QuotedFieldsEmbeddedSeparatorsAndRaggedRows) {
    CsvReader r("\"a\",\"b,c\",\"say \"\"hi\"\"\"\r\nplain,,\n\"multi\nline\",x\n");
    std::vector<std::string> f;
    ASSERT_EQ(r.next(f), CsvReader::Status::record);
    EXPECT_EQ(f, (std::vector<std::string>{"a", "b,c", "say \"hi\""}));
    ASSERT_EQ(r.next(f), CsvReader::Status::record);
    EXPECT_EQ(f, (std::vector<std::string>{"plain", "", ""}));
    ASSERT_EQ(r.next(f), CsvReader::Status::record);
    EXPECT_EQ(r.record_line(), 3u);
    EXPECT_EQ(f, (std::vector<std::string>{"multi\nline", "x"}));
    EXPECT_EQ(r.next(f), CsvReader::Status::end);
    EXPECT_EQ(r.line(), 5u);
}

// Views point into the text where a field is as written, and at a rewritten string where doubled
// quotes or text after the closing quote change it; the values equal the string reading's.
TEST(Csv, ViewsPointIntoTheTextUnlessAFieldIsRewritten) {
    const std::string text = "\"as is\",plain,\"say \"\"hi\"\"\",\"quoted\"tail,\"a\"\"\"\"b\"\n";
    CsvReader r(text);
    std::vector<std::string_view> views;
    std::list<std::string> rewritten;
    ASSERT_EQ(r.next(views, rewritten), CsvReader::Status::record);
    ASSERT_EQ(views.size(), 5u);
    EXPECT_EQ(views[0], "as is");
    EXPECT_EQ(views[1], "plain");
    EXPECT_EQ(views[2], "say \"hi\"");
    EXPECT_EQ(views[3], "quotedtail");
    EXPECT_EQ(views[4], "a\"\"b");
    const auto inside = [&](std::string_view v) { return v.data() >= text.data() && v.data() < text.data() + text.size(); };
    EXPECT_TRUE(inside(views[0]));
    EXPECT_TRUE(inside(views[1]));
    EXPECT_FALSE(inside(views[2]));
    EXPECT_FALSE(inside(views[3]));
    EXPECT_EQ(rewritten.size(), 3u);
    CsvReader again(text);
    std::vector<std::string> strings;
    ASSERT_EQ(again.next(strings), CsvReader::Status::record);
    EXPECT_EQ(strings, (std::vector<std::string>(views.begin(), views.end())));
}

TEST(Csv, UnterminatedQuoteIsAnErrorWithItsLine) {
    CsvReader r("ok,1\n\"broken,2\n", 10);
    std::vector<std::string> f;
    ASSERT_EQ(r.next(f), CsvReader::Status::record);
    EXPECT_EQ(r.next(f), CsvReader::Status::error);
    EXPECT_EQ(r.record_line(), 11u);
    EXPECT_NE(r.error().find("unterminated"), std::string::npos);
}

}  // namespace perfwatch
