// The reader process's answer: what encode writes, decode reads back field for field, and no
// byte string, cut, flipped or forged, makes decode do anything but refuse it.
#include <gtest/gtest.h>

#include <random>

#include "collectors/collector.hpp"
#include "collectors/sanitize.hpp"
#include "core/run_wire.hpp"
#include "tests/support.hpp"

namespace perfwatch {

namespace {

RunBatch sample_batch() {
    RunBatch b;
    b.source = "reports/trace.json";
    b.sha256 = std::string(64, 'a');
    b.format = "kineto";
    b.format_detail = "trace 1.0.1";
    b.tool_version = "2.3";
    b.captured_at = "2026-12-01T10:00:00Z";
    b.labels = {{"benchmark", "bert"}, {"commit", "abc123"}};
    b.notes = {"a note", std::string("bytes \0 inside", 14)};
    Entity run;
    run.kind = EntityKind::run;
    run.name = "run";
    run.set(Metric("gpu_time", 1.5e6, "ns", "GPU time", "us"));
    b.entities.push_back(run);
    Entity kernel;
    kernel.kind = EntityKind::kernel;
    kernel.name = "void gemm<128>(float*)";
    kernel.parent = 0;
    kernel.set(Metric("duration_total", 1.25e6, "ns"));
    kernel.set(Metric("launches", 40, "count"));
    kernel.attributes["device"] = "0";
    kernel.attributes["stream"] = "7";
    kernel.samples["duration"] = {1.0, 2.5, -0.0};
    ToolFinding f;
    f.rule = "TheoreticalOccupancy";
    f.type = "OPT";
    f.section = "Occupancy";
    f.text = "raise it";
    f.speedup_type = "local";
    f.speedup_pct = 12.5;
    kernel.tool_findings.push_back(f);
    kernel.tool_findings.push_back(ToolFinding{"r", "INF", "s", "no speedup", "", std::nullopt});
    b.entities.push_back(kernel);
    return b;
}

void expect_same(const RunBatch& a, const RunBatch& b) {
    EXPECT_EQ(a.source, b.source);
    EXPECT_EQ(a.sha256, b.sha256);
    EXPECT_EQ(a.format, b.format);
    EXPECT_EQ(a.format_detail, b.format_detail);
    EXPECT_EQ(a.tool_version, b.tool_version);
    EXPECT_EQ(a.captured_at, b.captured_at);
    EXPECT_EQ(a.labels, b.labels);
    EXPECT_EQ(a.notes, b.notes);
    ASSERT_EQ(a.entities.size(), b.entities.size());
    for (std::size_t i = 0; i < a.entities.size(); ++i) {
        const Entity& x = a.entities[i];
        const Entity& y = b.entities[i];
        EXPECT_EQ(x.kind, y.kind);
        EXPECT_EQ(x.name, y.name);
        EXPECT_EQ(x.parent, y.parent);
        ASSERT_EQ(x.metrics.size(), y.metrics.size());
        for (std::size_t m = 0; m < x.metrics.size(); ++m) {
            EXPECT_EQ(x.metrics[m].key, y.metrics[m].key);
            EXPECT_EQ(x.metrics[m].value, y.metrics[m].value);
        }
        EXPECT_TRUE(x.attributes == y.attributes);
        EXPECT_TRUE(x.samples == y.samples);
        ASSERT_EQ(x.tool_findings.size(), y.tool_findings.size());
        for (std::size_t f = 0; f < x.tool_findings.size(); ++f) {
            EXPECT_EQ(x.tool_findings[f].rule, y.tool_findings[f].rule);
            EXPECT_EQ(x.tool_findings[f].text, y.tool_findings[f].text);
            EXPECT_EQ(x.tool_findings[f].speedup_type, y.tool_findings[f].speedup_type);
            EXPECT_EQ(x.tool_findings[f].speedup_pct, y.tool_findings[f].speedup_pct);
        }
    }
}

}  // namespace

TEST(RunWire, RunsComeBackFieldForField) {
    const std::vector<RunBatch> runs = {sample_batch(), RunBatch{}};
    auto got = decode_answer(encode_runs(runs));
    ASSERT_TRUE(got) << got.error().to_string();
    EXPECT_FALSE(got->refused);
    ASSERT_EQ(got->runs.size(), 2u);
    expect_same(runs[0], got->runs[0]);
    expect_same(runs[1], got->runs[1]);
}

// Every corpus report's runs, encoded, decoded and sanitized as a reader's parent does, are the
// runs as read.
TEST(RunWire, EveryCorpusReportComesBackAsRead) {
    const auto corpus = test::corpus_dir();
    if (!corpus) GTEST_SKIP() << "no corpus at ../shared/corpus";
    int read = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(*corpus)) {
        if (!entry.is_regular_file() || entry.path().extension() == ".md") continue;
        auto runs = collect_plain_file_runs(entry.path().string());
        if (!runs) continue;
        const std::string bytes = encode_runs(*runs);
        auto back = decode_answer(bytes);
        ASSERT_TRUE(back) << entry.path() << ": " << back.error().to_string();
        for (RunBatch& b : back->runs) sanitize_batch(b);
        EXPECT_EQ(encode_runs(back->runs), bytes) << entry.path();
        ++read;
    }
    EXPECT_GT(read, 20);
}

