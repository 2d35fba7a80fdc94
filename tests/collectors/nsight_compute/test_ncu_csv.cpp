#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "collectors/nsight_compute/ncu_csv.hpp"
#include "tests/collectors/ncu_helpers.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

// Values below were read by hand from the files named in each test.

TEST(NcuCsv, CorpusB200DetailsWithRuleRows) {
    PERFWATCH_CORPUS_FILE(path, "ncu/csv-details_B200-cc100_ncu2025_cublaslt_gemm_rules.log");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format, "ncu-csv");
    ASSERT_EQ(of_kind(b, EntityKind::launch).size(), 1u);
    const auto kernels = of_kind(b, EntityKind::kernel);
    ASSERT_EQ(kernels.size(), 1u);
    const Entity* k = kernels[0];
    EXPECT_EQ(k->name,
              "cutlass3x_sm100_tensorop_s64x256x32gemm_f8_f8_f32_f16_f16_64x256x128_1x1x1_0_tnn_align4_1sm_bias_f16_"
              "relu_aux_scalemax");
    EXPECT_DOUBLE_EQ(metric(k, "launches"), 1);
    EXPECT_DOUBLE_EQ(metric(k, "duration_total"), 406240);
    EXPECT_DOUBLE_EQ(metric(k, "registers_per_thread"), 168);
    EXPECT_DOUBLE_EQ(metric(k, "occupancy_theoretical"), 18.75);
    EXPECT_DOUBLE_EQ(metric(k, "occupancy_achieved"), 15.53);
    EXPECT_DOUBLE_EQ(metric(k, "waves_per_sm"), 1.89);
    EXPECT_DOUBLE_EQ(metric(k, "grid_size"), 288);
    EXPECT_DOUBLE_EQ(metric(k, "shared_mem_dynamic_per_block"), 205696);
    EXPECT_DOUBLE_EQ(metric(k, "dram_frequency"), 3995313115.40);
    EXPECT_EQ(k->attributes.at("grid"), "9x32x1");
    EXPECT_EQ(k->attributes.at("function_cache_configuration"), "CachePreferNone");
    EXPECT_EQ(k->attributes.at("occupancy_limiter"), "registers and shared memory");

    // The tool's own rule rows stay with the launch: 8 of them, speedups as printed.
    const Entity* launch = of_kind(b, EntityKind::launch)[0];
    EXPECT_EQ(launch->attributes.at("id"), "0");
    ASSERT_EQ(launch->tool_findings.size(), 8u);
    bool seen_tail = false;
    for (const ToolFinding& f : launch->tool_findings) {
        if (f.rule == "TheoreticalOccupancy") {
            EXPECT_EQ(f.type, "OPT");
            EXPECT_EQ(f.speedup_type, "local");
            EXPECT_DOUBLE_EQ(f.speedup_pct.value_or(0), 81.25);
        }
        if (f.text.find("partial wave") != std::string::npos) {
            seen_tail = true;
            EXPECT_DOUBLE_EQ(f.speedup_pct.value_or(0), 50);
        }
    }
    EXPECT_TRUE(seen_tail);
    const auto devices = of_kind(b, EntityKind::device);
    ASSERT_EQ(devices.size(), 1u);
    EXPECT_DOUBLE_EQ(metric(devices[0], "sm_count"), 152);
}

// The report prints only the compute capability (CC column "10.0"): the run still names its GPU.
TEST(NcuCsv, AComputeCapabilityAloneNamesTheGpu) {
    PERFWATCH_CORPUS_FILE(path, "ncu/csv-details_B200-cc100_ncu2025_cublaslt_gemm_rules.log");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.labels.at("gpu"), "NVIDIA Blackwell GPU (compute capability 10.0)");
    const auto devices = of_kind(b, EntityKind::device);
    ASSERT_EQ(devices.size(), 1u);
    EXPECT_EQ(devices[0]->attributes.at("cc"), "10.0");
}

