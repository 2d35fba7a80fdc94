#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "collectors/nsight_compute/ncu_text.hpp"
#include "tests/collectors/ncu_helpers.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

// Values below were read by hand from the files named in each test.

TEST(NcuText, CorpusL4Basic2025) {
    PERFWATCH_CORPUS_FILE(path, "ncu/text_L4-cc89_ncu2025_fp16_wmma_512_basic.txt");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format, "ncu-text");
    ASSERT_EQ(of_kind(b, EntityKind::launch).size(), 1u);
    const Entity* k = kernel_named(b, "wmma_db(const __half *, const __half *, float *, int, int, int)");
    ASSERT_NE(k, nullptr);
    EXPECT_DOUBLE_EQ(metric(k, "duration_total"), 184510);  // 184.51 us
    EXPECT_DOUBLE_EQ(metric(k, "sm_frequency"), 794.61e6);  // Mhz
    EXPECT_DOUBLE_EQ(metric(k, "dram_frequency"), 6.24e9);  // Ghz
    EXPECT_DOUBLE_EQ(metric(k, "registers_per_thread"), 56);
    EXPECT_DOUBLE_EQ(metric(k, "occupancy_theoretical"), 66.67);
    EXPECT_DOUBLE_EQ(metric(k, "occupancy_achieved"), 59.45);
    EXPECT_DOUBLE_EQ(metric(k, "waves_per_sm"), 2.21);
    EXPECT_DOUBLE_EQ(metric(k, "shared_mem_config_size"), 102400);       // 102.40 Kbyte
    EXPECT_DOUBLE_EQ(metric(k, "shared_mem_static_per_block"), 16380);  // 16.38 Kbyte/block
    EXPECT_EQ(k->attributes.at("grid"), "8x16x4");
    EXPECT_EQ(k->attributes.at("block"), "256x1x1");
    EXPECT_EQ(k->attributes.at("cc"), "8.9");
    EXPECT_EQ(k->attributes.at("occupancy_limiter"), "registers");

    const Entity* launch = of_kind(b, EntityKind::launch)[0];
    ASSERT_EQ(launch->tool_findings.size(), 3u);
    EXPECT_EQ(launch->tool_findings[0].type, "INF");
    EXPECT_EQ(launch->tool_findings[1].type, "OPT");
    EXPECT_DOUBLE_EQ(launch->tool_findings[1].speedup_pct.value_or(0), 33.33);
    EXPECT_EQ(launch->tool_findings[1].speedup_type, "global");
    EXPECT_NE(launch->tool_findings[1].text.find("partial wave of 48 thread blocks"), std::string::npos)
        << "wrapped rule text is joined: " << launch->tool_findings[1].text;
    EXPECT_EQ(launch->tool_findings[2].speedup_type, "local");
}

