#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <algorithm>
#include <sstream>
#include <set>

#include "collectors/amd/rocprof_pmc.hpp"
#include "collectors/readers/units.hpp"
#include "tests/collectors/ncu_helpers.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

// The Python reading of `path` (tests/collectors/pmc_truth.py), per kernel.
nlohmann::json truth(const std::string& path) {
    const auto r = run_program({"python3", std::string(PERFWATCH_SOURCE_DIR) + "/tests/collectors/pmc_truth.py", path});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
}

const Entity* kernel(const RunBatch& b, const std::string& name) {
    for (const Entity& e : b.entities)
        if (e.kind == EntityKind::kernel && e.name == name) return &e;
    return nullptr;
}

// Every kernel of `path` as perfwatch reads it against the independent reading.
void expect_matches_truth(const std::string& path) {
    SCOPED_TRACE(path);
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format, "rocprof-pmc");
    const nlohmann::json want = truth(path);
    ASSERT_FALSE(want.empty());
    double dispatches = 0;
    for (const auto& [name, w] : want.items()) {
        SCOPED_TRACE(name);
        const Entity* k = kernel(b, name);
        ASSERT_NE(k, nullptr);
        EXPECT_DOUBLE_EQ(k->value("launches").value_or(-1), w["dispatches"].get<double>());
        dispatches += w["dispatches"].get<double>();
        if (const double ns = w["duration_ns"].get<double>(); ns > 0) {
            EXPECT_NEAR(k->value("duration_total").value_or(-1), ns, 1e-6 * ns);
        }
        for (const char* first : {"first_launch_duration", "first_launch_excess"}) {
            if (!w.contains(first)) continue;
            const double v = w[first].get<double>();
            EXPECT_NEAR(k->value(first).value_or(-1), v, 1e-6 * std::max(1.0, std::abs(v))) << first;
        }
        for (const auto& [key, metric] : std::map<std::string, std::string>{
                 {"l2_hit_rate", "l2_hit_rate"}, {"occupancy_achieved", "occupancy_achieved"},
                 {"sm_throughput", "sm_throughput"}, {"memory_throughput", "memory_throughput"}}) {
            if (!w.contains(key)) continue;
            EXPECT_NEAR(k->value(metric).value_or(-1), w[key].get<double>(), 1e-9 * std::max(1.0, w[key].get<double>())) << metric;
        }
        if (w.contains("lds_conflict_pct")) {
            const double c = k->value("shared_bank_conflicts").value_or(-1), a = k->value("shared_wavefronts").value_or(-1);
            EXPECT_NEAR(100 * c / a, w["lds_conflict_pct"].get<double>(), 1e-9);
        }
    }
    EXPECT_DOUBLE_EQ(b.entities[0].value("launches").value_or(-1), dispatches);
}

}  // namespace

// rocprof v1 per-dispatch CSVs (with and without timestamps, counters, an Omniperf pass) and
// rocprof-compute workload files of three layouts read as an independent Python reading says.
TEST(RocprofPmc, CorpusDispatchFilesMatchAnIndependentReading) {
    for (const char* file : {"rocprof/IlyaNyrkov__xSpMM__counters.csv", "rocprof/amd__HPCTrainingExamples__data_movement.csv",
                             "rocprof/gunrock__gunrock__results.csv", "rocprof/hpcgarage__spatter__results.csv",
                             "rocprof/amd__HPCTrainingExamples__results.csv", "rocprof/Aalanli__AMDGPUExperiments__SQ_LEVEL_WAVES.csv",
                             "rocprof_compute/Aalanli__AMDGPUExperiments__rocgemm_mi200/pmc_perf.csv",
                             "rocprof_compute/Aalanli__AMDGPUExperiments__rocgemm_mi200/SQ_LEVEL_WAVES.csv",
                             "rocprof_compute/Aalanli__AMDGPUExperiments__rocgemm_mi200/pmc_dispatch_info.csv",
                             "rocprof_compute/ROCm__omniperf__no_roof_MI300X_A1/pmc_perf.csv",
                             "rocprof_compute/ROCm__omniperf__no_roof_MI300X_A1/timestamps.csv",
                             "rocprof_compute/ROCm__omniperf__no_roof_MI100/pmc_perf.csv",
                             "rocprof_compute/amd__HPCTrainingExamples__collapse_MI300A_A1/pmc_perf.csv",
                             "rocprof_compute/amd__HPCTrainingExamples__collapse_MI300A_A1/SQ_LEVEL_WAVES.csv"}) {
        PERFWATCH_CORPUS_FILE(path, file);
        expect_matches_truth(path);
    }
}