TEST(NcuCsv, Header2020WithThousandsSeparatorsAndProgramOutput) {
    const RunBatch b = collect_ok(fixture("ncu/details_2020_thousands.csv"));
    EXPECT_EQ(of_kind(b, EntityKind::launch).size(), 3u);
    const Entity* stencil = kernel_named(b, "stencil2d(float const*, float*, int, int)");
    ASSERT_NE(stencil, nullptr);
    EXPECT_DOUBLE_EQ(metric(stencil, "launches"), 2);
    // "1,234.56" usecond + "1.50" msecond
    EXPECT_DOUBLE_EQ(metric(stencil, "duration_total"), 1234560 + 1500000);
    EXPECT_DOUBLE_EQ(metric(stencil, "duration_min"), 1234560);
    EXPECT_DOUBLE_EQ(metric(stencil, "duration_max"), 1500000);
    EXPECT_DOUBLE_EQ(metric(stencil, "grid_size"), 4096);
    // Achieved occupancy is "(!) nan" on the second launch: the kernel keeps the first one's value.
    EXPECT_DOUBLE_EQ(metric(stencil, "occupancy_achieved"), 61.30);
    const Entity* reduce = kernel_named(b, "reduce_sum");
    EXPECT_DOUBLE_EQ(metric(reduce, "duration_total"), 8960);
    EXPECT_DOUBLE_EQ(metric(reduce, "block_size"), 1024);
    ASSERT_TRUE(b.captured_at.has_value());
    EXPECT_EQ(*b.captured_at, "2020-12-03T10:15:42");
}

TEST(NcuCsv, NvtxColumnAndRaggedRuleRows) {
    const RunBatch b = collect_ok(fixture("ncu/nvtx_ragged_2023.csv"));
    const Entity* k = kernel_named(b, "softmax_kernel<float, 128>(const float *, float *, int)");
    ASSERT_NE(k, nullptr);
    EXPECT_DOUBLE_EQ(metric(k, "duration_total"), 12290);
    EXPECT_DOUBLE_EQ(metric(k, "shared_mem_config_size"), 32770);
    EXPECT_DOUBLE_EQ(metric(k, "sm_count"), 132);
    const Entity* launch = of_kind(b, EntityKind::launch)[0];
    EXPECT_EQ(launch->attributes.at("id"), "3");
    ASSERT_EQ(launch->tool_findings.size(), 2u);
    EXPECT_DOUBLE_EQ(launch->tool_findings[0].speedup_pct.value_or(0), 69.70);
    EXPECT_FALSE(launch->tool_findings[1].speedup_pct.has_value());
}

TEST(NcuRawCsv, UnitsRowAndWideColumns) {
    const RunBatch b = collect_ok(fixture("ncu/raw_page.csv"));
    EXPECT_EQ(b.format, "ncu-raw-csv");
    EXPECT_EQ(of_kind(b, EntityKind::launch).size(), 3u);
    const Entity* gemm = kernel_named(b, "sgemm_naive(int, int, int, const float *, const float *, float *)");
    ASSERT_NE(gemm, nullptr);
    EXPECT_DOUBLE_EQ(metric(gemm, "launches"), 2);
    EXPECT_DOUBLE_EQ(metric(gemm, "duration_total"), 3204100 + 3198720);
    EXPECT_DOUBLE_EQ(metric(gemm, "grid_size"), 4096);
    EXPECT_DOUBLE_EQ(metric(gemm, "registers_per_thread"), 38);
    EXPECT_DOUBLE_EQ(metric(gemm, "sm_count"), 108);
    EXPECT_DOUBLE_EQ(metric(gemm, "dram__bytes_sum"), 268.44e6);
    EXPECT_EQ(gemm->attributes.at("launch__func_cache_pref"), "CachePreferNone");
    EXPECT_DOUBLE_EQ(metric(kernel_named(b, "add_bias(float *, const float *, int)"), "grid_size"), 16384);
}

