#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <set>
#include <sstream>

#include "collectors/nsight_systems/nsys_stats.hpp"
#include "tests/collectors/ncu_helpers.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

const Entity* named(const RunBatch& b, EntityKind kind, const std::string& name) {
    for (const Entity& e : b.entities)
        if (e.kind == kind && e.name == name) return &e;
    return nullptr;
}

// The test's own reading of a text kernel table: after the last line containing `title`, the rows
// below the dash line; "Total Time (ns)" is the second number and the instances the third.
std::pair<double, double> last_kernel_table(const std::string& path, const std::string& title) {
    std::istringstream in(read_file(path));
    std::string line;
    std::vector<std::string> lines;
    while (std::getline(in, line)) lines.push_back(line);
    std::size_t at = 0;
    for (std::size_t i = 0; i < lines.size(); ++i)
        if (lines[i].find(title) != std::string::npos) at = i;
    static const std::regex k_row(R"(^\s*[0-9.]+\s+([0-9,]+)\s+([0-9,]+)\s)");
    double launches = 0, total = 0;
    bool in_rows = false;
    for (std::size_t i = at + 1; i < lines.size(); ++i) {
        if (lines[i].find("-------") != std::string::npos) {
            in_rows = true;
            continue;
        }
        if (!in_rows) continue;
        std::smatch m;
        if (!std::regex_search(lines[i], m, k_row)) break;
        auto number = [](std::string s) {
            std::erase(s, ',');
            return std::stod(s);
        };
        total += number(m[1]);
        launches += number(m[2]);
    }
    return {launches, total};
}

// The test's own reading of every kernel summary table in a log, whatever stands before each
// line (comment markers, timestamps): the header holding "Instances", its dash line, then rows
// of numbers (the second the total time, the third the instances) until a line that is not one.
std::vector<std::pair<double, double>> kernel_tables(const std::string& path) {
    std::istringstream in(read_file(path));
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    static const std::regex k_row(R"((?:^|\s)[0-9.]+\s+([0-9,]+)\s+([0-9,]+)\s+[0-9,.]+\s)");
    auto number = [](std::string s) {
        std::erase(s, ',');
        return std::stod(s);
    };
    std::vector<std::pair<double, double>> tables;
    for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
        if (lines[i].find("Instances") == std::string::npos || lines[i + 1].find("--------") == std::string::npos ||
            lines[i].find("Range") != std::string::npos)  // NVTX ranges have instances too
            continue;
        double launches = 0, total = 0;
        std::size_t j = i + 2;
        for (std::smatch m; j < lines.size() && std::regex_search(lines[j], m, k_row); ++j) {
            total += number(m[1]);
            launches += number(m[2]);
        }
        tables.emplace_back(launches, total);
        i = j;
    }
    return tables;
}

bool has_note(const RunBatch& b, const std::string& text) {
    return std::any_of(b.notes.begin(), b.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

}  // namespace

TEST(NsysStats, Corpus2020TextInsideALog) {
    PERFWATCH_CORPUS_FILE(path, "nsys/mnicely-transfer_examples_README_nsys2020_stats_text.md");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format, "nsys-stats");
    const auto [launches, total] = last_kernel_table(path, "CUDA Kernel Statistics:");
    ASSERT_GT(launches, 0);
    EXPECT_DOUBLE_EQ(b.entities[0].value("launches").value_or(-1), launches);
    EXPECT_NEAR(b.entities[0].value("gpu_time").value_or(-1), total, total * 0.001);
    // "by size in KiB": 31,457,280 KiB each way.
    const Entity* htod = named(b, EntityKind::memcpy, "[CUDA memcpy HtoD]");
    ASSERT_NE(htod, nullptr);
    EXPECT_DOUBLE_EQ(metric(htod, "bytes"), 31457280.0 * 1024);
    EXPECT_DOUBLE_EQ(metric(htod, "count"), 30);
    const Entity* sync = named(b, EntityKind::api_call, "cudaStreamSynchronize");
    ASSERT_NE(sync, nullptr);
    EXPECT_EQ(sync->attributes.at("synchronizing"), "true");
    EXPECT_DOUBLE_EQ(metric(sync, "duration_total"), 7935281846);
    EXPECT_EQ(of_kind(b, EntityKind::nvtx_range).size(), 9u);
}

