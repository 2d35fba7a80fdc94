#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "tests/collectors/ncu_helpers.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

struct OpFigures {
    double calls = 0, flops = 0, kernel_ns = 0, tflops = 0;
};

// walk_op_flops.py's reading of a trace: operator and shape -> its figures.
std::map<std::string, OpFigures> walk(const std::string& path) {
    const ProcessResult r = run_program(
        {"python3", std::string(PERFWATCH_SOURCE_DIR) + "/tests/collectors/pytorch/walk_op_flops.py", path});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, OpFigures> out;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        std::vector<std::string> f;
        std::istringstream fields(line);
        for (std::string x; std::getline(fields, x, '\t');) f.push_back(x);
        if (f.size() != 5) continue;
        out[f[0]] = {std::stod(f[1]), std::stod(f[2]), std::stod(f[3]), std::stod(f[4])};
    }
    return out;
}

void expect_ops_match(const std::string& path) {
    const auto expected = walk(path);
    const RunBatch b = collect_ok(path);
    std::map<std::string, const Entity*> ops;
    for (const Entity& e : b.entities)
        if (e.kind == EntityKind::op) ops[e.name] = &e;
    ASSERT_EQ(ops.size(), expected.size()) << path;
    for (const auto& [name, want] : expected) {
        auto it = ops.find(name);
        ASSERT_NE(it, ops.end()) << name;
        const Entity& e = *it->second;
        EXPECT_EQ(e.value("count").value_or(-1), want.calls) << name;
        EXPECT_EQ(e.value("flops").value_or(-1), want.flops) << name;
        if (want.kernel_ns > 0) {
            EXPECT_NEAR(e.value("duration_total").value_or(-1), want.kernel_ns, 1e-6 * want.kernel_ns) << name;
            EXPECT_NEAR(e.value("achieved_flops").value_or(-1), want.tflops * 1e12, 1e-6 * want.tflops * 1e12) << name;
        }
    }
}

}  // namespace

// Every corpus trace that records shapes: each operator's calls, FLOPs, kernel time and achieved
// TFLOP/s equal walk_op_flops.py's independent reading of the same events.
TEST(OpWork, CorpusTracesMatchAnIndependentCalculation) {
    const auto corpus = corpus_dir();
    if (!corpus) GTEST_SKIP() << "corpus not found (../shared/corpus or $PERFWATCH_CORPUS)";
    int with_ops = 0;
    for (const auto& e : std::filesystem::directory_iterator(*corpus / "kineto")) {
        const std::string path = e.path().string();
        if (walk(path).empty()) continue;
        SCOPED_TRACE(path);
        expect_ops_match(path);
        ++with_ops;
    }
    EXPECT_GE(with_ops, 3) << "the H100 and MI300 bert-small traces and the MI250 toy record shapes";
}

