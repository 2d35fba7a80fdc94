#include <gtest/gtest.h>

#include <fmt/format.h>
#include <zlib.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "collectors/collector.hpp"
#include "collectors/pytorch/kineto.hpp"
#include "tests/collectors/ncu_helpers.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

// The test's own walk of a trace: decompress with zlib, parse with nlohmann::json, count the
// complete kernel events and sum their durations (microseconds -> ns).
struct Walk {
    double kernels = 0, kernel_ns = 0;
    std::set<std::string> names;
};

std::string gunzip_file(const std::string& path) { return test::read_maybe_gzip(path); }

Walk walk(const std::string& path) {
    const auto doc = nlohmann::json::parse(gunzip_file(path));
    Walk w;
    for (const auto& e : doc.at("traceEvents")) {
        if (e.value("ph", "") != "X") continue;
        const std::string cat = e.value("cat", "");
        if (cat != "kernel" && cat != "Kernel") continue;
        w.kernels += 1;
        w.kernel_ns += (e["dur"].is_string() ? std::stod(e["dur"].get<std::string>()) : e["dur"].get<double>()) * 1000;
        w.names.insert(e.value("name", ""));
    }
    return w;
}

void expect_matches_walk(const std::string& path) {
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format, "kineto");
    const Walk w = walk(path);
    const Entity& run = b.entities[0];
    EXPECT_DOUBLE_EQ(run.value("launches").value_or(-1), w.kernels) << path;
    EXPECT_NEAR(run.value("gpu_time").value_or(-1), w.kernel_ns, std::max(1.0, w.kernel_ns * 0.001)) << path;
    EXPECT_EQ(of_kind(b, EntityKind::kernel).size(), w.names.size()) << path;
}

}  // namespace

TEST(Kineto, EveryCorpusTraceMatchesAnIndependentWalk) {
    const auto dir = corpus_dir();
    if (!dir) GTEST_SKIP() << "corpus not found (../shared/corpus or $PERFWATCH_CORPUS)";
    std::size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(*dir / "kineto")) {
        expect_matches_walk(entry.path().string());
        ++files;
    }
    EXPECT_GE(files, 13u);
}

TEST(Kineto, NvidiaTraceCarriesOccupancyLaunchConfigurationAndRank) {
    PERFWATCH_CORPUS_FILE(path, "kineto/hta__critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.labels.at("rank"), "0");
    const auto devices = of_kind(b, EntityKind::device);
    ASSERT_EQ(devices.size(), 1u);
    EXPECT_EQ(devices[0]->attributes.at("gpu"), "NVIDIA A100-PG509-200");
    EXPECT_DOUBLE_EQ(metric(devices[0], "sm_count"), 108);
    bool with_occupancy = false;
    for (const Entity* k : of_kind(b, EntityKind::kernel)) {
        EXPECT_EQ(k->attributes.at("kernel_type"), "COMPUTATION");
        if (k->value("occupancy_estimated")) with_occupancy = true;
        EXPECT_TRUE(k->value("grid_size").has_value()) << k->name;
    }
    EXPECT_TRUE(with_occupancy);
    const Entity& run = b.entities[0];
    EXPECT_TRUE(run.value("launch_delay_mean").has_value());
    EXPECT_GT(run.value("memcpy_bytes").value_or(0), 0);
    EXPECT_GT(run.value("sync_time").value_or(0), 0);
}

// The MI300 trace lists its one GPU under id 0 while its kernels carry device 2: the run still
// names the GPU and its compute units (the H100 twin of the same model gets them too), and
// warps per compute unit count 64-wide wavefronts. Expected values are read from the file.
TEST(Kineto, AGpuTheTraceListsOnlyOnceNamesTheDeviceItsKernelsRanOn) {
    PERFWATCH_CORPUS_FILE(path, "kineto/TraceLens__traces__mi300__gaunernst_bert-small-uncased__1016001.json.gz");
    const auto trace = nlohmann::json::parse(read_maybe_gzip(path));
    ASSERT_EQ(trace["deviceProperties"].size(), 1u);
    const auto& listed = trace["deviceProperties"][0];
    std::set<std::int64_t> kernel_devices;
    for (const auto& e : trace["traceEvents"])
        if (e.value("cat", "") == "kernel") kernel_devices.insert(e["args"]["device"].get<std::int64_t>());
    ASSERT_EQ(kernel_devices.size(), 1u);
    ASSERT_NE(*kernel_devices.begin(), listed["id"].get<std::int64_t>());  // the case at hand

    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.labels.at("gpu"), listed["name"].get<std::string>());
    const auto devices = of_kind(b, EntityKind::device);
    ASSERT_EQ(devices.size(), 1u);
    EXPECT_EQ(devices[0]->name, fmt::format("device {}", *kernel_devices.begin()));
    EXPECT_DOUBLE_EQ(metric(devices[0], "sm_count"), listed["numSms"].get<double>());
    EXPECT_DOUBLE_EQ(metric(devices[0], "max_warps_per_sm"),
                     listed["maxThreadsPerMultiprocessor"].get<double>() / listed["warpSize"].get<double>());
    for (const Entity* k : of_kind(b, EntityKind::kernel))
        EXPECT_DOUBLE_EQ(metric(k, "sm_count"), listed["numSms"].get<double>()) << k->name;
}