// A rocprof v1 results.csv that is a plain dispatch trace (no counter columns, so no replay) gives
// the wait from each dispatch packet to its kernel's start (DispatchNs -> BeginNs) as the launch
// latency, per kernel and for the run, as Python's csv module reads it; a counter collection
// (whose dispatches are serialized by the profiler) gives none.
TEST(RocprofPmc, PlainDispatchTraceGivesTheQueueToStartWait) {
    PERFWATCH_CORPUS_FILE(path, "rocprof/amd__HPCTrainingExamples__results.csv");
    const auto r = run_program({"python3", "-c", R"(
import csv, json, sys
w = {}
for row in csv.DictReader(open(sys.argv[1], newline='')):
    d = int(row['BeginNs']) - int(row['DispatchNs'])
    if d >= 0: w.setdefault(row['KernelName'].strip(), []).append(d)
every = [x for v in w.values() for x in v]
out = {k: [sum(v) / len(v), max(v)] for k, v in w.items()}
out[''] = [sum(every) / len(every), max(every)]
print(json.dumps(out)))", path});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto want = nlohmann::json::parse(r.out);
    const RunBatch b = collect_ok(path);
    EXPECT_NEAR(b.entities[0].value("launch_latency_mean").value_or(-1), want[""][0].get<double>(), 0.5);
    EXPECT_DOUBLE_EQ(b.entities[0].value("launch_latency_max").value_or(-1), want[""][1].get<double>());
    std::size_t kernels = 0;
    for (const Entity& e : b.entities) {
        if (e.kind != EntityKind::kernel) continue;
        ++kernels;
        ASSERT_TRUE(want.contains(e.name)) << e.name;
        EXPECT_NEAR(e.value("launch_latency_mean").value_or(-1), want[e.name][0].get<double>(), 0.5) << e.name;
        EXPECT_DOUBLE_EQ(e.value("launch_latency_max").value_or(-1), want[e.name][1].get<double>()) << e.name;
    }
    EXPECT_EQ(kernels + 1, want.size());
    const RunBatch counters = collect_ok(fixture("rocprof/counters_wide_v1.csv"));
    EXPECT_FALSE(counters.entities[0].value("launch_latency_mean").has_value());
}

TEST(RocprofPmc, SysinfoGivesTheGpuAndAchievedOccupancy) {
    PERFWATCH_CORPUS_FILE(path, "rocprof_compute/amd__HPCTrainingExamples__collapse_MI300A_A1/pmc_perf.csv");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(label_value(b.labels, "gpu"), "AMD MI300A_A1 (gfx942)");
    EXPECT_EQ(label_value(b.labels, "gpu_arch"), "gfx942");
    const nlohmann::json want = truth(path);
    // Every kernel of this OpenMP offload run has an achieved occupancy from SQ_LEVEL_WAVES.
    for (const auto& [name, w] : want.items()) EXPECT_TRUE(w.contains("occupancy_achieved")) << name;
}

// The clock limits of sysinfo.csv (max_sclk/max_mclk, or sclk/mclk in the older layout) label the
// run (sm_clock, memory_clock: environment labels named when they change) and give the device's
// clock; the expected values are read from the CSV here.
TEST(RocprofPmc, SysinfoClockLimitsLabelTheRun) {
    for (const char* folder : {"rocprof_compute/ROCm__omniperf__no_roof_MI300X_A1", "rocprof_compute/Aalanli__AMDGPUExperiments__rocgemm_mi200"}) {
        PERFWATCH_CORPUS_FILE(path, std::string(folder) + "/pmc_perf.csv");
        const std::string sysinfo = (std::filesystem::path(path).parent_path() / "sysinfo.csv").string();
        const auto r = run_program({"python3", "-c",
                                    "import csv,sys,json; r=next(csv.DictReader(open(sys.argv[1]))); "
                                    "print(json.dumps({k: r.get('max_'+k) or r.get(k) for k in ('sclk','mclk')}))",
                                    sysinfo});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const auto want = nlohmann::json::parse(r.out);
        const RunBatch b = collect_ok(path);
        EXPECT_EQ(label_value(b.labels, "sm_clock"), want["sclk"].get<std::string>() + " MHz") << folder;
        EXPECT_EQ(label_value(b.labels, "memory_clock"), want["mclk"].get<std::string>() + " MHz") << folder;
        bool device = false;
        for (const Entity& e : b.entities)
            if (e.kind == EntityKind::device) {
                device = true;
                EXPECT_DOUBLE_EQ(e.value("device_frequency").value_or(-1), std::stod(want["sclk"].get<std::string>()) * 1e6);
            }
        EXPECT_TRUE(device);
    }
}

TEST(RocprofPmc, RoundedTimestampsSayDurationsAreLost) {
    PERFWATCH_CORPUS_FILE(path, "rocprof_compute/ROCm__omniperf__vcopy_MI300X_A1_hand_edited/pmc_perf.csv");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.entities[0].value("launches").value_or(-1), 3);
    EXPECT_TRUE(std::any_of(b.notes.begin(), b.notes.end(), [](const std::string& n) { return n.find("durations are lost") != std::string::npos; }));
}

