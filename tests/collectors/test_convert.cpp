#include <gtest/gtest.h>

#include <filesystem>

#include "collectors/collector.hpp"
#include "collectors/convert.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

TEST(Convert, DefaultsCoverNsightBinaryReports) {
    const auto& d = default_converters();
    const Converter* ncu = converter_for(d, "/builds/x/profile.ncu-rep");
    ASSERT_NE(ncu, nullptr);
    EXPECT_EQ(ncu->command[0], "ncu");
    const Converter* nsys = converter_for(d, "report1.nsys-rep");
    ASSERT_NE(nsys, nullptr);
    EXPECT_EQ(nsys->output_suffix, ".sqlite");
    EXPECT_NE(converter_for(d, "old.qdrep"), nullptr);
    EXPECT_EQ(converter_for(d, "report.csv"), nullptr);
}

TEST(Convert, FindsProgramsOnPath) {
    EXPECT_FALSE(find_program("sh").empty());
    EXPECT_TRUE(find_program("perfwatch-no-such-tool-42").empty());
    EXPECT_EQ(find_program("/bin/sh"), "/bin/sh");
}

TEST(Convert, MissingToolIsSkippedNamingIt) {
    const Converter c{".nsys-rep", {"perfwatch-no-such-nsys", "export", "{input}"}, ".sqlite", 5};
    auto r = convert_report(c, "run.nsys-rep");
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error().skipped);
    EXPECT_NE(r.error().message.find("`perfwatch-no-such-nsys` is not on PATH"), std::string::npos)
        << r.error().message;
}

TEST(Convert, StdoutAndOutputFileConverters) {
    // cat and cp stand in for `ncu --import` (report on stdout) and `nsys export` ({output} file).
    const std::string csv = fixture("ncu/details_2020_thousands.csv");
    const Converter by_stdout{".ncu-rep", {"cat", "{input}"}, "", 5};
    auto a = convert_report(by_stdout, csv);
    ASSERT_TRUE(a) << a.error().to_string();
    EXPECT_EQ(read_file(a->path()), read_file(csv));
    const Converter by_file{".ncu-rep", {"cp", "{input}", "{output}"}, ".csv", 5};
    std::string dir;
    {
        auto b = convert_report(by_file, csv);
        ASSERT_TRUE(b) << b.error().to_string();
        EXPECT_TRUE(b->path().ends_with(".csv"));
        EXPECT_EQ(read_file(b->path()), read_file(csv));
        dir = std::filesystem::path(b->path()).parent_path().string();
        EXPECT_TRUE(std::filesystem::exists(dir));
    }
    EXPECT_FALSE(std::filesystem::exists(dir)) << "the temporary directory outlived the report";
}

TEST(Convert, FailingToolQuotesItsStandardError) {
    const Converter c{".ncu-rep", {"ls", "/perfwatch-no-such-dir-{input}"}, "", 5};
    auto r = convert_report(c, "x.ncu-rep");
    ASSERT_FALSE(r);
    EXPECT_FALSE(r.error().skipped);
    EXPECT_NE(r.error().message.find("exited with status"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("perfwatch-no-such-dir-x.ncu-rep"), std::string::npos) << r.error().message;
}

TEST(Convert, HangingToolIsKilled) {
    const Converter c{".ncu-rep", {"sleep", "30"}, "", 1};
    auto r = convert_report(c, "x.ncu-rep");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("did not finish within 1 s"), std::string::npos) << r.error().message;
}

TEST(Convert, CollectKeepsTheBinaryReportsIdentity) {
    TempDir dir;
    const std::string rep = dir.file("gemm.ncu-rep");
    std::filesystem::copy_file(fixture("ncu/details_2020_thousands.csv"), rep);
    const std::vector<Converter> converters{{".ncu-rep", {"cat", "{input}"}, "", 5}};
    auto b = collect_file(rep, converters);
    ASSERT_TRUE(b) << b.error().to_string();
    EXPECT_EQ(b->format, "ncu-csv");
    EXPECT_EQ(b->source, rep);
    EXPECT_EQ(b->sha256, sha256_hex(read_file(rep)));
    ASSERT_FALSE(b->notes.empty());
    EXPECT_EQ(b->notes.back(), "converted from .ncu-rep by `cat " + rep + "`");
}

TEST(Convert, OutputFileConverterFeedsTheSqliteReader) {
    PERFWATCH_CORPUS_FILE(sqlite, "nsys/lsaeteurn-vectoraddition_report1_2023.sqlite");
    TempDir dir;
    const std::string rep = dir.file("report1.nsys-rep");
    std::filesystem::copy_file(sqlite, rep);
    // cp stands in for `nsys export --output {output}`: it writes the SQLite export to {output}.
    const std::vector<Converter> converters{{".nsys-rep", {"cp", "{input}", "{output}"}, ".sqlite", 5}};
    auto b = collect_file(rep, converters);
    ASSERT_TRUE(b) << b.error().to_string();
    EXPECT_EQ(b->format, "nsys-sqlite");
    EXPECT_EQ(b->source, rep);
    EXPECT_GT(b->entities[0].value("launches").value_or(0), 0);
}

}  // namespace perfwatch::test