TEST(Kineto, NcclKernelsAreCommunication) {
    PERFWATCH_CORPUS_FILE(path, "kineto/hta__nccl_parser_config__nccl_data.json.gz");
    const RunBatch b = collect_ok(path);
    const Entity& run = b.entities[0];
    EXPECT_GT(run.value("gpu_time_comm").value_or(0), 0);
    EXPECT_TRUE(run.value("comm_compute_overlap_pct").has_value());
    EXPECT_EQ(b.labels.at("world_size"), "2");
    bool comm = false;
    for (const Entity* k : of_kind(b, EntityKind::kernel))
        if (k->name.starts_with("ncclKernel") || k->name.starts_with("ncclDevKernel"))
            comm = comm || k->attributes.at("kernel_type") == "COMM";
    EXPECT_TRUE(comm);
}

TEST(Kineto, CpuOnlyTraceIsAnEmptyRunWithANote) {
    PERFWATCH_CORPUS_FILE(path, "kineto/hta__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz");
    const RunBatch b = collect_ok(path);
    EXPECT_TRUE(of_kind(b, EntityKind::kernel).empty());
    ASSERT_FALSE(b.notes.empty());
    EXPECT_NE(b.notes[0].find("CPU-only"), std::string::npos);
}

TEST(Kineto, LegacyTraceIterationsAndLaunchesPerIteration) {
    PERFWATCH_CORPUS_FILE(path, "kineto/kineto__tb_plugin_samples_resnet50_profiler_api_num_workers_0__worker0.pt.trace.json.gz");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.entities[0].value("launches").value_or(-1), 9564);
}

TEST(Kineto, TruncatedInputsAreErrorsNamingTheFile) {
    PERFWATCH_CORPUS_FILE(path, "kineto/kineto__docs_traces_after_fix_trace.json");
    const std::string text = read_file(path);
    const std::size_t cut = text.find("\"traceEvents\"") + 400;
    auto r = collect_content("cut.json", text.substr(0, cut));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().file, "cut.json");
    EXPECT_NE(r.error().message.find("cut short"), std::string::npos) << r.error().message;

    PERFWATCH_CORPUS_FILE(gz, "kineto/hta__trace_compare__base__base.json.gz");
    const std::string bytes = read_file(gz);
    auto t = collect_content("cut.json.gz", bytes.substr(0, bytes.size() / 2));
    ASSERT_FALSE(t);
    EXPECT_EQ(t.error().file, "cut.json.gz");
    EXPECT_NE(t.error().message.find("gzip"), std::string::npos) << t.error().message;
}