TEST(RocprofPmc, KernelTopReadsCountsAndTimes) {
    PERFWATCH_CORPUS_FILE(path, "rocprof_compute/amd__HPCTrainingExamples__collapse_MI300A_A1/pmc_kernel_top.csv");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format, "rocprof-kernel-top");
    // The file's own rows: Kernel_Name,Count,Sum(ns),...; summed here with the CSV reader of
    // the test's Python twin would be circular, so read the two columns directly.
    std::istringstream in(read_file(path));
    std::string line;
    std::getline(in, line);
    double count = 0, sum = 0;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        // Names are quoted when they hold commas; Count and Sum(ns) follow the name.
        const auto name_end = line[0] == '"' ? line.find('"', 1) + 1 : line.find(',');
        std::istringstream rest(line.substr(name_end + 1));
        std::string c, s;
        std::getline(rest, c, ',');
        std::getline(rest, s, ',');
        count += std::stod(c);
        sum += std::stod(s);
    }
    EXPECT_DOUBLE_EQ(b.entities[0].value("launches").value_or(-1), count);
    EXPECT_NEAR(b.entities[0].value("gpu_time").value_or(-1), sum, 1e-6 * sum);
}

// AMD limits as the LLVM AMDGPU backend states them: llvm-calc-occupancy's documented example
// (gfx90a, 512 work-items, 50 VGPRs, 30 SGPRs: 8 waves per SIMD) and each limiter.
TEST(RocprofPmc, TheoreticalOccupancyFromTheArchitecturesLimits) {
    const auto full = amd_theoretical_occupancy("gfx90a", 50, 0, 30, 0, 512, 64);
    ASSERT_TRUE(full);
    EXPECT_EQ(full->waves_per_simd, 8);
    EXPECT_EQ(full->limiter, "");
    const auto vgpr = amd_theoretical_occupancy("gfx90a", 128, 0, 48, 0, 256, 64);
    EXPECT_EQ(vgpr->waves_per_simd, 4);  // 512 / 128
    EXPECT_EQ(vgpr->limiter, "VGPRs");
    const auto unified = amd_theoretical_occupancy("gfx942", 64, 64, 32, 0, 256, 64);
    EXPECT_EQ(unified->waves_per_simd, 4);  // arch + accum share the 512
    const auto lds = amd_theoretical_occupancy("gfx90a", 32, 0, 32, 16384, 256, 64);
    EXPECT_EQ(lds->waves_per_simd, 4);  // 4 workgroups of 4 waves per CU
    EXPECT_EQ(lds->limiter, "LDS");
    const auto sgpr = amd_theoretical_occupancy("gfx908", 24, 0, 102, 0, 256, 64);
    EXPECT_EQ(sgpr->waves_per_simd, 7);
    EXPECT_EQ(sgpr->limiter, "SGPRs");
    EXPECT_FALSE(amd_theoretical_occupancy("gfx1100", 32, 0, 32, 0, 256, 32));
}

