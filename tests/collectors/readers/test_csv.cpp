#include <gtest/gtest.h>

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

TEST(Csv, UnterminatedQuoteIsAnErrorWithItsLine) {
    CsvReader r("ok,1\n\"broken,2\n", 10);
    std::vector<std::string> f;
    ASSERT_EQ(r.next(f), CsvReader::Status::record);
    EXPECT_EQ(r.next(f), CsvReader::Status::error);
    EXPECT_EQ(r.record_line(), 11u);
    EXPECT_NE(r.error().find("unterminated"), std::string::npos);
}

}  // namespace perfwatch