TEST(NcuText, CorpusL4TwoLaunchesOfOneKernel) {
    PERFWATCH_CORPUS_FILE(path, "ncu/text_L4-cc89_ncu2025_fp16_wmma_8192_full.txt");
    const RunBatch b = collect_ok(path);
    const auto launches = of_kind(b, EntityKind::launch);
    ASSERT_EQ(launches.size(), 2u);
    ASSERT_EQ(of_kind(b, EntityKind::kernel).size(), 1u);
    const Entity* k = of_kind(b, EntityKind::kernel)[0];
    EXPECT_DOUBLE_EQ(metric(k, "launches"), 2);
    EXPECT_DOUBLE_EQ(metric(k, "duration_total"), 63580 + 1.65e9);  // 63.58 us + 1.65 s
    EXPECT_DOUBLE_EQ(metric(k, "duration_min"), 63580);
    EXPECT_DOUBLE_EQ(metric(k, "duration_max"), 1.65e9);
    // Launch configuration of a mixed kernel is that of its dominant launch.
    EXPECT_DOUBLE_EQ(metric(k, "grid_size"), 131072);
    EXPECT_DOUBLE_EQ(metric(launches[0], "waves_per_sm"), 0.55);
    EXPECT_DOUBLE_EQ(metric(launches[1], "waves_per_sm"), 564.97);
    EXPECT_DOUBLE_EQ(metric(launches[1], "instructions_executed"), 36937138176);
    EXPECT_EQ(launches[0]->attributes.at("id"), "0");
    EXPECT_EQ(launches[1]->attributes.at("id"), "1");
    EXPECT_EQ(launches[0]->tool_findings.size(), 13u);
    EXPECT_EQ(launches[1]->tool_findings.size(), 10u);
    // The clocks the file states (SM Frequency 800.49 and 802.99 MHz), weighted by each launch's
    // duration, for the kernel and for the run: what a clock change against the baseline is judged on.
    const double clock = (800.49e6 * 63580 + 802.99e6 * 1.65e9) / (63580 + 1.65e9);
    EXPECT_NEAR(metric(k, "sm_frequency"), clock, 1e-6 * clock);
    const Entity* run = of_kind(b, EntityKind::run)[0];
    EXPECT_NEAR(metric(run, "sm_frequency"), clock, 1e-6 * clock);
}

TEST(NcuText, Corpus2021ThousandsSeparatorsAndWrnLines) {
    PERFWATCH_CORPUS_FILE(path, "ncu/text_RTX3070-cc86_ncu2021_reductions_8M_default.txt");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(of_kind(b, EntityKind::launch).size(), 3u);
    const Entity* atomic = kernel_named(b, "atomic_red(const float *, float *)");
    ASSERT_NE(atomic, nullptr);
    EXPECT_DOUBLE_EQ(metric(atomic, "duration_total"), 30.51e6);  // 30.51 msecond
    EXPECT_DOUBLE_EQ(metric(atomic, "elapsed_cycles"), 23795850);
    EXPECT_DOUBLE_EQ(metric(atomic, "grid_size"), 32768);
    EXPECT_DOUBLE_EQ(metric(atomic, "threads"), 8388608);
    EXPECT_DOUBLE_EQ(metric(atomic, "memory_throughput"), 2.07);  // "Memory [%]"
    EXPECT_DOUBLE_EQ(metric(atomic, "sm_throughput"), 0.88);      // "Compute (SM) [%]"
    EXPECT_DOUBLE_EQ(metric(atomic, "sm_frequency"), 779.96e6);   // cycle/usecond
    EXPECT_DOUBLE_EQ(metric(atomic, "dram_frequency"), 5.99e9);   // cycle/nsecond
    EXPECT_DOUBLE_EQ(metric(atomic, "occupancy_achieved"), 80.71);
    EXPECT_EQ(atomic->attributes.at("function_cache_configuration"), "cudaFuncCachePreferNone");
    const Entity* reduce_a = kernel_named(b, "reduce_a(float *, float *)");
    EXPECT_DOUBLE_EQ(metric(reduce_a, "duration_total"), 114850);
    ASSERT_TRUE(b.captured_at.has_value());
    EXPECT_EQ(*b.captured_at, "2022-06-03T11:31:08");
    const auto launches = of_kind(b, EntityKind::launch);
    EXPECT_EQ(launches[2]->attributes.at("id"), "2");
    ASSERT_EQ(launches[0]->tool_findings.size(), 2u);
    EXPECT_EQ(launches[0]->tool_findings[0].type, "WRN");
    EXPECT_EQ(launches[0]->tool_findings[0].section, "GPU Speed Of Light Throughput");
    EXPECT_FALSE(launches[0]->tool_findings[0].speedup_pct.has_value());
}

