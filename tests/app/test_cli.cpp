#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <nlohmann/json.hpp>

#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

nlohmann::json parse_json(const ProcessResult& r) {
    try {
        return nlohmann::json::parse(r.out);
    } catch (const std::exception& e) {
        ADD_FAILURE() << "not JSON: " << e.what() << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
        return {};
    }
}

const nlohmann::json* find_finding(const nlohmann::json& doc, const std::string& rule, const std::string& entity) {
    for (const auto& f : doc["findings"])
        if (f["rule"] == rule && f["entity"]["name"].get<std::string>().starts_with(entity)) return &f;
    return nullptr;
}

std::int64_t count_runs(const std::string& db) { return test::query_int(db, "SELECT count(*) FROM runs"); }

using test::write_file;

}  // namespace

TEST(Cli, CheckB200FindsTheTailEffectWithWhatItsLastWaveLeavesIdle) {
    PERFWATCH_CORPUS_FILE(path, "ncu/csv-details_B200-cc100_ncu2025_cublaslt_gemm_rules.log");
    const auto r = run_perfwatch({"check", "--format", "json", path});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto doc = parse_json(r);
    ASSERT_EQ(doc["runs"].size(), 1u);
    EXPECT_EQ(doc["runs"][0]["format"], "ncu-csv");
    const auto* tail = find_finding(doc, "ncu-tail-effect", "cutlass3x_sm100");
    ASSERT_NE(tail, nullptr) << r.out;
    // The file's "Waves Per SM" 1.89: the second wave fills 89% of the SMs, so (2 - 1.89) / 2 of the
    // kernel's SM time is idle. ncu's "this partial wave may account for up to 50.0%" is a bound.
    EXPECT_NEAR((*tail)["estimated_speedup_pct"].get<double>(), 100.0 * (2 - 1.89) / 2, 0.01);
    EXPECT_EQ((*tail)["severity"], "warning");
    EXPECT_EQ((*tail)["entity"]["kind"], "kernel");
    EXPECT_EQ((*tail)["metrics"]["waves_per_sm"], 1.89);
    // The kernel is cuBLASLt's own CUTLASS GEMM: its 18.8% theoretical occupancy (168 registers per
    // thread) is by design, not advice for its user; the tail effect is the first finding.
    EXPECT_EQ(find_finding(doc, "ncu-theoretical-occupancy", "cutlass3x_sm100"), nullptr) << r.out;
    EXPECT_EQ(doc["findings"][0]["rule"], "ncu-tail-effect");
}

// One rule, both vendors: a register-bound kernel in an Nsight Compute report and a VGPR-bound
// one in a rocprof-compute workload (fixtures written for this project) get the same rule, each
// with its own numbers and its vendor's fix.
TEST(Cli, TheSameOccupancyRuleFiresOnNvidiaAndAmdWithEachVendorsFix) {
    const auto nvidia = parse_json(test::run_perfwatch({"check", "--format", "json", test::fixture("ncu/problems_2023.csv")}));
    const auto amd = parse_json(
        test::run_perfwatch({"check", "--format", "json", test::fixture("rocprof_compute/mi210_problems/pmc_perf.csv")}));
    const auto* n = find_finding(nvidia, "ncu-theoretical-occupancy", "fft_radix8_kernel");
    const auto* a = find_finding(amd, "ncu-theoretical-occupancy", "fft_radix8_kernel");
    ASSERT_NE(n, nullptr);
    ASSERT_NE(a, nullptr);
    const std::string nm = (*n)["message"], am = (*a)["message"];
    // problems_2023.csv: 25.0% theoretical, 255 registers per thread; pmc_perf.csv: 128 VGPRs on
    // gfx90a, 512 / 128 = 4 of 8 waves per SIMD.
    EXPECT_NE(nm.find("theoretical occupancy 25.0% is limited by registers; 255 registers per thread"), std::string::npos) << nm;
    EXPECT_NE(nm.find("-maxrregcount"), std::string::npos) << nm;
    EXPECT_EQ(nm.find("wavefront"), std::string::npos) << nm;
    EXPECT_NE(am.find("theoretical occupancy 50.0% is limited by VGPRs; 128 VGPRs and 48 SGPRs per wavefront"), std::string::npos) << am;
    EXPECT_NE(am.find("amdgpu_waves_per_eu"), std::string::npos) << am;
    EXPECT_EQ(am.find("-maxrregcount"), std::string::npos) << am;
    EXPECT_EQ(amd["runs"][0]["labels"]["gpu"], "AMD MI210 (gfx90a)");
}

