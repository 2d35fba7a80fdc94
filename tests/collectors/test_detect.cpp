#include <gtest/gtest.h>

#include <fstream>

#include "collectors/collector.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

TEST(Detect, FormatComesFromContentNotName) {
    TempDir dir;
    const std::string renamed = dir.file("report.txt");  // a CSV under a .txt name
    std::filesystem::copy_file(fixture("ncu/raw_page.csv"), renamed);
    auto b = collect_file(renamed);
    ASSERT_TRUE(b.has_value()) << b.error().to_string();
    EXPECT_EQ(b->format, "ncu-raw-csv");
    EXPECT_EQ(b->source, renamed);
    EXPECT_EQ(b->sha256.size(), 64u);
}

TEST(Detect, EmptyBinaryAndUnknownInputsAreRejectedWithTheFileName) {
    auto empty = collect_content("empty.log", "");
    ASSERT_FALSE(empty);
    EXPECT_EQ(empty.error().to_string(), "empty.log: file is empty (expected a profiler report)");

    const std::string binary("\x7f" "ELF\x02\x01\x01\x00\x00", 9);
    auto bin = collect_content("a.out", binary);
    ASSERT_FALSE(bin);
    EXPECT_TRUE(bin.error().has_offset);
    EXPECT_EQ(bin.error().offset, 7u);
    EXPECT_NE(bin.error().to_string().find("a.out: offset 7: binary data"), std::string::npos);

    auto unknown = collect_content("notes.txt", "hello\nworld\n");
    ASSERT_FALSE(unknown);
    EXPECT_NE(unknown.error().message.find("unrecognised report format"), std::string::npos);
    // The formats perfwatch reads are the detail a terminal shows, never part of the one-line message.
    EXPECT_NE(unknown.error().detail.find("ncu-csv"), std::string::npos);
    EXPECT_EQ(unknown.error().message.find('\n'), std::string::npos);

    auto missing = collect_file("/nonexistent/perfwatch/report.csv");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().to_string().find("/nonexistent/perfwatch/report.csv: cannot open"), std::string::npos);
}

TEST(Detect, Sha256OfKnownInput) {
    EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace perfwatch::test