// rocprofv3 --pmc in its early layout: a row per dispatch and counter, the GPU from agent_info.csv.
TEST(RocprofPmc, RocprofV3CounterCollectionWithItsAgentInfo) {
    PERFWATCH_CORPUS_FILE(path, "rocprof/HussamAlBasha__mi300a-benchmarks-fork__hipMalloc1_counter_collection.csv");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format, "rocprof-counter-collection");
    EXPECT_EQ(label_value(b.labels, "gpu_arch"), "gfx942");
    const nlohmann::json want = truth(path);
    double dispatches = 0;
    for (const auto& [name, w] : want.items()) {
        SCOPED_TRACE(name);
        const Entity* k = kernel(b, name);
        ASSERT_NE(k, nullptr);
        EXPECT_DOUBLE_EQ(k->value("launches").value_or(-1), w["dispatches"].get<double>());
        EXPECT_FALSE(k->value("duration").has_value());  // never timed: no duration rather than 0
        dispatches += w["dispatches"].get<double>();
        for (const auto& [counter, sum] : w["counters"].items())
            EXPECT_DOUBLE_EQ(k->value(slug(counter)).value_or(-1), sum.get<double>()) << counter;
    }
    EXPECT_DOUBLE_EQ(b.entities[0].value("launches").value_or(-1), dispatches);
    EXPECT_FALSE(b.entities[0].value("gpu_time").has_value());
}

TEST(RocprofPmc, RaggedRowsNameTheirLine) {
    TempDir dir;
    const std::string path = dir.file("pmc_perf.csv");
    write_file(path, "Dispatch_ID,Kernel_Name,GPU_ID,Grid_Size\n0,k,1,64\n1,k\n");
    auto b = collect_file(path);
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error().line, 3u);
}

// A counter collection is one launch per dispatch whatever its layout (issue 48). The long
// rocprofv3 counter_collection.csv (one row per dispatch and counter, with timestamps, which a
// kernel trace has too) and its wide rocprof v1 twin (-i, a column per counter) hold the same 3
// dispatches of 2 kernels with 2 counters (6 long rows): both give the same launches, kernel
// time and counters. Dispatches and rows are counted here from the long file.
TEST(RocprofPmc, LongAndWideCounterCollectionsGiveTheSameLaunchesAndCounters) {
    const std::string long_path = fixture("rocprof/counters_long_v3.csv");
    std::set<std::string> dispatches;
    std::size_t rows = 0;
    {
        std::istringstream in(read_file(long_path));
        std::string line;
        std::getline(in, line);  // header
        while (std::getline(in, line)) {
            if (line.empty()) continue;
            ++rows;
            dispatches.insert(line.substr(line.find(',') + 1, line.find(',', line.find(',') + 1) - line.find(',') - 1));
        }
    }
    ASSERT_EQ(dispatches.size(), 3u);
    ASSERT_EQ(rows, 6u);
    const RunBatch lng = collect_ok(long_path);
    const RunBatch wide = collect_ok(fixture("rocprof/counters_wide_v1.csv"));
    EXPECT_EQ(lng.format, "rocprof-counter-collection");
    EXPECT_EQ(wide.format, "rocprof-pmc");
    EXPECT_EQ(lng.entities[0].value("launches").value_or(-1), static_cast<double>(dispatches.size()));
    EXPECT_EQ(wide.entities[0].value("launches").value_or(-1), static_cast<double>(dispatches.size()));
    const auto kernels = of_kind(lng, EntityKind::kernel);
    ASSERT_EQ(kernels.size(), 2u);
    ASSERT_EQ(of_kind(wide, EntityKind::kernel).size(), 2u);
    for (const Entity* k : kernels) {
        SCOPED_TRACE(k->name);
        const Entity* w = kernel_named(wide, k->name);
        ASSERT_NE(w, nullptr);
        for (const char* m : {"launches", "duration_total"}) EXPECT_EQ(metric(k, m), metric(w, m)) << m;
        std::size_t counters = 0;
        for (const Metric& m : k->metrics) {
            const std::string tool(m.tool_name().view());
            if (tool != "TCC_HIT_sum" && tool != "TCC_MISS_sum" && m.name() != "l2_hit_rate") continue;
            ++counters;
            const std::string name(m.name().view());
            EXPECT_EQ(k->value(name), w->value(name)) << name;
        }
        EXPECT_EQ(counters, 3u);  // both counters and the L2 hit rate made from them
    }
    // A counter collection's replayed dispatches are no timeline: both say so, the long one too.
    for (const RunBatch* b : {&lng, &wide})
        EXPECT_NE(std::find_if(b->notes.begin(), b->notes.end(),
                               [](const std::string& n) { return n.starts_with("counter collection serializes"); }),
                  b->notes.end());
}

}  // namespace perfwatch::test