TEST(Cli, CheckL4TextFindsTheTailEffectWithWhatItsLastWaveLeavesIdle) {
    PERFWATCH_CORPUS_FILE(path, "ncu/text_L4-cc89_ncu2025_fp16_wmma_512_basic.txt");
    const auto r = run_perfwatch({"check", "--format", "json", path});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto doc = parse_json(r);
    const auto* tail = find_finding(doc, "ncu-tail-effect", "wmma_db");
    ASSERT_NE(tail, nullptr) << r.out;
    // "Waves Per SM 2.21": the third wave fills 21% of the SMs, (3 - 2.21) / 3 of the time idle
    // (ncu's "Est. Speedup: 33.33%" is its bound, 1 / (1 + 2 full waves)).
    EXPECT_NEAR((*tail)["estimated_speedup_pct"].get<double>(), 100.0 * (3 - 2.21) / 3, 0.01);
    EXPECT_NE((*tail)["message"].get<std::string>().find("2.21 waves"), std::string::npos);
}

// Its occupancy (66.67%, registers) is low, but the kernel already runs its memory at 89.22% of
// peak ("Memory Throughput"): more resident warps can save at most the 10.78% left, under the
// tail effect's 26.3%, which heads the check.
TEST(Cli, OccupancyCannotSaveMoreThanTheBusiestUnitLeavesOfItsPeak) {
    PERFWATCH_CORPUS_FILE(path, "ncu/text_L4-cc89_ncu2025_fp16_wmma_512_basic.txt");
    const auto r = run_perfwatch({"check", "--format", "json", path});
    const auto doc = parse_json(r);
    const auto* occupancy = find_finding(doc, "ncu-theoretical-occupancy", "wmma_db");
    ASSERT_NE(occupancy, nullptr) << r.out;
    EXPECT_NEAR((*occupancy)["estimated_speedup_pct"].get<double>(), 100.0 - 89.22, 0.01);
    EXPECT_EQ(doc["findings"][0]["rule"], "ncu-tail-effect") << r.out;
}

// The report profiles wmma_db twice (8x16 and 128x256x4 blocks); each launch's bank-conflict rule
// prints its conflicts and shared-load wavefronts. The kernel's figures are their totals, numbers
// the reader can add up from the file (a duration-weighted mean of counts appears nowhere in it).
TEST(Cli, BankConflictCountsAcrossLaunchesAreTheirTotals) {
    PERFWATCH_CORPUS_FILE(path, "ncu/text_L4-cc89_ncu2025_fp16_wmma_8192_full.txt");
    std::string text = read_file(path);
    std::replace(text.begin(), text.end(), '\n', ' ');
    static const std::regex k_rule(R"(results in ([0-9]+) bank conflicts,\s+which\s+represent\s+[0-9.]+%\s+of\s+the\s+overall\s+([0-9]+)\s+wavefronts)");
    long long conflicts = 0, wavefronts = 0, rules = 0;
    for (std::sregex_iterator it(text.begin(), text.end(), k_rule), end; it != end; ++it, ++rules) {
        conflicts += std::stoll((*it)[1].str());
        wavefronts += std::stoll((*it)[2].str());
    }
    ASSERT_EQ(rules, 2);
    const auto r = run_perfwatch({"check", "--format", "json", path});
    const auto doc = parse_json(r);
    const auto* bank = find_finding(doc, "ncu-shared-bank-conflicts", "wmma_db");
    ASSERT_NE(bank, nullptr) << r.out;
    const std::string message = (*bank)["message"].get<std::string>();
    EXPECT_NE(message.find(fmt::format("{} of {} shared wavefronts", conflicts, wavefronts)), std::string::npos) << message;
}

