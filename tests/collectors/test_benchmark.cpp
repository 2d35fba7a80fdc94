#include <gtest/gtest.h>

#include "collectors/benchmark.hpp"
#include "collectors/labels.hpp"

namespace perfwatch::test {

namespace {

PathTemplate compiled(const std::string& text) {
    std::string error;
    auto t = PathTemplate::compile(text, error);
    EXPECT_TRUE(t) << error;
    return *t;
}

}  // namespace

TEST(Benchmark, FormatAndCompressionExtensionsDoNotCount) {
    EXPECT_EQ(benchmark_from_path("bert.json").name, "bert");
    EXPECT_EQ(benchmark_from_path("bert.json.gz").name, "bert");
    EXPECT_EQ(benchmark_from_path("bert.pt.trace.json").name, "bert");
    EXPECT_EQ(benchmark_from_path("gemm.ncu-rep").name, "gemm");
    EXPECT_EQ(benchmark_from_path("transpose_a100.csv").name, "transpose_a100");
    EXPECT_EQ(benchmark_from_path("cnn_train_s10.mon").name, "cnn_train_s10");
    EXPECT_EQ(benchmark_from_path("nlp/bert.JSON").name, "nlp/bert");
}

TEST(Benchmark, VolatilePartsOfToolFileNamesDoNotCount) {
    // PyTorch: <host>_<pid>.<ms>.pt.trace.json; a worker name the user chose stays.
    EXPECT_EQ(benchmark_from_path("resnet/fp16/gpu-node-7_31337.1695835535123.pt.trace.json").name, "resnet/fp16");
    EXPECT_EQ(benchmark_from_path("gpu-node-7_31337.1695835535123.pt.trace.json").name, "");
    EXPECT_EQ(benchmark_from_path("bert.1695835535123.pt.trace.json").name, "bert");
    EXPECT_EQ(benchmark_from_path("llama-2026-11-24_10-57-00.csv").name, "llama");
    EXPECT_EQ(benchmark_from_path("report_20261124T105700.txt").name, "report");
    EXPECT_EQ(benchmark_from_path("gemm.1700000000.log").name, "gemm");
    // Digits that are part of a name stay.
    EXPECT_EQ(benchmark_from_path("fp16_wmma_8192.txt").name, "fp16_wmma_8192");
}

TEST(Benchmark, RankSuffixesBecomeALabel) {
    const BenchmarkName a = benchmark_from_path("bert_rank3.json");
    EXPECT_EQ(a.name, "bert");
    EXPECT_EQ(a.rank, "3");
    const BenchmarkName b = benchmark_from_path("train/rank-12.1695835535123.pt.trace.json");
    EXPECT_EQ(b.name, "train");
    EXPECT_EQ(b.rank, "12");
    EXPECT_EQ(benchmark_from_path("ranking.json").rank, "");
}

TEST(Benchmark, DerivedFromTheTemplatesWildcardsOrThePathBelowTheWatch) {
    LabelSources s;
    s.path_templates.push_back(compiled("/ci/{branch}/{commit}/**"));
    EXPECT_EQ(derived_benchmark(s, "/ci/main/abc123/bert.json.gz", "kineto"), "bert");
    EXPECT_EQ(derived_benchmark(s, "/ci/main/abc123/nlp/bert.json", "kineto"), "nlp/bert");
    std::string rank;
    EXPECT_EQ(derived_benchmark(s, "/ci/main/abc123/llama/gpu-node-7_31337.1695835535123.pt.trace.json", "kineto", &rank),
              "llama");
    EXPECT_EQ(derived_benchmark(s, "/ci/main/abc123/train_rank1.json", "kineto", &rank), "train");
    EXPECT_EQ(rank, "1");
    // No template matches: the path below the watched directory.
    LabelSources w;
    w.root = "/watch";
    EXPECT_EQ(derived_benchmark(w, "/watch/resnet/fp16.csv", "ncu-csv"), "resnet/fp16");
    // On the command line: the file name; only volatile parts left: its folder, else the format.
    EXPECT_EQ(derived_benchmark({}, "/tmp/x/bert.json", "kineto"), "bert");
    EXPECT_EQ(derived_benchmark({}, "/tmp/gpt2/node_12.1695835535123.pt.trace.json", "kineto"), "gpt2");
    EXPECT_EQ(derived_benchmark({}, "/2026-11-24/node_12.1695835535123.pt.trace.json", "kineto"), "kineto");
}

}  // namespace perfwatch::test