// The software versions recent PyTorch writes beside schemaVersion become environment labels.
TEST(Kineto, SoftwareVersionsBecomeEnvironmentLabels) {
    TempDir dir;
    const std::string path = dir.file("versions.json");
    test::write_file(path, R"({"schemaVersion": 1, "cupti_version": 18, "cuda_runtime_version": 12010,
        "cuda_driver_version": 12020, "deviceProperties": [],
        "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1000.0, "dur": 5.0,
                         "args": {"device": 0, "stream": 7}}]})");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.labels.at("cuda_driver"), "12020");
    EXPECT_EQ(b.labels.at("cuda_runtime"), "12010");
    EXPECT_EQ(b.labels.at("cupti"), "18");
}

// A gzip bomb: a small file inflating to hundreds of MB of a valid-looking trace. Refused with a
// clear error once the ratio passes 1000:1, without inflating it all.
TEST(Kineto, GzipBombIsRefusedWithAClearError) {
    TempDir dir;
    const std::string path = dir.file("bomb.json.gz");
    {
        gzFile gz = gzopen(path.c_str(), "wb9");
        ASSERT_NE(gz, nullptr);
        const std::string head = R"({"schemaVersion": 1, "deviceProperties": [], "traceEvents": [)";
        gzwrite(gz, head.data(), static_cast<unsigned>(head.size()));
        const std::string spaces(1 << 20, ' ');
        for (int i = 0; i < 300; ++i) gzwrite(gz, spaces.data(), static_cast<unsigned>(spaces.size()));
        gzwrite(gz, "]}", 2);
        gzclose(gz);
    }
    EXPECT_LT(std::filesystem::file_size(path), 1u << 20);
    const auto batch = collect_file(path);
    ASSERT_FALSE(batch.has_value());
    EXPECT_NE(batch.error().message.find("gzip bomb"), std::string::npos) << batch.error().to_string();
    EXPECT_EQ(batch.error().file, path);
}

// Common events are read from the scanner's hints without a DOM parse. The same traces with
// every "ts" and "dur" written as a string (which only the DOM path reads) must give the same
// run, entity by entity and metric by metric. Each trace's first 20,000 events (the largest hold
// 70,000-170,000, which the sanitizers make slow to write out twice).
TEST(Kineto, EventsReadFromHintsEqualTheFullParse) {
    const auto dir = corpus_dir();
    if (!dir) GTEST_SKIP() << "corpus not found (../shared/corpus or $PERFWATCH_CORPUS)";
    constexpr std::size_t k_events = 20000;
    for (const auto& entry : std::filesystem::directory_iterator(*dir / "kineto")) {
        const std::string path = entry.path().string();
        auto doc = nlohmann::json::parse(gunzip_file(path));
        auto& events = doc.is_array() ? doc : doc["traceEvents"];
        if (events.size() > k_events) events.erase(events.begin() + k_events, events.end());
        auto numbers = collect_content("numbers.json", doc.dump());
        ASSERT_TRUE(numbers) << numbers.error().to_string();
        const RunBatch& fast = *numbers;
        for (auto& e : events)
            for (const char* key : {"ts", "dur"})
                if (e.contains(key) && e[key].is_number()) e[key] = e[key].dump();
        auto slow = collect_content("strings.json", doc.dump());
        ASSERT_TRUE(slow) << slow.error().to_string();
        ASSERT_EQ(fast.entities.size(), slow->entities.size()) << path;
        for (std::size_t i = 0; i < fast.entities.size(); ++i) {
            const Entity& a = fast.entities[i];
            const Entity& b = slow->entities[i];
            EXPECT_EQ(a.name, b.name) << path;
            ASSERT_EQ(a.metrics.size(), b.metrics.size()) << path << " " << a.name;
            for (std::size_t m = 0; m < a.metrics.size(); ++m) {
                EXPECT_EQ(a.metrics[m].name(), b.metrics[m].name()) << path << " " << a.name;
                EXPECT_NEAR(a.metrics[m].value, b.metrics[m].value, 1e-9 * std::max(1.0, std::abs(b.metrics[m].value)))
                    << path << " " << a.name << " " << a.metrics[m].name();
            }
        }
    }
}

}  // namespace perfwatch::test