// A real ncu report measured again at a lower SM clock (its "SM Frequency" lines rewritten to 680
// MHz, the durations kept): the second run is told its clock differs from its baseline's.
TEST(Cli, ARealNcuReportMeasuredAtAnotherClockIsToldSo) {
    PERFWATCH_CORPUS_FILE(path, "ncu/text_L4-cc89_ncu2025_fp16_wmma_8192_full.txt");
    test::TempDir dir;
    const std::string db = dir.file("c.db");
    const std::string text = read_file(path);
    std::string slower;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.find("SM Frequency") != std::string::npos) line = line.substr(0, line.rfind(' ') + 1) + "680.00";
        slower += line + "\n";
    }
    const std::filesystem::path copy = dir.path() / "again" / "text_L4-cc89_ncu2025_fp16_wmma_8192_full.txt";
    write_file(copy, slower);
    ASSERT_LE(run_perfwatch({"check", "--db", db, "--label", "commit=a", path}).exit_code, 1);
    // The same report again at the same clock raises nothing about clocks.
    const auto same = run_perfwatch({"check", "--db", db, "--label", "commit=b", "--format", "json", path});
    const auto same_doc = parse_json(same);
    EXPECT_EQ(find_finding(same_doc, "run-clock-changed", "run"), nullptr) << same.out;
    const auto r = run_perfwatch({"check", "--db", db, "--label", "commit=c", "--format", "json", copy.string()});
    ASSERT_LE(r.exit_code, 1) << r.err;
    const auto doc = parse_json(r);
    const auto* clock = find_finding(doc, "run-clock-changed", "run");
    ASSERT_NE(clock, nullptr) << r.out;
    // From the file: 800.49 and 802.99 MHz weighted by the launches' 63.58 us and 1.65 s, then 680.
    const double before = (800.49 * 63580 + 802.99 * 1.65e9) / (63580 + 1.65e9);
    const std::string message = (*clock)["message"].get<std::string>();
    EXPECT_NE(message.find(fmt::format("SM clock of 680 MHz (weighted by GPU time) against {:.0f} MHz in the baseline ({:+.1f}%)",
                                       before, 100 * (680 / before - 1))),
              std::string::npos)
        << message;
}

TEST(Cli, Check2021TextFindsWhatItsWrnLinesDescribe) {
    PERFWATCH_CORPUS_FILE(path, "ncu/text_RTX3070-cc86_ncu2021_reductions_8M_default.txt");
    const auto r = run_perfwatch({"check", "--format", "json", "--fail-on", "warning", path});
    EXPECT_EQ(r.exit_code, 1) << "warnings at --fail-on warning: " << r.err;
    const auto doc = parse_json(r);
    // atomic_red WRN: low compute and memory throughput; WRN: achieved 80.7% vs theoretical 100%.
    EXPECT_NE(find_finding(doc, "ncu-latency-bound", "atomic_red"), nullptr) << r.out;
    const auto* occ = find_finding(doc, "ncu-achieved-occupancy", "atomic_red");
    ASSERT_NE(occ, nullptr);
    EXPECT_NE((*occ)["message"].get<std::string>().find("80.7%"), std::string::npos);
    // reduce_a WRN: memory more heavily utilized than compute; reduce_ws WRN: achieved 90.0% vs
    // theoretical 100%. Each takes 0.4% of the report's GPU time (atomic_red 99.3%): said once per
    // rule in a summary line on the run, not on their own.
    EXPECT_EQ(find_finding(doc, "ncu-memory-bound", "reduce_a"), nullptr);
    const auto* memory = find_finding(doc, "ncu-memory-bound", "run");
    ASSERT_NE(memory, nullptr) << r.out;
    EXPECT_NE((*memory)["message"].get<std::string>().find("1 kernel where this holds, together 0.4% of GPU time"),
              std::string::npos)
        << (*memory)["message"];
    EXPECT_NE((*memory)["message"].get<std::string>().find("reduce_a(float *, float *) (0.4%)"), std::string::npos);
    EXPECT_EQ((*memory)["severity"], "info");
    const auto* low_occupancy = find_finding(doc, "ncu-achieved-occupancy", "run");
    ASSERT_NE(low_occupancy, nullptr) << r.out;
    // reduce_a's occupancy line is an INF, not a WRN: 90.55% achieved is within 10 points.
    EXPECT_EQ((*low_occupancy)["message"].get<std::string>().find("reduce_a"), std::string::npos);
    EXPECT_NE((*low_occupancy)["message"].get<std::string>().find("reduce_ws(float *, float *)"), std::string::npos);
}