TEST(NcuText, Corpus2019NanValuesAndNoHeaderRow) {
    PERFWATCH_CORPUS_FILE(path, "ncu/text_P40-cc61_ncu2019_vector_add_default.txt");
    const RunBatch b = collect_ok(path);
    ASSERT_EQ(of_kind(b, EntityKind::launch).size(), 1u);
    const Entity* k = kernel_named(b, "vadd(float const *,float const *,float*,int)");
    ASSERT_NE(k, nullptr);
    EXPECT_DOUBLE_EQ(metric(k, "duration_total"), 7.85e9);  // 7.85 second
    EXPECT_DOUBLE_EQ(metric(k, "dram_frequency"), 7.10e9);  // "Memory Frequency" Ghz
    EXPECT_DOUBLE_EQ(metric(k, "dram_throughput"), 0.03);   // "SOL FB"
    EXPECT_DOUBLE_EQ(metric(k, "l2_hit_rate"), 91.67);
    EXPECT_DOUBLE_EQ(metric(k, "dram_bandwidth"), 90.56e6);  // Mbyte/second
    EXPECT_FALSE(k->value("elapsed_cycles").has_value()) << "(!) nan is missing, not a number";
    EXPECT_FALSE(k->value("sm_throughput").has_value());
    EXPECT_EQ(of_kind(b, EntityKind::launch)[0]->attributes.at("id"), "1");  // ==PROF== ... - 1:
    EXPECT_EQ(b.captured_at.value_or(""), "2022-06-02T19:22:05");
}

TEST(NcuText, CorpusPrintSummaryPerGpu) {
    PERFWATCH_CORPUS_FILE(path, "ncu/summary_A100-cc80_ncu2022_raytrace_cuda_per-gpu.log");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format, "ncu-summary");
    const auto kernels = of_kind(b, EntityKind::kernel);
    ASSERT_EQ(kernels.size(), 1u);
    const Entity* k = kernels[0];
    EXPECT_EQ(k->name, "PathTracer(int, Pixel *, int)");
    EXPECT_DOUBLE_EQ(metric(k, "launches"), 1);  // "1 invocations"
    EXPECT_DOUBLE_EQ(metric(k, "duration_total"), 11.865617e9);
    EXPECT_DOUBLE_EQ(metric(k, "registers_per_thread"), 73);
    EXPECT_DOUBLE_EQ(metric(k, "occupancy_theoretical"), 37.5);
    EXPECT_DOUBLE_EQ(metric(k, "occupancy_achieved"), 34.834445);
    EXPECT_DOUBLE_EQ(metric(k, "l2_hit_rate"), 97.267316);
    EXPECT_DOUBLE_EQ(metric(k, "block_size"), 256);
    EXPECT_DOUBLE_EQ(metric(k, "grid_size"), 8192);
    // 393.216 Kbyte of excessive sectors = 12288 sectors of 32 bytes.
    EXPECT_DOUBLE_EQ(metric(k, "global_sectors_excessive"), 12288);
    EXPECT_DOUBLE_EQ(metric(k, "global_sectors_ideal"), 196608);
    EXPECT_EQ(k->attributes.at("occupancy_limiter"), "registers");
    EXPECT_TRUE(of_kind(b, EntityKind::launch).empty());
}

TEST(NcuText, MetricsOutput) {
    const RunBatch b = collect_ok(fixture("ncu/metrics_output.txt"));
    EXPECT_EQ(b.format_detail, "--metrics output");
    const Entity* k = kernel_named(b, "histogram_atomic(const unsigned char *, unsigned int *, int)");
    ASSERT_NE(k, nullptr);
    EXPECT_DOUBLE_EQ(metric(k, "launches"), 2);
    EXPECT_DOUBLE_EQ(metric(k, "duration_total"), 412350 + 390000);
    EXPECT_DOUBLE_EQ(metric(k, "registers_per_thread"), 18);
    EXPECT_DOUBLE_EQ(metric(k, "dram__bytes_read_sum"), 16.78e6);
}

