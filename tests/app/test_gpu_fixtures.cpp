#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "tests/support.hpp"

// The project's own GPU fixtures (tests/fixtures/h100): programs with known problems, built and
// profiled on an H100 by tools/gpu_fixtures/run.sh. What each kernel does wrong is known from its
// source, not from perfwatch; the numbers asserted are read from the files here.
namespace perfwatch {

namespace {

const std::string k_dir = std::string(PERFWATCH_SOURCE_DIR) + "/tests/fixtures/h100/";

nlohmann::json check_json(const test::TempDir& dir, const std::vector<std::string>& files,
                          const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"check", "--db", dir.file("f.db"), "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const auto& f : files) args.push_back(k_dir + f);
    const auto r = test::run_perfwatch(args);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
    return nlohmann::json::parse(r.out);
}

// (kernel function name, rule) of every finding.
std::set<std::pair<std::string, std::string>> fired(const nlohmann::json& doc) {
    std::set<std::pair<std::string, std::string>> out;
    for (const auto& f : doc["findings"]) {
        const std::string entity = f["entity"].value("name", "");
        out.emplace(entity.substr(0, entity.find('(')), f["rule"].get<std::string>());
    }
    return out;
}

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

// Each planted problem is named on its kernel in all three ncu shapes of the same profile, and
// its twin without the problem gets no such finding.
TEST(GpuFixtures, NcuNamesEachPlantedProblemOnItsKernelAndNotOnItsTwin) {
    const std::map<std::pair<std::string, std::string>, bool> k_truth{
        {{"copy_strided", "ncu-uncoalesced-global"}, true},
        {{"transpose_naive", "ncu-uncoalesced-global"}, true},
        {{"copy_coalesced", "ncu-uncoalesced-global"}, false},
        {{"small_grid_loop", "ncu-small-grid"}, true},
        // A hand-written naive SGEMM: allowing TF32 does nothing for it (untiled loads are its
        // problem), so the tensor-core advice is kept for library GEMMs (cuBLAS, CUTLASS).
        {{"sgemm_naive", "hotspot-gemm-without-tensor-cores"}, false},
        {{"smem_bank_conflicts", "ncu-shared-bank-conflicts"}, true},
        {{"smem_padded", "ncu-shared-bank-conflicts"}, false},
        {{"register_spills", "ncu-register-spills"}, true},
        {{"divergent_branches", "ncu-thread-divergence"}, true},
    };
    for (const std::string file : {"ncu_text_full.txt", "ncu_details_full.csv", "ncu_raw_full.csv.gz"}) {
        test::TempDir dir;
        const auto doc = check_json(dir, {file});
        const auto got = fired(doc);
        for (const auto& [key, expected] : k_truth)
            EXPECT_EQ(got.contains(key), expected) << file << ": " << key.first << " / " << key.second;
        for (const auto& [kernel, rule] : got)
            EXPECT_NE(rule, "ncu-impossible-measurement") << file << ": " << kernel << " is a correct measurement";
    }

    // The numbers in the messages are the file's: the small grid's blocks and the spill requests.
    const std::string text = read_text(k_dir + "ncu_text_full.txt");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(small_grid_loop\(float \*, int\) \((\d+), 1, 1\)x)")));
    const std::string blocks = m[1];
    ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(register_spills[^\n]*\n(?:[^\n]*\n)*?\s+Local Memory Spilling Requests\s+([\d,]+))")));
    std::string spills = m[1];
    std::erase(spills, ',');
    test::TempDir dir;
    const auto doc = check_json(dir, {"ncu_text_full.txt"});
    bool saw_grid = false, saw_spills = false;
    for (const auto& f : doc["findings"]) {
        const std::string msg = f["message"];
        if (f["rule"] == "ncu-small-grid" && msg.find("small grid: " + blocks + " blocks") != std::string::npos) saw_grid = true;
        if (f["rule"] == "ncu-register-spills" && msg.find(spills + " local-memory requests") != std::string::npos)
            saw_spills = true;
    }
    EXPECT_TRUE(saw_grid) << "small grid of " << blocks << " blocks";
    EXPECT_TRUE(saw_spills) << spills << " spill requests";
}

// ncu --clock-control none says so in its log; the run is labelled clocks=unlocked, and against a
// baseline measured at the base clock the changed clock is a finding naming both clocks.
TEST(GpuFixtures, UnlockedClocksAreLabelledAndAChangedClockIsSaid) {
    test::TempDir dir;
    const auto labels_of = [&](const std::string& file) {
        const auto doc = check_json(dir, {file}, {"--label", "benchmark=problems"});
        return doc["runs"][0]["labels"];
    };
    EXPECT_EQ(labels_of("ncu_text_sol_base.txt").value("clocks", ""), "");
    EXPECT_EQ(labels_of("ncu_text_sol_unlocked.txt").value("clocks", ""), "unlocked");
    EXPECT_EQ(labels_of("ncu_csv_sol_unlocked.csv").value("clocks", ""), "unlocked");

    // Every kernel of the base profile ran at the SM Frequency the file prints.
    const std::string base = read_text(k_dir + "ncu_text_sol_base.txt");
    std::set<std::string> clocks;
    const std::regex freq(R"(SM Frequency\s+Ghz\s+([\d.]+))");
    for (auto it = std::sregex_iterator(base.begin(), base.end(), freq); it != std::sregex_iterator(); ++it)
        clocks.insert((*it)[1]);
    ASSERT_EQ(clocks.size(), 1u);
    const int base_mhz = static_cast<int>(std::stod(*clocks.begin()) * 1000 + 0.5);

    test::TempDir history;
    check_json(history, {"ncu_text_sol_base.txt"}, {"--label", "benchmark=problems", "--label", "commit=a"});
    const auto doc = check_json(history, {"ncu_text_sol_unlocked.txt"}, {"--label", "benchmark=problems", "--label", "commit=b"});
    bool said = false;
    for (const auto& f : doc["findings"]) {
        if (f["rule"] != "run-clock-changed") continue;
        const std::string msg = f["message"];
        said = msg.find(std::to_string(base_mhz) + " MHz in the baseline") != std::string::npos &&
               msg.find("clocks (none) -> unlocked") != std::string::npos;
        EXPECT_TRUE(said) << msg;
    }
    EXPECT_TRUE(said);
}

// cuBLAS names its FP32 SIMT GEMM "..._xmma_gemm_f32f32_f32f32_f32_..._ffma_...": xmma in the name
// does not mean tensor cores. The bf16 GEMM of the same size uses them.
TEST(GpuFixtures, AnFfmaGemmIsToldAndATensorCoreGemmIsNot) {
    test::TempDir dir;
    const auto fp32 = fired(check_json(dir, {"kineto_gemm_fp32_no_tf32.json.gz"}));
    bool told = false;
    for (const auto& [kernel, rule] : fp32)
        if (rule == "hotspot-gemm-without-tensor-cores" && kernel.find("_ffma_") != std::string::npos) told = true;
    EXPECT_TRUE(told);
    for (const auto& [kernel, rule] : fired(check_json(dir, {"kineto_gemm_bf16.json.gz"})))
        EXPECT_NE(rule, "hotspot-gemm-without-tensor-cores") << kernel;
}

}  // namespace perfwatch