TEST(Cli, BadInputsExitTwoNameTheFileAndStoreNothing) {
    PERFWATCH_CORPUS_FILE(path, "ncu/csv-details_B200-cc100_ncu2025_cublaslt_gemm_rules.log");
    TempDir dir;
    const std::string db = dir.file("pw.db");
    const std::string text = read_file(path);
    const std::string truncated = dir.file("truncated.csv"), binary = dir.file("binary.bin"),
                      empty = dir.file("empty.txt");
    write_file(truncated, text.substr(0, text.size() / 2));
    write_file(binary, std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16));
    write_file(empty, "");
    const std::string stats = fixture("nsys/bad_instances.txt");  // "many" where Instances belong
    for (const std::string& file : {truncated, binary, empty, stats}) {
        const auto r = run_perfwatch({"check", "--db", db, file});
        EXPECT_EQ(r.exit_code, 2) << file << "\n" << r.out << r.err;
        EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
        EXPECT_EQ(count_runs(db), 0) << file;
    }
    const auto t = run_perfwatch({"ingest", "--db", db, truncated});
    EXPECT_EQ(t.exit_code, 2);
    EXPECT_NE(t.err.find(truncated + ":"), std::string::npos) << "names the line: " << t.err;
    const auto st = run_perfwatch({"ingest", "--db", db, stats});
    EXPECT_NE(st.err.find(stats + ":5: expected a number in column \"Instances\", found \"many\""), std::string::npos)
        << st.err;
    const auto b = run_perfwatch({"ingest", "--db", db, binary});
    EXPECT_NE(b.err.find("offset 8"), std::string::npos) << b.err;
    EXPECT_EQ(count_runs(db), 0);
}

// A log of twelve nsys stats sessions: ingest stores and prints one run per session (each its own
// content, labelled session=N, with the GPU its session names); again, nothing new.
TEST(Cli, IngestStoresEverySessionOfALog) {
    test::TempDir dir;
    const std::string db = dir.file("pw.db");
    const std::string log = test::fixture("nsys/twelve_sessions.log");
    const auto r = test::run_perfwatch({"ingest", "--db", db, log});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (int i = 1; i <= 12; ++i) EXPECT_NE(r.out.find(fmt::format("run {}: {} session {} (", i, log, i)), std::string::npos) << r.out;
    EXPECT_EQ(count_runs(db), 12);
    EXPECT_EQ(test::query_int(db, "SELECT count(DISTINCT sha256) FROM runs"), 12);
    EXPECT_EQ(test::query_int(db, "SELECT count(*) FROM run_labels WHERE key = 'session'"), 12);
    EXPECT_EQ(test::query_int(db, "SELECT count(*) FROM run_labels WHERE key = 'gpu' AND value = 'NVIDIA GH100'"), 6);
    const auto again = test::run_perfwatch({"ingest", "--db", db, log});
    EXPECT_EQ(again.exit_code, 0);
    EXPECT_NE(again.out.find("session 12 already stored"), std::string::npos) << again.out;
    EXPECT_EQ(count_runs(db), 12);
}