namespace perfwatch::test {

// The GPU during a synchronize: the test's own reading (nlohmann::json) of HTA's ns-resolution
// trace unions every kernel, copy and set interval and measures how much of each
// cudaDeviceSynchronize no GPU work covered; the collector's gpu_idle_during must agree. That
// 89 ms synchronize waits behind busy GPUs (about 1% idle): the blocking-sync rule says nothing.
TEST(Kineto, GpuIdleDuringASynchronizeEqualsAnIndependentReading) {
    PERFWATCH_CORPUS_FILE(path, "kineto/hta__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz");
    const auto doc = nlohmann::json::parse(gunzip_file(path));
    std::vector<std::pair<double, double>> busy, syncs;
    // Times from the first event on: absolute microseconds near 1.7e15 keep only quarters of one
    // when a duration is added.
    const double base = doc["traceEvents"][0]["ts"].get<double>();
    for (const auto& e : doc["traceEvents"]) {
        if (e.value("ph", "") != "X" || !e.contains("dur")) continue;
        const std::string cat = e.value("cat", "");
        const double ts = e["ts"].get<double>() - base, dur = e["dur"].get<double>();
        if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") busy.emplace_back(ts, ts + dur);
        if ((cat == "cuda_runtime" || cat == "cuda_driver") && e.value("name", "") == "cudaDeviceSynchronize")
            syncs.emplace_back(ts, ts + dur);
    }
    std::sort(busy.begin(), busy.end());
    std::vector<std::pair<double, double>> merged;
    for (const auto& [s, e] : busy) {
        if (!merged.empty() && s <= merged.back().second) merged.back().second = std::max(merged.back().second, e);
        else merged.emplace_back(s, e);
    }
    double total = 0, idle = 0;
    for (const auto& [s, e] : syncs) {
        double covered = 0;
        for (const auto& [bs, be] : merged) covered += std::max(0.0, std::min(be, e) - std::max(bs, s));
        total += (e - s) * 1000;
        idle += (e - s - covered) * 1000;
    }
    ASSERT_GT(total, 0);
    const RunBatch b = collect_ok(path);
    const Entity* sync = nullptr;
    for (const Entity* a : of_kind(b, EntityKind::api_call))
        if (a->name == "cudaDeviceSynchronize") sync = a;
    ASSERT_NE(sync, nullptr);
    EXPECT_NEAR(metric(sync, "gpu_idle_during"), idle, 1.0);
    EXPECT_NEAR(metric(sync, "gpu_idle_during_pct"), 100 * idle / total, 1e-6);
    EXPECT_LT(metric(sync, "gpu_idle_during_pct"), 5.0);
    const auto r = run_perfwatch({"check", "--format", "json", path});
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
    const auto checked = nlohmann::json::parse(r.out);
    for (const auto& f : checked["findings"]) EXPECT_NE(f["rule"], "timeline-blocking-sync") << f;
}

}  // namespace perfwatch::test