TEST(RunWire, AnErrorComesBackFieldForField) {
    Error e = fail_at_offset("a.json", 1234, "expected ':'").error();
    e.detail = "more\nlines";
    e.skipped = true;
    e.kind = ErrorKind::internal;
    auto got = decode_answer(encode_error(e));
    ASSERT_TRUE(got) << got.error().to_string();
    ASSERT_TRUE(got->refused);
    EXPECT_EQ(got->refused->to_string(), e.to_string());
    EXPECT_EQ(got->refused->detail, e.detail);
    EXPECT_TRUE(got->refused->skipped);
    EXPECT_EQ(got->refused->kind, ErrorKind::internal);
}

// Every prefix of a valid answer is refused: none is read as a shorter answer, none overruns.
TEST(RunWire, EveryCutIsRefused) {
    const std::string bytes = encode_runs({sample_batch()});
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        auto got = decode_answer(std::string_view(bytes).substr(0, n));
        EXPECT_FALSE(got) << "a cut at " << n << " of " << bytes.size() << " bytes was accepted";
    }
    EXPECT_FALSE(decode_answer(bytes + "x")) << "a trailing byte was accepted";
}

// Flipped bytes and random lengths: decode accepts or refuses, and what it accepts is well formed
// (under ASan, any overrun or huge allocation would fail the test).
TEST(RunWire, FlippedBytesAreReadOrRefusedNeverOverrun) {
    const std::string bytes = encode_runs({sample_batch(), sample_batch()});
    std::mt19937_64 random(42);
    std::size_t refused = 0;
    for (int round = 0; round < 20000; ++round) {
        std::string copy = bytes;
        const int flips = 1 + static_cast<int>(random() % 4);
        for (int f = 0; f < flips; ++f) copy[random() % copy.size()] = static_cast<char>(random());
        auto got = decode_answer(copy);
        if (!got) {
            ++refused;
            EXPECT_NE(got.error().message.find("malformed reader answer"), std::string::npos);
            continue;
        }
        for (const RunBatch& b : got->runs)
            for (const Entity& e : b.entities) {
                EXPECT_GE(e.parent, -1);
                EXPECT_LT(e.parent, static_cast<std::int64_t>(b.entities.size()));
            }
    }
    EXPECT_GT(refused, 0u);
}

TEST(RunWire, AParentOutsideTheRunIsRefused) {
    RunBatch b = sample_batch();
    b.entities[1].parent = 2;
    auto got = decode_answer(encode_runs({b}));
    ASSERT_FALSE(got);
    EXPECT_NE(got.error().message.find("parent 2 of 2 entities"), std::string::npos) << got.error().message;
}

TEST(RunWire, AMetricTwiceInOneEntityIsRefused) {
    RunBatch b = sample_batch();
    b.entities[1].metrics.push_back(Metric("launches", 3, "count"));
    auto got = decode_answer(encode_runs({b}));
    ASSERT_FALSE(got);
    EXPECT_NE(got.error().message.find("metric 'launches' twice"), std::string::npos) << got.error().message;
}

TEST(RunWire, AHugeCountIsRefusedBeforeAnyAllocation) {
    std::string bytes = encode_runs({});
    bytes.resize(bytes.size() - 8);
    const std::uint64_t huge = std::uint64_t{1} << 60;
    bytes.append(reinterpret_cast<const char*>(&huge), 8);
    auto got = decode_answer(bytes);
    ASSERT_FALSE(got);
    EXPECT_NE(got.error().message.find("cannot hold"), std::string::npos) << got.error().message;
}

}  // namespace perfwatch