// What profilers write beside their reports (rocprof-compute sysinfo.csv and roofline.csv, a
// rocprofv3 agent_info.csv, a rocprof input file) is set aside with a reason, not a failure.
TEST(Cli, ContextFilesBesideReportsAreSetAsideWithAReason) {
    const auto corpus = test::corpus_dir();
    if (!corpus) GTEST_SKIP() << "corpus not found (../shared/corpus or $PERFWATCH_CORPUS)";
    test::TempDir dir;
    const std::string db = dir.file("pw.db");
    for (const char* rel : {"rocprof_compute/ROCm__omniperf__no_roof_MI300X_A1/sysinfo.csv",
                            "rocprof_compute/Aalanli__AMDGPUExperiments__rocgemm_mi200/roofline.csv",
                            "rocprof/HussamAlBasha__mi300a-benchmarks-fork__hipMalloc1_agent_info.csv",
                            "rocprof/IlyaNyrkov__xSpMM__counters.txt"}) {
        const auto r = test::run_perfwatch({"ingest", "--db", db, (*corpus / rel).string()});
        EXPECT_EQ(r.exit_code, 0) << rel << r.err;
        EXPECT_NE(r.err.find("set aside: a rocprof"), std::string::npos) << rel << r.err;
    }
    EXPECT_EQ(count_runs(db), 0);
}

TEST(Cli, IngestShowAndDeduplicate) {
    PERFWATCH_CORPUS_FILE(path, "ncu/text_L4-cc89_ncu2025_fp16_wmma_8192_full.txt");
    TempDir dir;
    const std::string db = dir.file("pw.db");
    const auto first = run_perfwatch({"ingest", "--db", db, "--label", "branch=main", "--label", "gpu=L4", path});
    ASSERT_EQ(first.exit_code, 0) << first.err;
    EXPECT_NE(first.out.find("run 1: "), std::string::npos) << first.out;
    // A copy under the same labels (the same benchmark name in another folder) is the same run.
    const std::string name = std::filesystem::path(path).filename().string();
    std::filesystem::create_directories(dir.file("copy"));
    const std::string copy = dir.file("copy/" + name);
    std::filesystem::copy_file(path, copy);
    const auto second = run_perfwatch({"ingest", "--db", db, "--label", "branch=main", "--label", "gpu=L4", copy});
    EXPECT_EQ(second.exit_code, 0);
    EXPECT_NE(second.out.find("run 1: " + copy + " already stored"), std::string::npos) << second.out;
    EXPECT_EQ(count_runs(db), 1);
    // The same bytes under another commit are a new run sharing the stored content.
    const std::int64_t entities = query_int(db, "SELECT count(*) FROM entities");
    const auto third =
        run_perfwatch({"ingest", "--db", db, "--label", "branch=main", "--label", "gpu=L4", "--label", "commit=c2", copy});
    EXPECT_EQ(third.exit_code, 0);
    EXPECT_NE(third.out.find("run 2: " + copy + " ("), std::string::npos) << third.out;
    EXPECT_NE(third.out.find("same content as run 1"), std::string::npos) << third.out;
    EXPECT_EQ(count_runs(db), 2);
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM entities"), entities);
    const auto shown1 = run_perfwatch({"show", "--db", db, "1", "--format", "json"});
    const auto shown2 = run_perfwatch({"show", "--db", db, "2", "--format", "json"});
    EXPECT_EQ(parse_json(shown1)["entities"], parse_json(shown2)["entities"]);
    EXPECT_EQ(parse_json(shown2)["labels"]["commit"], "c2");

    const auto show = run_perfwatch({"show", "--db", db, "1", "--format", "json"});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    const auto doc = parse_json(show);
    EXPECT_EQ(doc["labels"]["branch"], "main");
    EXPECT_EQ(doc["labels"]["gpu"], "L4");
    int kernels = 0, launches = 0;
    for (const auto& e : doc["entities"]) {
        if (e["kind"] == "kernel") {
            ++kernels;
            EXPECT_EQ(e["metrics"]["launches"], 2);
            EXPECT_EQ(e["metrics"]["duration_total"], 1650063580.0);
        }
        if (e["kind"] == "launch") ++launches;
    }
    EXPECT_EQ(kernels, 1);
    EXPECT_EQ(launches, 2);

    const auto text = run_perfwatch({"show", "--db", db, "1"});
    EXPECT_EQ(text.exit_code, 0);
    EXPECT_NE(text.out.find("label:    branch=main"), std::string::npos);
    EXPECT_NE(text.out.find("(Duration, us)"), std::string::npos);

    EXPECT_EQ(run_perfwatch({"show", "--db", db, "99"}).exit_code, 2);
}