TEST(NcuText, PrintSummaryPerKernel) {
    const RunBatch b = collect_ok(fixture("ncu/summary_per_kernel.txt"));
    EXPECT_EQ(b.format_detail, "--print-summary per-kernel");
    const Entity* nbody = kernel_named(b, "integrate_bodies(float4 *, float4 *, float, int)");
    ASSERT_NE(nbody, nullptr);
    EXPECT_DOUBLE_EQ(metric(nbody, "launches"), 10);
    EXPECT_DOUBLE_EQ(metric(nbody, "duration_mean"), 889920);
    EXPECT_DOUBLE_EQ(metric(nbody, "duration_total"), 8899200);
    EXPECT_DOUBLE_EQ(metric(nbody, "memory_throughput"), 2.15);
    EXPECT_DOUBLE_EQ(metric(nbody, "sm_count"), 80);
    const Entity* reset = kernel_named(b, "reset_forces(float4 *, int)");
    EXPECT_DOUBLE_EQ(metric(reset, "launches"), 1);
}

// ncu names each profiled launch in a "==PROF== Profiling" line with its launch id; a profile that
// failed has its line and no result. Each result takes the id of the next line naming its kernel.
// The log is the corpus 2021 report with a failed profile of another kernel added between
// atomic_red's and reduce_a's.
TEST(NcuText, LaunchIdsComeFromTheProfilingLineNamingTheKernel) {
    PERFWATCH_CORPUS_FILE(path, "ncu/text_RTX3070-cc86_ncu2021_reductions_8M_default.txt");
    std::string text = read_file(path);
    const std::string failed = "==PROF== Profiling \"reduce_b(float *, float *)\" - 1: 0%....50%\n";
    const std::size_t second = text.find("==PROF== Profiling \"reduce_a");
    ASSERT_NE(second, std::string::npos);
    text.insert(second, failed);
    // The later lines' ids move up by one, as ncu would have numbered them.
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"(float *, float *)\" - 1: 0%....50%....100%",
                                                                       "(float *, float *)\" - 2: 0%....50%....100%"},
                                   {"reduce_ws(float *, float *)\" - 2:", "reduce_ws(float *, float *)\" - 3:"}}) {
        const std::size_t at = text.find(from);
        ASSERT_NE(at, std::string::npos) << from;
        text.replace(at, from.size(), to);
    }
    auto b = collect_content("failed_profile.txt", text);
    ASSERT_TRUE(b) << b.error().to_string();
    std::map<std::string, std::string> id_of;
    for (const Entity* l : of_kind(*b, EntityKind::launch)) id_of[l->name.substr(0, l->name.find('('))] = l->attributes.at("id");
    EXPECT_EQ(id_of["atomic_red"], "0");
    EXPECT_EQ(id_of["reduce_a"], "2");
    EXPECT_EQ(id_of["reduce_ws"], "3");
}

TEST(NcuText, TruncatedReportIsAnError) {
    PERFWATCH_CORPUS_FILE(path, "ncu/text_L4-cc89_ncu2025_fp16_wmma_512_basic.txt");
    const std::string text = read_file(path);
    const std::size_t cut = text.find("Registers Per Thread");  // inside the Launch Statistics table
    auto r = collect_content("cut.txt", text.substr(0, cut));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().file, "cut.txt");
    EXPECT_GT(r.error().line, 30u);
    EXPECT_NE(r.error().message.find("Launch Statistics"), std::string::npos) << r.error().message;

    const std::size_t after_kernel = text.find("    Section: GPU Speed Of Light Throughput");
    auto r2 = collect_content("cut2.txt", text.substr(0, after_kernel));
    ASSERT_FALSE(r2.has_value());
    EXPECT_NE(r2.error().message.find("no metric table"), std::string::npos) << r2.error().message;
}