// A convolution, a causal attention and a batched matmul on an H100, each with one kernel: the
// FLOPs are the textbook counts of the shapes written here, and the share of the BF16 peak is
// achieved over the datasheet's 989.4 TFLOP/s.
TEST(OpWork, ConvolutionAttentionAndBatchedMatmulFromTheirShapes) {
    TempDir dir;
    const std::string path = dir.file("ops.json");
    auto op = [](const std::string& name, int ext, double ts, const std::string& dims, const std::string& types,
                 const std::string& concrete) {
        return fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 1, "tid": 1, "ts": {}, "dur": 50,
            "args": {{"External id": {}, "Input Dims": {}, "Input type": {}, "Concrete Inputs": {}}}}},)",
                           name, ts, ext, dims, types, concrete);
    };
    auto kernel = [](int ext, double ts, double dur) {
        return fmt::format(R"({{"ph": "X", "cat": "kernel", "name": "k{}", "pid": 0, "tid": 7, "ts": {}, "dur": {},
            "args": {{"External id": {}, "device": 0, "stream": 7, "correlation": {}}}}},)",
                           ext, ts, dur, ext, ext + 1000);
    };
    std::string events;
    events += op("aten::cudnn_convolution", 1, 1000, "[[8, 64, 56, 56], [128, 64, 3, 3]]",
                 R"(["c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList", "ScalarList", "Scalar"])",
                 R"(["", "", "[1, 1]", "[1, 1]", "[1, 1]", "1"])");
    events += kernel(1, 1010, 400);
    events += op("aten::_flash_attention_forward", 2, 2000, "[[2, 1024, 16, 128], [2, 1024, 16, 128], [2, 1024, 16, 128]]",
                 R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"])",
                 R"(["", "", "", "", "", "1024", "1024", "0.", "True", "False", "0.088"])");
    events += kernel(2, 2010, 300);
    events += op("aten::bmm", 3, 3000, "[[32, 256, 64], [32, 64, 256]]", R"(["float", "float"])", R"(["", ""])");
    events += kernel(3, 3010, 50);
    events.pop_back();
    write_file(path, R"({"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9,
        "computeMinor": 0, "numSms": 132, "maxThreadsPerMultiprocessor": 2048, "warpSize": 32}],
        "traceEvents": [)" + events + "]}");
    const RunBatch b = collect_ok(path);
    std::map<std::string, const Entity*> ops;
    for (const Entity& e : b.entities)
        if (e.kind == EntityKind::op) ops[e.attributes.at("op")] = &e;
    ASSERT_EQ(ops.size(), 3u);
    // Convolution: 56x56 output (3x3, stride 1, padding 1), 2 x N x K x P x Q x C x R x S.
    const double conv = 2.0 * 8 * 128 * 56 * 56 * 64 * 3 * 3;
    EXPECT_EQ(ops["aten::cudnn_convolution"]->value("flops"), conv);
    EXPECT_NEAR(*ops["aten::cudnn_convolution"]->value("achieved_flops"), conv / 400e-6, 1e-9 * conv / 400e-6);
    EXPECT_NEAR(*ops["aten::cudnn_convolution"]->value("peak_tflops_pct"), 100 * conv / 400e-6 / 1e12 / 989.4, 1e-9);
    // Causal attention: (QK^T + PV) = 4 x B x H x S x S x D, halved.
    const double attention = 4.0 * 2 * 16 * 1024 * 1024 * 128 / 2;
    EXPECT_EQ(ops["aten::_flash_attention_forward"]->value("flops"), attention);
    // FP32 bmm: 2 x B x M x N x K against the FP32 (SIMT) peak of 66.9 TFLOP/s; bytes are the two
    // inputs and the output once, so its intensity is FLOPs over them.
    const double bmm = 2.0 * 32 * 256 * 256 * 64;
    const double bytes = 4.0 * (32 * 256 * 64 + 32 * 64 * 256 + 32 * 256 * 256);
    EXPECT_EQ(ops["aten::bmm"]->value("flops"), bmm);
    EXPECT_EQ(ops["aten::bmm"]->value("op_bytes"), bytes);
    EXPECT_NEAR(*ops["aten::bmm"]->value("arithmetic_intensity"), bmm / bytes, 1e-12);
    EXPECT_NEAR(*ops["aten::bmm"]->value("peak_tflops_pct"), 100 * bmm / 50e-6 / 1e12 / 66.9, 1e-9);
    // The ridge point of the BF16 peak over 3.35 TB/s is 295 flop/byte; the FP32 one 20.
    EXPECT_EQ(ops["aten::cudnn_convolution"]->attributes.at("bound"), conv / (2.0 * (8 * 64 * 56 * 56 + 128 * 64 * 9 + 8 * 128 * 56 * 56)) >= 989.4 / 3.35 ? "compute" : "memory");
    EXPECT_EQ(ops["aten::bmm"]->attributes.at("bound"), "compute");

    // Stored like any metric: the same trace with the bmm kernel twice as long makes a history of
    // the operator's TFLOP/s that halves.
    const std::string db = dir.file("ops.db");
    ASSERT_EQ(run_perfwatch({"ingest", "--db", db, path}).exit_code, 0);
    std::string slower = read_file(path);
    const std::string k_bmm_kernel = R"("ts": 3010, "dur": 50)";
    ASSERT_NE(slower.find(k_bmm_kernel), std::string::npos);
    slower.replace(slower.find(k_bmm_kernel), k_bmm_kernel.size(), R"("ts": 3010, "dur": 100)");
    write_file(dir.file("slower.json"), slower);
    ASSERT_EQ(run_perfwatch({"ingest", "--db", db, dir.file("slower.json")}).exit_code, 0);
    const ProcessResult h = run_perfwatch({"history", "--db", db, "--metric", "achieved_flops", "--kind", "op",
                                           "--entity", ops["aten::bmm"]->name, "--format", "json"});
    ASSERT_EQ(h.exit_code, 0) << h.err;
    const auto points = nlohmann::json::parse(h.out).at("points");
    ASSERT_EQ(points.size(), 2u) << h.out;
    EXPECT_NEAR(points[0].at("value").get<double>(), bmm / 50e-6, 1e-9 * bmm / 50e-6);
    EXPECT_NEAR(points[1].at("value").get<double>(), bmm / 100e-6, 1e-9 * bmm / 100e-6);
}

}  // namespace perfwatch::test