TEST(Cli, EveryCorpusNcuFileIngests) {
    const auto dir = corpus_dir();
    if (!dir) GTEST_SKIP() << "corpus not found (../shared/corpus or $PERFWATCH_CORPUS)";
    TempDir tmp;
    const std::string db = tmp.file("pw.db");
    std::vector<std::string> args{"ingest", "--db", db};
    std::size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(*dir / "ncu")) {
        args.push_back(entry.path().string());
        ++files;
    }
    ASSERT_GE(files, 6u);
    const auto r = run_perfwatch(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(count_runs(db), static_cast<std::int64_t>(files));
}

TEST(Cli, CustomRulesAndRuleErrors) {
    TempDir dir;
    const std::string rules = dir.file("team.yaml");
    write_file(rules,
          "rules:\n"
          "  - id: team-slow-kernel\n"
          "    title: Kernel slower than budget\n"
          "    severity: error\n"
          "    scope: kernel\n"
          "    when: duration_mean > 1ms\n"
          "    message: \"{name} takes {duration_mean / 1e6:.2f} ms per launch (budget 1 ms)\"\n");
    const auto r = run_perfwatch({"check", "--rules", rules, "--format", "json",
                                  fixture("ncu/details_2020_thousands.csv")});
    EXPECT_EQ(r.exit_code, 1) << "an error-level finding fails the check: " << r.err;
    const auto doc = parse_json(r);
    const auto* slow = find_finding(doc, "team-slow-kernel", "stencil2d");
    ASSERT_NE(slow, nullptr) << r.out;
    EXPECT_EQ((*slow)["message"], "stencil2d(float const*, float*, int, int) takes 1.37 ms per launch (budget 1 ms)");

    const std::string broken = dir.file("broken.yaml");
    write_file(broken, "rules:\n  - id: x\n    when: duration_mean > 1 parsec\n    message: m\n");
    const auto bad = run_perfwatch({"check", "--rules", broken, fixture("ncu/raw_page.csv")});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find(broken + ":3:"), std::string::npos) << bad.err;
    EXPECT_NE(bad.err.find("rule 'x'"), std::string::npos) << bad.err;
}

// The board idles between 60 short OpenCL kernel executions (30 of each of its two kernels): that
// is the finding; a ranking of two kernels is none.
TEST(Cli, CheckOnProfileMonTellsTheIdleBoardNotARankingOfTwoKernels) {
    PERFWATCH_CORPUS_FILE(path, "fpga_opencl/gbtl_dev_spmv_merge_profile.mon");
    const auto r = run_perfwatch({"check", "--format", "json", path});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto doc = parse_json(r);
    EXPECT_EQ(doc["runs"][0]["format"], "fpga-profile-mon");
    EXPECT_EQ(find_finding(doc, "hotspot-top-kernel", "spmv_kernel"), nullptr) << r.out;
    const auto* idle = find_finding(doc, "launch-gpu-idle", "device 0");
    ASSERT_NE(idle, nullptr) << r.out;
    EXPECT_NE((*idle)["message"].get<std::string>().find("across 60 launches"), std::string::npos) << (*idle)["message"];
}

TEST(Cli, FormatsListsEveryCollector) {
    const auto r = run_perfwatch({"formats"});
    EXPECT_EQ(r.exit_code, 0);
    for (const char* id : {"ncu-csv", "ncu-raw-csv", "ncu-text", "nsys-sqlite", "nsys-stats", "kineto",
                           "rocprof-stats", "rocprof-sqlite", "rocprof-json", "rocprof-trace-csv", "fpga-profile-mon",
                           "clintercept-report", "clintercept-trace", "chrome-trace", ".ncu-rep", ".nsys-rep"})
        EXPECT_NE(r.out.find(id), std::string::npos) << id;
    EXPECT_NE(r.out.find("generic"), std::string::npos);
}