// A raw page of 40,000 text-valued columns, named in descending order, over 10 launches: each
// launch keeps them all, in key order, and the kernel those its launches share. (A launch's text
// values are gathered in a tree and made flat once: inserted one at a time into the flat list in
// this order, each would move every entry before it, 18 s here in Release against 0.6 s.)
TEST(NcuRawCsv, LaunchesOfTensOfThousandsOfTextValues) {
    constexpr int k_columns = 40000, k_launches = 10;
    std::string header = R"("ID","Process ID","Kernel Name","Device","CC")", units = R"("","","","","")";
    std::vector<std::string> rows;
    for (int l = 0; l < k_launches; ++l) rows.push_back(fmt::format(R"("{}","9001","wide_kernel","0","8.0")", l));
    for (int c = k_columns - 1; c >= 0; --c) {
        header += fmt::format(R"(,"t__{:05}")", c);
        units += R"(,"")";
        for (int l = 0; l < k_launches; ++l)
            rows[static_cast<std::size_t>(l)] += fmt::format(R"(,"{}")", c % 2 == 0 || l == 0 ? fmt::format("v{}", c) : "other");
    }
    std::string content = header + "\n" + units + "\n";
    for (const std::string& r : rows) content += r + "\n";
    auto b = collect_content("wide_raw_page.csv", content);
    ASSERT_TRUE(b) << b.error().to_string();
    EXPECT_EQ(b->format, "ncu-raw-csv");
    const auto launches = of_kind(*b, EntityKind::launch);
    ASSERT_EQ(launches.size(), static_cast<std::size_t>(k_launches));
    for (const Entity* l : launches) {
        EXPECT_EQ(l->attributes.at("t__00000"), "v0");
        EXPECT_EQ(l->attributes.at("t__39998"), "v39998");
        EXPECT_TRUE(std::is_sorted(l->attributes.begin(), l->attributes.end(),
                                   [](const auto& x, const auto& y) { return x.first < y.first; }));
    }
    EXPECT_EQ(launches[0]->attributes.at("t__39999"), "v39999");
    EXPECT_EQ(launches[1]->attributes.at("t__39999"), "other");
    const Entity* kernel = kernel_named(*b, "wide_kernel");
    ASSERT_NE(kernel, nullptr);
    EXPECT_EQ(kernel->attributes.at("t__00002"), "v2");  // even columns agree
    EXPECT_FALSE(kernel->attributes.contains("t__00001"));
    std::size_t shared = 0;
    for (const auto& [k, v] : kernel->attributes) shared += k.starts_with("t__") ? 1 : 0;
    EXPECT_EQ(shared, static_cast<std::size_t>(k_columns / 2));
}

TEST(NcuCsv, ErrorsNameTheLine) {
    TempDir dir;
    const std::string text = read_file(fixture("ncu/nvtx_ragged_2023.csv"));
    // Cut inside a quoted field of the fifth line.
    const std::size_t cut = text.find("\"Memory Throughput\"") + 5;
    auto r = collect_content("cut.csv", text.substr(0, cut));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().file, "cut.csv");
    EXPECT_EQ(r.error().line, 5u);
    EXPECT_NE(r.error().message.find("unterminated"), std::string::npos) << r.error().message;

    // A row with too few fields.
    auto short_row = collect_content("short.csv", text.substr(0, text.find("\"GPU Speed Of Light Throughput\",\"Duration\"")) + "\n");
    ASSERT_FALSE(short_row.has_value());
    EXPECT_EQ(short_row.error().line, 4u);
    EXPECT_NE(short_row.error().message.find("expected at least"), std::string::npos);
}

}  // namespace perfwatch::test