TEST(NsysStats, Corpus2025SeveralSessionsReadsTheLast) {
    PERFWATCH_CORPUS_FILE(path, "nsys/ayush-os_deep-dive_README_nsys_stats_text_2025.md");
    const RunBatch b = collect_ok(path);
    const auto [launches, total] = last_kernel_table(path, "Executing 'cuda_gpu_kern_sum'");
    ASSERT_GT(launches, 0);
    EXPECT_DOUBLE_EQ(b.entities[0].value("launches").value_or(-1), launches);
    EXPECT_NEAR(b.entities[0].value("gpu_time").value_or(-1), total, total * 0.001);
    ASSERT_FALSE(b.notes.empty());
    EXPECT_NE(b.notes[0].find("5 nsys stats sessions"), std::string::npos) << b.notes[0];
    EXPECT_NE(b.notes[0].find("vector_add_profile_streamed.nsys-rep"), std::string::npos) << b.notes[0];
    // The 2023+ layout: medians, standard deviations and the NVTX style column.
    const Entity* k = of_kind(b, EntityKind::kernel).at(0);
    EXPECT_DOUBLE_EQ(metric(k, "duration_median"), 27904.0);
    EXPECT_DOUBLE_EQ(metric(k, "duration_std"), 52212.4);
    const auto ranges = of_kind(b, EntityKind::nvtx_range);
    ASSERT_FALSE(ranges.empty());
    EXPECT_EQ(ranges[0]->attributes.at("style"), "PushPop");
    // OS runtime calls are kept apart from CUDA API calls.
    const Entity* sem = named(b, EntityKind::api_call, "sem_wait");
    ASSERT_NE(sem, nullptr);
    EXPECT_EQ(sem->attributes.at("domain"), "os_runtime");
}

TEST(NsysStats, AnnouncedReportWithoutTableIsANote) {
    const std::string text =
        "[3/4] Executing 'osrt_sum' stats report\n\n"
        " Time (%)  Total Time (ns)  Num Calls  Avg (ns)  Name\n"  // the log was cut after the header
        "[4/4] Executing 'cuda_gpu_kern_sum' stats report\n\n"
        " Time (%)  Total Time (ns)  Instances  Avg (ns)  Name\n"
        " --------  ---------------  ---------  --------  ----\n"
        "    100.0            1,000         10     100.0  k   \n";
    auto b = nsys_stats_collector().collect("cut.log", text);
    ASSERT_TRUE(b) << b.error().to_string();
    ASSERT_EQ(b->notes.size(), 1u);
    EXPECT_EQ(b->notes[0], "line 1: 'osrt_sum' announced but no table follows");
    EXPECT_DOUBLE_EQ(b->entities[0].value("launches").value_or(-1), 10);
}

TEST(NsysStats, Text2021Generation) {
    const RunBatch b = collect_ok(fixture("nsys/stats_2021_text.txt"));
    EXPECT_EQ(b.format_detail, "text, 2020/2021 report names");
    const Entity* saxpy = kernel_named(b, "saxpy(int, float, float *, float *)");
    ASSERT_NE(saxpy, nullptr);
    EXPECT_DOUBLE_EQ(metric(saxpy, "launches"), 500);
    EXPECT_DOUBLE_EQ(metric(saxpy, "duration_total"), 3000000);
    EXPECT_DOUBLE_EQ(metric(saxpy, "duration_std"), 120.5);
    EXPECT_FALSE(saxpy->value("duration_median"));
    EXPECT_DOUBLE_EQ(b.entities[0].value("gpu_time").value_or(-1), 4000000);
    EXPECT_DOUBLE_EQ(b.entities[0].value("sync_api_calls").value_or(-1), 50);
    EXPECT_DOUBLE_EQ(b.entities[0].value("api_calls").value_or(-1), 1052);
    // Sizes in KiB join the timed operations by name.
    const Entity* htod = named(b, EntityKind::memcpy, "[CUDA memcpy HtoD]");
    ASSERT_NE(htod, nullptr);
    EXPECT_DOUBLE_EQ(metric(htod, "bytes"), 8192.0 * 1024);
    EXPECT_DOUBLE_EQ(metric(htod, "bandwidth"), 8192.0 * 1024 * 1e9 / 600000);
    EXPECT_EQ(htod->attributes.at("direction"), "HtoD");
}