// An ncu --metrics log amid the program's own output (issue 48): a banner of '=' lines and a
// results table between '-' rulers ("1a. Execution Time (wall)  2053.776 ms") before the first
// result, CRLF line ends. Every result is read: the launches and their time are counted here from
// the fixture's kernel lines and gpu__time_duration.sum rows (18 launches of 2 kernels).
TEST(NcuText, MetricsAmidProgramOutputReadEveryLaunch) {
    const std::string path = fixture("ncu/metrics_amid_program_output.txt");
    double launches = 0, time_ns = 0;
    std::map<std::string, double> per_kernel;
    std::istringstream in(read_file(path));
    for (std::string line; std::getline(in, line);) {
        if (const auto ctx = line.find(", Context "); ctx != std::string::npos) {
            ++launches;
            ++per_kernel[line.substr(2, line.rfind(" (", line.find(")x(")) - 2)];
        }
        if (const auto at = line.find("gpu__time_duration.sum"); at != std::string::npos)
            time_ns += std::stod(line.substr(line.find_last_of(' ', line.find_last_not_of(" \r")) + 1)) * 1000;
    }
    ASSERT_EQ(launches, 18);
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format_detail, "--metrics output");
    EXPECT_DOUBLE_EQ(b.entities[0].value("launches").value_or(-1), launches);
    double total = 0;
    ASSERT_EQ(of_kind(b, EntityKind::kernel).size(), per_kernel.size());
    for (const auto& [name, n] : per_kernel) {
        EXPECT_DOUBLE_EQ(metric(kernel_named(b, name), "launches"), n) << name;
        total += metric(kernel_named(b, name), "duration_total");
    }
    EXPECT_NEAR(total, time_ns, 1e-6 * time_ns);
}

// A log of ncu's progress lines whose results went to an .ncu-rep (-o) says so, with the number
// of launches it lists (3 "==PROF== Profiling" lines), the report file and how to convert it.
TEST(NcuText, AProgressOnlyLogNamesItsReportFile) {
    const auto r = collect_file(fixture("ncu/progress_only.txt"));
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("progress-only ncu log: 3 launch(es) listed"), std::string::npos)
        << r.error().message;
    EXPECT_NE(r.error().message.find("/home/ci/gemm/ncu_analysis.ncu-rep"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("ncu --import"), std::string::npos) << r.error().message;
}

// A failed profile (ERR_NVGPUCTRPERM: no permission for the GPU counters) is refused with ncu's
// own ==ERROR== text and what it means, not as an unrecognised file.
TEST(NcuText, AFailedProfileIsToldWithItsErrorText) {
    const auto r = collect_file(fixture("ncu/failed_profile.txt"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().line, 2u);
    EXPECT_NE(r.error().message.find("failed profile: ncu reported 1 error(s), the first at line 2: ==ERROR== "
                                     "ERR_NVGPUCTRPERM - The user does not have permission"),
              std::string::npos)
        << r.error().message;
    EXPECT_NE(r.error().message.find("no permission to access the GPU performance counters"), std::string::npos);
}

// --print-summary per-kernel as ncu 2024 prints it: "NAME (grid)x(block), Device 0, CC 8.9,
// Invocations N". Launches are the invocations (14 + 275), time their count times the average.
TEST(NcuText, PrintSummaryPerKernel2024Layout) {
    const RunBatch b = collect_ok(fixture("ncu/summary_per_kernel_2024.txt"));
    EXPECT_EQ(b.format_detail, "--print-summary per-kernel");
    EXPECT_DOUBLE_EQ(b.entities[0].value("launches").value_or(-1), 14 + 275);
    const Entity* add = kernel_named(b, "add_heat_kernel_1d(float *, int)");
    EXPECT_DOUBLE_EQ(metric(add, "launches"), 14);
    EXPECT_NEAR(metric(add, "duration_total"), 14 * 1750.0, 1e-6);
    const Entity* sim = kernel_named(b, "heat_kernel_1d_sim(float *, float *, int)");
    EXPECT_DOUBLE_EQ(metric(sim, "launches"), 275);
    EXPECT_NEAR(metric(sim, "duration_total"), 275 * 3500.0, 1e-6);
}

}  // namespace perfwatch::test