TEST(Cli, BinaryReportsAreConvertedByTheConfiguredTool) {
    TempDir dir;
    const std::string rep = dir.file("gemm.ncu-rep"), db = dir.file("p.db"), cfg = dir.file("perfwatch.yaml");
    write_file(rep, read_file(fixture("ncu/details_2020_thousands.csv")));
    // `cat` stands in for `ncu --import`: both print the details CSV on stdout.
    write_file(cfg, "converters:\n  - extension: .ncu-rep\n    command: [cat, \"{input}\"]\n");
    const auto r = run_perfwatch({"--config", cfg, "ingest", "--db", db, rep});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("(ncu-csv,"), std::string::npos) << r.out;
    SQLite::Database raw(db);
    EXPECT_EQ(raw.execAndGet("SELECT source FROM runs").getString(), rep);
    // The same binary report again is the same run, whatever the conversion produces.
    const auto again = run_perfwatch({"ingest", "--config", cfg, "--db", db, rep});
    EXPECT_NE(again.out.find("already stored"), std::string::npos) << again.out;
}

TEST(Cli, BinaryReportWithoutItsToolIsSkippedByIngestAndFailsCheck) {
    TempDir dir;
    const std::string rep = dir.file("timeline.nsys-rep"), db = dir.file("p.db"), cfg = dir.file("perfwatch.yaml");
    write_file(rep, std::string("\x01\x02" "binary" "\0" "report", 15));
    write_file(cfg, "converters:\n  - extension: .nsys-rep\n    command: [perfwatch-no-such-nsys, export, \"{input}\"]\n");
    const auto r = run_perfwatch({"--config", cfg, "ingest", "--db", db, rep});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("perfwatch: skipped: " + rep), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("`perfwatch-no-such-nsys` is not on PATH"), std::string::npos) << r.err;
    EXPECT_EQ(count_runs(db), 0);
    // A gate cannot pass a report it could not read.
    EXPECT_EQ(run_perfwatch({"--config", cfg, "check", rep}).exit_code, 2);
}

TEST(Cli, ConfigCheck) {
    TempDir dir;
    const std::string good = dir.file("good.yaml"), bad = dir.file("bad.yaml");
    write_file(good, "database: perfwatch.db\nrules: [team.yaml]\n");
    std::filesystem::copy_file(std::string(PERFWATCH_SOURCE_DIR) + "/examples/rules/team.yaml", dir.file("team.yaml"));
    write_file(bad, "database: x.db\nwatchers: /builds\n");
    const auto ok = run_perfwatch({"config", "check", good});
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
    EXPECT_NE(ok.out.find(": ok (1 rule file(s)"), std::string::npos) << ok.out;
    const auto ko = run_perfwatch({"config", "check", bad});
    EXPECT_EQ(ko.exit_code, 1);
    EXPECT_NE(ko.err.find(bad + ":2:1: error: unknown setting 'watchers'"), std::string::npos) << ko.err;
    // Any command refuses to start on a broken configuration.
    EXPECT_EQ(run_perfwatch({"--config", bad, "formats"}).exit_code, 2);
}

// The README's vocabulary table lists every canonical metric with its unit.
TEST(Cli, ReadmeListsEveryMetric) {
    const std::string readme = read_file(std::string(PERFWATCH_SOURCE_DIR) + "/README.md");
    const auto r = run_perfwatch({"metrics"});
    ASSERT_EQ(r.exit_code, 0);
    std::istringstream lines(r.out);
    std::string line, name, unit;
    std::getline(lines, line);  // header
    int count = 0;
    while (std::getline(lines, line)) {
        std::istringstream fields(line);
        fields >> name >> unit;
        EXPECT_NE(readme.find("| `" + name + "` | " + unit + " |"), std::string::npos) << name;
        ++count;
    }
    EXPECT_GT(count, 100);
}

TEST(Cli, UsageErrorsExitTwo) {
    EXPECT_EQ(run_perfwatch({"check"}).exit_code, 2);
    EXPECT_EQ(run_perfwatch({"check", "--fail-on", "fatal", "x"}).exit_code, 2);
    EXPECT_EQ(run_perfwatch({"ingest", "--label", "novalue", "x"}).exit_code, 2);
    EXPECT_EQ(run_perfwatch({"frobnicate"}).exit_code, 2);
}

}  // namespace perfwatch::test