TEST(NsysStats, Text2022MergesLaunchConfigurations) {
    const RunBatch b = collect_ok(fixture("nsys/stats_2022_text.txt"));
    EXPECT_EQ(b.format_detail, "text, 2022 report names");
    const Entity* relu = kernel_named(b, "relu_kernel(float *)");
    ASSERT_NE(relu, nullptr);
    EXPECT_DOUBLE_EQ(metric(relu, "launches"), 2000);
    EXPECT_DOUBLE_EQ(metric(relu, "duration_total"), 6000000);
    EXPECT_DOUBLE_EQ(metric(relu, "duration_min"), 1950);
    EXPECT_DOUBLE_EQ(metric(relu, "duration_max"), 4100);
    EXPECT_FALSE(relu->value("duration_median"));  // not derivable from two medians
    // Pooled: E[x^2] = (1000*(50^2+4000^2) + 1000*(20^2+2000^2)) / 2000, mean 3000.
    const double pooled = std::sqrt((1000 * (2500 + 16e6) + 1000 * (400 + 4e6)) / 2000 - 9e6);
    EXPECT_NEAR(metric(relu, "duration_std"), pooled, 1e-6);
    EXPECT_EQ(relu->attributes.at("launch_configs"), "2");
    const Entity* bias = kernel_named(b, "bias_add(float *, int)");
    ASSERT_NE(bias, nullptr);
    EXPECT_EQ(bias->attributes.at("grid"), "40x1x1");
    EXPECT_EQ(bias->attributes.at("block"), "128x1x1");
    const Entity* launch = named(b, EntityKind::api_call, "cudaLaunchKernel");
    ASSERT_NE(launch, nullptr);
    EXPECT_EQ(launch->attributes.at("tool_name"), "cudaLaunchKernel_v7000");
    const Entity* memset = named(b, EntityKind::memcpy, "[CUDA memset]");
    ASSERT_NE(memset, nullptr);
    EXPECT_DOUBLE_EQ(metric(memset, "bytes"), 16e6);
    bool skipped = false;
    for (const std::string& n : b.notes) skipped = skipped || n.starts_with("SKIPPED: /home/ci/report2.sqlite");
    EXPECT_TRUE(skipped);
}

TEST(NsysStats, Csv2024WithNoticesQuotedNamesAndMilliseconds) {
    const RunBatch b = collect_ok(fixture("nsys/stats_2024_csv.txt"));
    EXPECT_EQ(b.format_detail, "CSV, 2023+ report names");
    const Entity* gemm = kernel_named(b, "void gemm<float, 128>(const float *, float *, int)");
    ASSERT_NE(gemm, nullptr);
    EXPECT_DOUBLE_EQ(metric(gemm, "duration_total"), 4e6);  // "4.000000" ms
    EXPECT_DOUBLE_EQ(metric(gemm, "duration_min"), 7500);
    const Entity* load = named(b, EntityKind::nvtx_range, "Load Module");
    ASSERT_NE(load, nullptr);
    EXPECT_NEAR(metric(load, "duration_total"), 3498803745, 1);
    EXPECT_NE(named(b, EntityKind::nvtx_range, "train, step"), nullptr);
    const Entity* htod = named(b, EntityKind::memcpy, "[CUDA memcpy HtoD]");
    ASSERT_NE(htod, nullptr);  // "Host-to-Device" spelled the short way, as the SQLite reader names it
    EXPECT_DOUBLE_EQ(metric(htod, "bytes"), 12e6);
    EXPECT_DOUBLE_EQ(b.entities[0].value("memcpy_bytes").value_or(-1), 16e6);
    EXPECT_DOUBLE_EQ(b.entities[0].value("sync_api_time").value_or(-1), 7e6);
}

TEST(NsysStats, GpuTraceBuildsATimeline) {
    const RunBatch b = collect_ok(fixture("nsys/gputrace_2023_csv.txt"));
    const Entity* step = kernel_named(b, "step(float *)");
    ASSERT_NE(step, nullptr);
    EXPECT_DOUBLE_EQ(metric(step, "launches"), 3);
    EXPECT_DOUBLE_EQ(metric(step, "duration_total"), 12000);
    // Busy 100 + 3*4 + 20 us over a span of 1000..1150 us.
    const Entity& run = b.entities[0];
    EXPECT_DOUBLE_EQ(run.value("gpu_time").value_or(-1), 12000);
    EXPECT_DOUBLE_EQ(run.value("short_launches").value_or(-1), 3);
    const Entity* dtoh = named(b, EntityKind::memcpy, "[CUDA memcpy DtoH]");
    ASSERT_NE(dtoh, nullptr);
    EXPECT_DOUBLE_EQ(metric(dtoh, "duration_total"), 20000);
    const auto launches = of_kind(b, EntityKind::launch);
    ASSERT_EQ(launches.size(), 3u);
    EXPECT_EQ(launches[0]->attributes.at("grid"), "80x1x1");
}