namespace perfwatch::test {

TEST(NcuCsv, ExcessiveSectorsComeFromTheUncoalescedRuleText) {
    const std::string csv =
        "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","
        "\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\","
        "\"Rule Type\",\"Rule Description\",\"Estimated Speedup Type\",\"Estimated Speedup\"\n"
        "\"0\",\"1\",\"p\",\"h\",\"k\",\"1\",\"7\",\"(32, 1, 1)\",\"(4, 1, 1)\",\"0\",\"8.0\",\"GPU Speed Of Light "
        "Throughput\",\"Duration\",\"ns\",\"1000\",\n"
        "\"0\",\"1\",\"p\",\"h\",\"k\",\"1\",\"7\",\"(32, 1, 1)\",\"(4, 1, 1)\",\"0\",\"8.0\",\"SourceCounters\",\"\",\"\","
        "\"\",\"UncoalescedGlobalAccess\",\"OPT\",\"This kernel has uncoalesced global accesses resulting in a total of "
        "1,200 excessive sectors (60% of the total 2,000 sectors).\",\"global\",\"60\"\n";
    auto b = collect_content("k.csv", csv);
    ASSERT_TRUE(b) << b.error().to_string();
    const Entity* k = kernel_named(*b, "k");
    EXPECT_DOUBLE_EQ(metric(k, "global_sectors_excessive"), 1200);
    EXPECT_DOUBLE_EQ(metric(k, "global_sectors_ideal"), 800);
}

namespace {

const std::string k_details_header =
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","
    "\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n";

std::string details_row(int id, const std::string& kernel, const std::string& metric, const std::string& unit,
                        double value) {
    return fmt::format("\"{}\",\"1\",\"p\",\"h\",\"{}\",\"1\",\"7\",\"(32, 1, 1)\",\"(4, 1, 1)\",\"0\",\"8.0\","
                       "\"Section\",\"{}\",\"{}\",\"{}\"\n",
                       id, kernel, metric, unit, value);
}

}  // namespace

// Past k_max_launch_entities launches, only the kernels' figures grow: every launch counts in
// them (sums taken here from the values written), and a note says how many launches kept entities.
TEST(NcuCsv, LaunchesPastTheLimitCountInTheirKernelsOnly) {
    const int n = static_cast<int>(k_max_launch_entities) + 500;
    std::string csv = k_details_header;
    std::map<std::string, std::pair<double, double>> expected;  // kernel -> (launches, total ns)
    for (int i = 0; i < n; ++i) {
        const std::string kernel = i % 3 == 0 ? "a" : "b";
        const double ns = 1000 + (i % 7) * 10;
        csv += details_row(i, kernel, "Duration", "nsecond", ns);
        csv += details_row(i, kernel, "Registers Per Thread", "register/thread", 32);
        expected[kernel].first += 1;
        expected[kernel].second += ns;
    }
    auto b = collect_content("many.csv", csv);
    ASSERT_TRUE(b) << b.error().to_string();
    EXPECT_EQ(of_kind(*b, EntityKind::launch).size(), k_max_launch_entities);
    for (const auto& [name, e] : expected) {
        const Entity* k = kernel_named(*b, name);
        ASSERT_NE(k, nullptr) << name;
        EXPECT_DOUBLE_EQ(metric(k, "launches"), e.first) << name;
        EXPECT_DOUBLE_EQ(metric(k, "duration_total"), e.second) << name;
        EXPECT_DOUBLE_EQ(metric(k, "registers_per_thread"), 32) << name;
    }
    EXPECT_DOUBLE_EQ(b->entities[0].value("launches").value_or(-1), n);
    const std::string note = fmt::format("launch entities are kept for the first {} of {} launches",
                                         k_max_launch_entities, n);
    EXPECT_TRUE(std::any_of(b->notes.begin(), b->notes.end(), [&](const std::string& t) { return t.starts_with(note); }))
        << ::testing::PrintToString(b->notes);
}

// Rows of neighbouring launches may interleave; a launch's rows coming back long after it closed
// are an error naming the line.
TEST(NcuCsv, InterleavedLaunchRowsAndALaunchThatComesBack) {
    std::string csv = k_details_header + details_row(0, "a", "Duration", "nsecond", 100) +
                      details_row(1, "b", "Duration", "nsecond", 200) +
                      details_row(0, "a", "Registers Per Thread", "register/thread", 16) +
                      details_row(1, "b", "Registers Per Thread", "register/thread", 64);
    auto b = collect_content("mixed.csv", csv);
    ASSERT_TRUE(b) << b.error().to_string();
    EXPECT_DOUBLE_EQ(metric(kernel_named(*b, "a"), "registers_per_thread"), 16);
    EXPECT_DOUBLE_EQ(metric(kernel_named(*b, "b"), "registers_per_thread"), 64);
    EXPECT_EQ(of_kind(*b, EntityKind::launch).size(), 2u);

    std::string back = k_details_header;
    for (int i = 0; i < 100; ++i) back += details_row(i, "k", "Duration", "nsecond", 100);
    back += details_row(0, "k", "Registers Per Thread", "register/thread", 16);
    auto r = collect_content("back.csv", back);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().line, 102u) << r.error().to_string();
    EXPECT_NE(r.error().message.find("rows of launch 0 appear again"), std::string::npos) << r.error().to_string();
}

}  // namespace perfwatch::test