namespace perfwatch::test {

namespace {

// Ten executions of a 20-block kernel on stream 1 (80 us each), and when `beside`, a 112-block
// GEMM on stream 2 starting with each (90 us) on a GPU of 132 SMs.
std::string split_trace(bool beside) {
    std::string events;
    for (int i = 0; i < 10; ++i) {
        const int ts = 1000 + 200 * i;
        events += fmt::format(R"({}{{"ph": "X", "cat": "kernel", "name": "allgather_blocks", "pid": 0, "tid": 1, "ts": {}, )"
                              R"("dur": 80, "args": {{"device": 0, "stream": 1, "grid": [20, 1, 1], "block": [512, 1, 1]}}}})",
                              events.empty() ? "" : ", ", ts);
        if (beside)
            events += fmt::format(R"(, {{"ph": "X", "cat": "kernel", "name": "gemm_tile", "pid": 0, "tid": 2, "ts": {}, )"
                                  R"("dur": 90, "args": {{"device": 0, "stream": 2, "grid": [112, 1, 1], "block": [256, 1, 1]}}}})",
                                  ts);
    }
    return R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "numSms": 132, "computeMajor": 9, "computeMinor": 0}], "traceEvents": [)" +
           events + "]}";
}

}  // namespace

// A kernel that runs beside another on a second stream shares the SMs by design: its small grid
// is no finding. The same kernel alone is one. Concurrent shares by construction: the 20-block
// kernel runs its whole 80 us beside the GEMM (100%), the GEMM 80 of its 90 us (88.9%).
TEST(Kineto, AKernelBesideAnotherIsConcurrentAndItsSmallGridIsNoFinding) {
    TempDir dir;
    write_file(dir.path() / "split.json", split_trace(true));
    write_file(dir.path() / "alone.json", split_trace(false));
    const RunBatch split = collect_ok(dir.file("split.json"));
    for (const Entity* k : of_kind(split, EntityKind::kernel))
        EXPECT_NEAR(metric(k, "concurrent_pct"), k->name == "allgather_blocks" ? 100.0 : 100.0 * 80 / 90, 1e-9) << k->name;
    const auto fired = [&](const std::string& file) {
        const auto r = run_perfwatch({"check", "--db", dir.file(file + ".db"), "--format", "json", dir.file(file)});
        EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
        std::set<std::string> rules;
        const auto doc = nlohmann::json::parse(r.out);
        for (const auto& f : doc["findings"])
            if (f["entity"]["name"] == "allgather_blocks") rules.insert(f["rule"].get<std::string>());
        return rules;
    };
    EXPECT_FALSE(fired("split.json").contains("ncu-small-grid"));
    EXPECT_TRUE(fired("alone.json").contains("ncu-small-grid"));
}

// A GEMM launched per layer with grids of 24, 48, 96 and 264 blocks on a 132-SM H100, its longest
// launch the 264-block one: judged over every launch, not that one. The shares are computed here
// from the events written.
TEST(Kineto, AKernelWhoseGridsVaryIsJudgedOverAllItsLaunches) {
    TempDir dir;
    const std::array<std::pair<int, int>, 4> layers{{{24, 300}, {48, 350}, {96, 400}, {264, 420}}};  // grid, dur us
    std::string events;
    double total = 0, small = 0, idle = 0;
    int ts = 1000;
    for (int step = 0; step < 5; ++step)
        for (const auto& [grid, dur] : layers) {
            events += fmt::format(R"({}{{"ph": "X", "cat": "kernel", "name": "layer_gemm", "pid": 0, "tid": 1, "ts": {}, )"
                                  R"("dur": {}, "args": {{"device": 0, "stream": 1, "grid": [{}, 1, 1], "block": [256, 1, 1]}}}})",
                                  events.empty() ? "" : ", ", ts, dur, grid);
            ts += dur + 5;
            total += dur;
            if (grid < 132) {
                small += dur;
                idle += dur * (132.0 - grid) / 132.0;
            }
        }
    write_file(dir.path() / "layers.json",
               R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "numSms": 132, "computeMajor": 9, )"
               R"("computeMinor": 0}], "traceEvents": [)" + events + "]}");
    const RunBatch b = collect_ok(dir.file("layers.json"));
    const auto kernels = of_kind(b, EntityKind::kernel);
    ASSERT_EQ(kernels.size(), 1u);
    EXPECT_EQ(metric(kernels[0], "grid_size"), 264);  // the longest launch's
    EXPECT_NEAR(metric(kernels[0], "small_grid_time_pct"), 100.0 * small / total, 1e-9);
    EXPECT_NEAR(metric(kernels[0], "small_grid_idle_pct"), 100.0 * idle / total, 1e-9);
    const auto r = run_perfwatch({"check", "--format", "json", dir.file("layers.json")});
    const auto doc = nlohmann::json::parse(r.out);
    bool told = false;
    for (const auto& f : doc["findings"]) {
        EXPECT_NE(f["rule"], "ncu-small-grid") << f.dump();
        told = told || f["rule"] == "launch-small-grids";
    }
    EXPECT_TRUE(told) << r.out;
}