TEST(NsysStats, BadNumberNamesLineAndColumn) {
    const std::string path = fixture("nsys/bad_instances.txt");
    auto b = collect_file(path);
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error().line, 5u);
    EXPECT_NE(b.error().message.find("\"Instances\""), std::string::npos) << b.error().message;
    EXPECT_NE(b.error().message.find("many"), std::string::npos) << b.error().message;
}

TEST(NsysStats, CsvRowWithMissingColumns) {
    const std::string text =
        "\"Time (%)\",\"Total Time (ns)\",\"Instances\",\"Name\"\n\"100.0\",\"5000\",\"k\"\n";
    auto b = nsys_stats_collector().collect("cut.csv", text);
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error().line, 2u);
    EXPECT_NE(b.error().message.find("expected 4 columns"), std::string::npos) << b.error().message;
}

TEST(NsysStats, DetectionNeedsATable) {
    const Collector& c = nsys_stats_collector();
    EXPECT_TRUE(c.recognizes(read_file(fixture("nsys/stats_2021_text.txt"))));
    EXPECT_TRUE(c.recognizes(read_file(fixture("nsys/stats_2024_csv.txt"))));
    EXPECT_FALSE(c.recognizes("Time (%) is what we measure\nnothing else\n"));
    EXPECT_FALSE(c.recognizes("\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\"\n"));
    // The whole pipeline picks this collector for stats output.
    EXPECT_EQ(detect(read_file(fixture("nsys/stats_2022_text.txt")))->id(), "nsys-stats");
}

}  // namespace perfwatch::test

namespace perfwatch::test {

// nsys stats output pasted into a script as comments reads like the log it was.
TEST(NsysStats, CommentedOutputInAScript) {
    const std::string path = fixture("nsys/commented_stats.sh");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format, "nsys-stats");
    const auto tables = kernel_tables(path);
    ASSERT_EQ(tables.size(), 1u);
    EXPECT_DOUBLE_EQ(b.entities[0].value("launches").value_or(-1), tables[0].first);
    EXPECT_DOUBLE_EQ(b.entities[0].value("gpu_time").value_or(-1), tables[0].second);
    EXPECT_EQ(b.tool_version, "2022.4.2");
    EXPECT_FALSE(has_note(b, "announced"));
}

// A CI log with a timestamp before every line, and the job's next message right under the table.
TEST(NsysStats, TimestampedCiLogWithOutputAfterTheTable) {
    const std::string path = fixture("nsys/timestamped_ci.log");
    const RunBatch b = collect_ok(path);
    const auto tables = kernel_tables(path);
    ASSERT_EQ(tables.size(), 1u);
    EXPECT_DOUBLE_EQ(b.entities[0].value("launches").value_or(-1), tables[0].first);
    EXPECT_DOUBLE_EQ(b.entities[0].value("gpu_time").value_or(-1), tables[0].second);
}

TEST(NsysStats, CorpusCommentedScriptAndJobLogs) {
    PERFWATCH_CORPUS_FILE(script, "nsys/asmusdals__02613_Python_and_HPC__ex2.py");
    const RunBatch b = collect_ok(script);
    const auto tables = kernel_tables(script);
    ASSERT_EQ(tables.size(), 1u);
    EXPECT_DOUBLE_EQ(b.entities[0].value("launches").value_or(-1), tables[0].first);
    EXPECT_DOUBLE_EQ(b.entities[0].value("gpu_time").value_or(-1), tables[0].second);
    // An LSF job log announces each report twice ("Processing [...osrtsum.py]" and
    // "** OS Runtime Summary (osrtsum)"): one announcement, no false note.
    PERFWATCH_CORPUS_FILE(lsf, "nsys/wkandersen__02613-HPC__10_nsys_fix_24834437.out");
    const RunBatch l = collect_ok(lsf);
    EXPECT_FALSE(has_note(l, "announced")) << l.notes.size();
    EXPECT_FALSE(has_note(l, "sessions"));
}