// Runtime calls that start no device work (cudaEventQuery here) do not wait for a kernel: a launch
// followed by more of them than the launch map holds (2^18) still meets its kernel, and its launch
// delay is the kernel's start less the call's end, as written in the trace.
TEST(Kineto, QueriesBetweenALaunchAndItsKernelDoNotPushTheLaunchOut) {
    TempDir dir;
    const std::string path = dir.file("queries.json");
    {
        std::ofstream out(path);
        out << R"({"traceEvents": [)" << "\n";
        out << R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 100.0, "dur": 4.0, "args": {"correlation": 1}})";
        constexpr int k_queries = 300'000;
        for (int i = 0; i < k_queries; ++i)
            out << ",\n" << R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaEventQuery", "pid": 1, "tid": 1, "ts": )"
                << 105 + i << R"(, "dur": 0.5, "args": {"correlation": )" << 2 + i << "}}";
        out << ",\n"
            << R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 130.0, "dur": 10.0, "args": {"device": 0, "stream": 7, "correlation": 1}})";
        out << "\n]}\n";
    }
    const RunBatch b = collect_ok(path);
    const Entity& run = b.entities[0];
    ASSERT_TRUE(run.value("launch_delay_mean").has_value());
    EXPECT_DOUBLE_EQ(*run.value("launch_delay_mean"), (130.0 - (100.0 + 4.0)) * 1000);  // in ns
}

// Traces without kernels say why (issue 48). gpu_activity_off.json: 2 cudaLaunchKernel, 1
// cuLaunchKernel and 1 cudaDeviceSynchronize, an A100 in deviceProperties, no GPU event: its GPU
// activity was not recorded, it is no CPU-only program. cpu_only.json: 2 cpu_op events only.
// empty_trace.json: metadata and an instant event only.
TEST(Kineto, RuntimeCallsWithoutGpuEventsAreNoGpuActivityRecordedNotCpuOnly) {
    const RunBatch b = collect_ok(fixture("kineto/gpu_activity_off.json"));
    EXPECT_TRUE(of_kind(b, EntityKind::kernel).empty());
    ASSERT_EQ(b.notes.size(), 1u);
    EXPECT_NE(b.notes[0].find("no GPU activity recorded: 4 CUDA runtime/driver calls (3 kernel launch calls)"),
              std::string::npos)
        << b.notes[0];
    EXPECT_EQ(b.notes[0].find("CPU-only"), std::string::npos) << b.notes[0];
    double calls = 0;
    for (const Entity* a : of_kind(b, EntityKind::api_call)) calls += metric(a, "count");
    EXPECT_EQ(calls, 4);

    const RunBatch cpu = collect_ok(fixture("kineto/cpu_only.json"));
    ASSERT_EQ(cpu.notes.size(), 1u);
    EXPECT_NE(cpu.notes[0].find("CPU-only"), std::string::npos) << cpu.notes[0];
    EXPECT_TRUE(of_kind(cpu, EntityKind::api_call).empty());

    const RunBatch empty = collect_ok(fixture("kineto/empty_trace.json"));
    ASSERT_EQ(empty.notes.size(), 1u);
    EXPECT_NE(empty.notes[0].find("empty trace"), std::string::npos) << empty.notes[0];
}

}  // namespace perfwatch::test