// Twelve sessions in one log: twelve runs, each with its own GPU, every launch kept.
TEST(NsysStats, EverySessionOfALogIsARun) {
    const std::string path = fixture("nsys/twelve_sessions.log");
    auto runs = collect_file_runs(path, {});
    ASSERT_TRUE(runs) << runs.error().to_string();
    const auto tables = kernel_tables(path);
    ASSERT_EQ(tables.size(), 12u);
    ASSERT_EQ(runs->size(), tables.size());
    double launches = 0, expected = 0;
    std::set<std::string> hashes;
    for (std::size_t i = 0; i < runs->size(); ++i) {
        RunBatch& r = (*runs)[i];
        EXPECT_DOUBLE_EQ(r.entities[r.run_entity()].value("launches").value_or(-1), tables[i].first) << i;
        EXPECT_DOUBLE_EQ(r.entities[r.run_entity()].value("gpu_time").value_or(-1), tables[i].second) << i;
        EXPECT_EQ(label_value(r.labels, "session"), std::to_string(i + 1));
        EXPECT_EQ(label_value(r.labels, "gpu"), i % 2 == 0 ? "NVIDIA GA100" : "NVIDIA GH100");
        launches += r.entities[r.run_entity()].value("launches").value_or(0);
        expected += tables[i].first;
        hashes.insert(r.sha256);
    }
    EXPECT_EQ(launches, expected);
    EXPECT_EQ(hashes.size(), runs->size());  // each session is its own content
    // One batch (collect_file) is still the last session, with a note saying so.
    const RunBatch last = collect_ok(path);
    EXPECT_TRUE(has_note(last, "12 nsys stats sessions"));
}

TEST(NsysStats, Corpus2025EverySessionIsARun) {
    PERFWATCH_CORPUS_FILE(path, "nsys/ayush-os_deep-dive_README_nsys_stats_text_2025.md");
    auto runs = collect_file_runs(path, {});
    ASSERT_TRUE(runs);
    const auto tables = kernel_tables(path);
    ASSERT_EQ(runs->size(), tables.size());
    for (std::size_t i = 0; i < runs->size(); ++i)
        EXPECT_DOUBLE_EQ((*runs)[i].entities[0].value("launches").value_or(-1), tables[i].first) << i;
}

}  // namespace perfwatch::test

namespace perfwatch::test {

// nsys cuts long kernel names with an ellipsis: two rows sharing the cut may be different kernels,
// so they stay two entities (the second named "#2") with their own figures, and a note says so.
TEST(NsysStats, RowsWhoseNamesNsysTruncatedStaySeparate) {
    const RunBatch b = collect_ok(fixture("nsys/stats_truncated_names.txt"));
    const std::string cut = "void at::native::vectorized_elementwise_kernel<4, at::nati\xE2\x80\xA6";
    const Entity* first = kernel_named(b, cut);
    const Entity* second = kernel_named(b, cut + " #2");
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    EXPECT_DOUBLE_EQ(metric(first, "duration_total"), 6000000);
    EXPECT_DOUBLE_EQ(metric(second, "duration_total"), 3000000);
    EXPECT_DOUBLE_EQ(metric(second, "launches"), 1000);
    EXPECT_EQ(second->attributes.at("truncated_name"), "true");
    bool noted = false;
    for (const std::string& n : b.notes) noted = noted || n.starts_with("1 row(s) of cuda_gpu_kern_sum whose names nsys truncated");
    EXPECT_TRUE(noted);
}

// A gputrace CSV saved without nsys's title line (stats --format csv --output FILE): recognised by
// its header, its 2 kernel rows (22240 + 18120 ns) read beside the copy.
TEST(NsysStats, AGputraceCsvWithoutItsTitleIsRead) {
    const RunBatch b = collect_ok(fixture("nsys/gputrace_untitled.csv"));
    EXPECT_EQ(b.entities[0].value("launches").value_or(-1), 2);
    const auto kernels = of_kind(b, EntityKind::kernel);
    ASSERT_EQ(kernels.size(), 1u);
    EXPECT_EQ(metric(kernels[0], "duration_total"), 22240 + 18120);
    EXPECT_EQ(of_kind(b, EntityKind::memcpy).size(), 1u);
}

// nsys run in a European locale prints "76,4" percent, "3.248.602" ns and "1.400" instances: the
// row's decimal-comma Time(%) cell says so, and every number of the row is read that way
// (1,400 + 2 launches; 3,248,602 + 1,004,300 ns), not as 1.4 launches.
TEST(NsysStats, NumbersPrintedInAEuropeanLocale) {
    const RunBatch b = collect_ok(fixture("nsys/stats_european_locale.txt"));
    EXPECT_EQ(b.entities[0].value("launches").value_or(-1), 1400 + 2);
    const Entity* fill = kernel_named(b, "__pgi_uacc_cuda_fill_42_gpu");
    EXPECT_EQ(metric(fill, "launches"), 1400);
    EXPECT_EQ(metric(fill, "duration_total"), 3248602);
    EXPECT_EQ(metric(fill, "duration_max"), 2656);
    const Entity* fwd = kernel_named(b, "forward_prop_71_gpu");
    EXPECT_EQ(metric(fwd, "duration_total"), 1004300);
    EXPECT_EQ(metric(fwd, "duration_mean"), 502150);
}

}  // namespace perfwatch::test
