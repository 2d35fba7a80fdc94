#include <gtest/gtest.h>

#include <cmath>

#include <SQLiteCpp/SQLiteCpp.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <map>
#include <set>
#include <regex>
#include <sstream>

#include "collectors/amd/rocprof.hpp"
#include "tests/collectors/ncu_helpers.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

// The test's own reading of a stats CSV: calls and total ns from each row's trailing numbers.
std::pair<double, double> stats_totals(const std::string& path) {
    static const std::regex k_row(R"(,(\d+),(\d+),(\d+),([0-9.eE+-]+)\s*$)");
    std::istringstream in(read_file(path));
    std::string line;
    std::getline(in, line);  // header
    double calls = 0, total = 0;
    std::smatch m;
    while (std::getline(in, line))
        if (line.find("<barrier packet>") == std::string::npos && std::regex_search(line, m, k_row)) {
            calls += std::stod(m[1]);
            total += std::stod(m[2]);
        }
    return {calls, total};
}

std::pair<double, double> sql_totals(const std::string& path, const std::string& sql) {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    SQLite::Statement st(db, sql);
    st.executeStep();
    return {st.getColumn(0).getDouble(), st.getColumn(1).getDouble()};
}

void expect_run_totals(const RunBatch& b, std::pair<double, double> expected) {
    EXPECT_DOUBLE_EQ(b.entities[0].value("launches").value_or(-1), expected.first);
    EXPECT_NEAR(b.entities[0].value("gpu_time").value_or(-1), expected.second, expected.second * 0.001);
}

// Per function (the row's first group): calls and total time (third group minus second), over the
// lines of `path` that `row` matches.
std::map<std::string, std::pair<double, double>> call_sums(const std::string& path, const std::regex& row) {
    std::map<std::string, std::pair<double, double>> calls;
    std::istringstream in(read_file(path));
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (!std::regex_match(line, m, row)) continue;
        calls[m[1]].first += 1;
        calls[m[1]].second += std::stod(m[3]) - std::stod(m[2]);
    }
    return calls;
}

// Each function's calls and total time, and the run's call count, as `calls` (function -> count,
// total ns) has them.
void expect_api_calls(const RunBatch& b, const std::map<std::string, std::pair<double, double>>& calls) {
    double count = 0;
    for (const auto& [name, sums] : calls) {
        const Entity* e = nullptr;
        for (const Entity& x : b.entities)
            if (x.kind == EntityKind::api_call && x.name == name) e = &x;
        ASSERT_NE(e, nullptr) << name;
        EXPECT_DOUBLE_EQ(e->value("count").value_or(-1), sums.first) << name;
        EXPECT_DOUBLE_EQ(e->value("duration_total").value_or(-1), sums.second) << name;
        count += sums.first;
    }
    EXPECT_DOUBLE_EQ(b.entities[0].value("api_calls").value_or(-1), count);
}

}  // namespace

TEST(RocprofStats, CorpusKernelStats) {
    for (const char* file : {"rocprof/HGLiu1998_batched_gemm__results.stats.csv", "rocprof/saltfish__results.stats.csv",
                             "rocprof/dalg24_kokkos__results.stats.csv"}) {
        PERFWATCH_CORPUS_FILE(path, file);
        const RunBatch b = collect_ok(path);
        EXPECT_EQ(b.format, "rocprof-stats");
        expect_run_totals(b, stats_totals(path));
    }
}

TEST(RocprofStats, UnquotedNamesWithCommasAndBarrierPackets) {
    PERFWATCH_CORPUS_FILE(kokkos, "rocprof/dalg24_kokkos__results.stats.csv");
    const RunBatch k = collect_ok(kokkos);
    bool found = false;
    for (const Entity* e : of_kind(k, EntityKind::kernel))
        if (e->name.find("scatter_view_loop(Kokkos::View<int**>, Kokkos::View<int*>)") != std::string::npos) {
            found = true;
            EXPECT_DOUBLE_EQ(metric(e, "duration_total"), 533600);
        }
    EXPECT_TRUE(found);
    PERFWATCH_CORPUS_FILE(salt, "rocprof/saltfish__results.stats.csv");
    const RunBatch s = collect_ok(salt);
    // The file's "<barrier packet>" row (85112 calls, 142976988030 ns) is a wait, not a kernel.
    EXPECT_EQ(kernel_named(s, "<barrier packet>"), nullptr);
    const Entity* barrier = nullptr;
    for (const Entity* e : of_kind(s, EntityKind::api_call))
        if (e->name == "<barrier packet>") barrier = e;
    ASSERT_NE(barrier, nullptr);
    EXPECT_EQ(barrier->attributes.at("category"), "barrier");
    EXPECT_DOUBLE_EQ(metric(barrier, "count"), 85112);
    EXPECT_DOUBLE_EQ(metric(barrier, "duration_total"), 142976988030);
}

TEST(RocprofStats, HipAndCopyStatsAreNotKernels) {
    PERFWATCH_CORPUS_FILE(hip, "rocprof/HGLiu1998_batched_gemm__results.hip_stats.csv");
    const RunBatch h = collect_ok(hip);
    EXPECT_TRUE(of_kind(h, EntityKind::kernel).empty());
    EXPECT_EQ(of_kind(h, EntityKind::api_call).size(), 6u);  // six rows, hipMemcpy to __hipPushCallConfiguration
    PERFWATCH_CORPUS_FILE(copy, "rocprof/HGLiu1998_batched_gemm__results.copy_stats.csv");
    const RunBatch c = collect_ok(copy);
    EXPECT_EQ(of_kind(c, EntityKind::memcpy).size(), 2u);
}

TEST(RocprofSqlite, V1ResultsDbAndRocpd) {
    PERFWATCH_CORPUS_FILE(v1, "rocprof/HGLiu1998_batched_gemm__results.db");
    const RunBatch a = collect_ok(v1);
    EXPECT_EQ(a.format, "rocprof-sqlite");
    expect_run_totals(a, sql_totals(v1, "SELECT count(*), sum(EndNs - BeginNs) FROM OPS"));
    PERFWATCH_CORPUS_FILE(v3, "rocprof/HGLiu1998_batched_gemm__ck_bmm_37ca13315e70_28_results.db");
    const RunBatch b = collect_ok(v3);
    EXPECT_EQ(b.format_detail, "rocprofv3 rocpd database");
    expect_run_totals(b, sql_totals(v3, "SELECT count(*), sum(end - start) FROM kernels"));
}

// rocprof v1 --stats writes KERN alone; --hip-trace on old ROCm writes OPS without KERN.
TEST(RocprofSqlite, V1KernOnlyAndOpsOnlyDatabases) {
    for (const char* file : {"rocprof/gunrock__gunrock__results.db", "rocprof/hpcgarage__spatter__results.db",
                             "rocprof/amd__HPCTrainingExamples__results.db"}) {
        PERFWATCH_CORPUS_FILE(path, file);
        const RunBatch b = collect_ok(path);
        EXPECT_EQ(b.format_detail, "rocprof v1 results.db (KERN dispatches)") << file;
        expect_run_totals(b, sql_totals(path, "SELECT count(*), sum(EndNs - BeginNs) FROM KERN"));
    }
    PERFWATCH_CORPUS_FILE(kokkos, "rocprof/dalg24__kokkos__results.db");
    const RunBatch k = collect_ok(kokkos);
    expect_run_totals(k, sql_totals(kokkos, "SELECT count(*), sum(EndNs - BeginNs) FROM OPS"));
    // Copies only are memory time; the HIP API trace's calls are host calls, each name one entity.
    EXPECT_DOUBLE_EQ(k.entities[0].value("memory_time").value_or(-1),
                     sql_totals(kokkos, "SELECT count(*), sum(EndNs - BeginNs) FROM COPY").second);
    std::size_t names = 0;
    for (const Entity* e : of_kind(k, EntityKind::api_call)) {
        ++names;
        SCOPED_TRACE(e->name);
        const auto want = sql_totals(kokkos, "SELECT count(*), sum(EndNs - BeginNs) FROM HIP WHERE Name = '" + e->name + "'");
        EXPECT_DOUBLE_EQ(e->value("count").value_or(-1), want.first);
        EXPECT_DOUBLE_EQ(e->value("duration_total").value_or(-1), want.second);
        EXPECT_EQ(e->attributes.contains("synchronizing"), e->name == "hipMemcpy" || e->name.ends_with("Synchronize") ||
                                                               e->name == "hipMemset");
    }
    EXPECT_EQ(static_cast<double>(names), sql_totals(kokkos, "SELECT count(DISTINCT Name), 0 FROM HIP").first);
}

// A kernel's launch configuration is its longest dispatch's, as SQL picks it from the file:
// gunrock's merge_path_kernel runs from 1 to 39,041 workgroups over 11 dispatches, its last one
// workgroup, its 3.8 ms one 18,937. The kernel trace CSV of the same run says the same.
TEST(RocprofSqlite, LaunchConfigurationIsTheLongestDispatchs) {
    PERFWATCH_CORPUS_FILE(db_path, "rocprof/gunrock__gunrock__results.db");
    PERFWATCH_CORPUS_FILE(csv_path, "rocprof/gunrock__gunrock__results.csv");
    SQLite::Database db(db_path, SQLite::OPEN_READONLY);
    // Every dispatch as long as its kernel's longest (two can tie).
    SQLite::Statement st(db, "SELECT KernelName, grd, wgr FROM KERN k WHERE EndNs - BeginNs = "
                             "(SELECT max(EndNs - BeginNs) FROM KERN j WHERE j.KernelName = k.KernelName)");
    std::map<std::string, std::set<std::pair<double, double>>> longest;  // name (CSV quotes dropped) -> {grid in workgroups, workgroup}
    while (st.executeStep()) {
        std::string name = st.getColumn(0).getString();
        if (name.size() >= 2 && name.front() == '"') name = name.substr(1, name.size() - 2);
        longest[name].insert({std::ceil(st.getColumn(1).getDouble() / st.getColumn(2).getDouble()), st.getColumn(2).getDouble()});
    }
    ASSERT_GE(longest.size(), 2u);
    for (const std::string& path : {db_path, csv_path}) {
        const RunBatch b = collect_ok(path);
        std::size_t checked = 0;
        for (const Entity& e : b.entities) {
            if (e.kind != EntityKind::kernel || !longest.contains(e.name)) continue;
            const std::pair<double, double> got{e.value("grid_size").value_or(-1), e.value("block_size").value_or(-1)};
            EXPECT_TRUE(longest[e.name].contains(got)) << path << " " << e.name << ": " << got.first << " x " << got.second;
            ++checked;
        }
        EXPECT_EQ(checked, longest.size()) << path;
    }
    for (const auto& [name, configs] : longest)
        if (name.find("merge_path_kernel") != std::string::npos)
            EXPECT_EQ(configs, (std::set<std::pair<double, double>>{{18937, 256}})) << "the 3.8 ms dispatch";
}

// The reader asks the database which columns its tables have: a rocpd kernels table without the
// launch configuration columns (an older rocprofv3) still gives its dispatches and times, with
// no configuration figures; one without a time column is refused naming the table and column.
TEST(RocprofSqlite, SchemaAskedNotAssumed) {
    TempDir dir;
    const std::string lean = dir.file("lean.db"), broken = dir.file("broken.db"), old_kern = dir.file("kern.db");
    {
        SQLite::Database db(lean, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        db.exec("CREATE TABLE rocpd_kernel_dispatch (id INTEGER);"
                "CREATE TABLE kernels (name TEXT, start INTEGER, end INTEGER);"
                "INSERT INTO kernels VALUES ('gemm', 100, 400), ('gemm', 500, 900), ('relu', 1000, 1050);");
    }
    {
        SQLite::Database db(broken, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        db.exec("CREATE TABLE rocpd_kernel_dispatch (id INTEGER);"
                "CREATE TABLE kernels (name TEXT, start INTEGER, agent_abs_index INTEGER);"
                "INSERT INTO kernels VALUES ('gemm', 100, 0);");
    }
    {
        // rocprof v1 --stats of an older ROCm: KERN without the register columns.
        SQLite::Database db(old_kern, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        db.exec("CREATE TABLE KERN (KernelName TEXT, BeginNs INTEGER, EndNs INTEGER, grd INTEGER, wgr INTEGER);"
                "INSERT INTO KERN VALUES ('\"k\"', 10, 30, 1024, 256), ('\"k\"', 40, 100, 1024, 256);");
    }
    const RunBatch a = collect_ok(lean);
    expect_run_totals(a, sql_totals(lean, "SELECT count(*), sum(end - start) FROM kernels"));
    const auto kernels = of_kind(a, EntityKind::kernel);
    ASSERT_EQ(kernels.size(), 2u);
    for (const Entity* k : kernels) {
        EXPECT_EQ(k->metric("block_size"), nullptr) << k->name;
        EXPECT_EQ(k->metric("vgpr_count"), nullptr) << k->name;
    }

    const auto b = collect_file(broken);
    ASSERT_FALSE(b.has_value());
    EXPECT_NE(b.error().message.find("kernels table has no end column"), std::string::npos) << b.error().to_string();
    EXPECT_NE(b.error().message.find("agent_abs_index, name, start"), std::string::npos) << b.error().to_string();

    const RunBatch c = collect_ok(old_kern);
    expect_run_totals(c, sql_totals(old_kern, "SELECT count(*), sum(EndNs - BeginNs) FROM KERN"));
    const auto k = of_kind(c, EntityKind::kernel);
    ASSERT_EQ(k.size(), 1u);
    EXPECT_DOUBLE_EQ(k[0]->value("block_size").value_or(-1), 256);
    EXPECT_DOUBLE_EQ(k[0]->value("grid_size").value_or(-1), 1024.0 / 256);
    EXPECT_EQ(k[0]->metric("vgpr_count"), nullptr);
}

TEST(RocprofJson, StringTimesAndProcessRoles) {
    PERFWATCH_CORPUS_FILE(path, "rocprof/HGLiu1998_batched_gemm__results.json");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format, "rocprof-json");
    // Walk: complete events on processes named GPU<n> (not GPU Barriers), times in us.
    const auto doc = nlohmann::json::parse(read_file(path));
    std::map<std::string, std::string> names;
    for (const auto& e : doc["traceEvents"])
        if (e.value("ph", "") == "M" && e.value("name", "") == "process_name")
            names[e["pid"].dump()] = e["args"]["name"].get<std::string>();
    double kernels = 0, total = 0;
    for (const auto& e : doc["traceEvents"]) {
        if (e.value("ph", "") != "X") continue;
        const std::string proc = names[e["pid"].dump()];
        if (!proc.starts_with("GPU") || proc.starts_with("GPU Barriers")) continue;
        kernels += 1;
        // Nanoseconds from args (ts and dur are whole microseconds).
        total += std::stod(e["args"]["EndNs"].get<std::string>()) - std::stod(e["args"]["BeginNs"].get<std::string>());
    }
    expect_run_totals(b, {kernels, total});
    EXPECT_NEAR(b.entities[0].value("gpu_time").value_or(-1), total, 1.0);  // to the nanosecond
    EXPECT_NE(b.format_detail.find("BeginNs"), std::string::npos) << b.format_detail;
    EXPECT_FALSE(of_kind(b, EntityKind::api_call).empty());
}

namespace {

// Complete events of a rocprof results.json by process role: "gpu" (GPU<n>, not barriers), "copy".
std::map<std::string, std::vector<std::pair<double, double>>> results_json_intervals(const std::string& path) {
    const auto doc = nlohmann::json::parse(read_file(path));
    // rocprof writes pids as numbers in metadata and as strings in events.
    const auto pid = [](const nlohmann::json& e) { return e["pid"].is_string() ? e["pid"].get<std::string>() : e["pid"].dump(); };
    std::map<std::string, std::string> names;
    for (const auto& e : doc["traceEvents"])
        if (e.value("ph", "") == "M" && e.value("name", "") == "process_name")
            names[pid(e)] = e["args"]["name"].get<std::string>();
    std::map<std::string, std::vector<std::pair<double, double>>> out;
    for (const auto& e : doc["traceEvents"]) {
        if (e.value("ph", "") != "X") continue;
        const std::string proc = names[pid(e)];
        const std::string role = proc == "COPY" ? "copy" : proc.starts_with("GPU Barriers") ? "" : proc.starts_with("GPU") ? proc : "";
        if (role.empty()) continue;
        // The nanosecond times rocprof keeps in args.
        out[role].emplace_back(std::stod(e["args"]["BeginNs"].get<std::string>()),
                               std::stod(e["args"]["EndNs"].get<std::string>()));
    }
    return out;
}

double union_length(std::vector<std::pair<double, double>> v) {
    std::sort(v.begin(), v.end());
    double total = 0, lo = 0, hi = -1;
    for (const auto& [a, b] : v) {
        if (a > hi) {
            if (hi > lo) total += hi - lo;
            lo = a;
            hi = b;
        } else {
            hi = std::max(hi, b);
        }
    }
    if (hi > lo) total += hi - lo;
    return total;
}

}  // namespace

// The COPY lane is copy engines, not a device: with one GPU its copies are that GPU's busy time
// (the union of both, computed here from the file); with three GPUs it is no device at all, and
// the run's busy time is the union of the GPUs' intervals.
TEST(RocprofJson, TheCopyLaneIsNoDevice) {
    PERFWATCH_CORPUS_FILE(one, "rocprof/dalg24__kokkos__results.json");
    const auto lanes = results_json_intervals(one);
    ASSERT_EQ(lanes.size(), 2u);  // GPU0 and copy
    ASSERT_TRUE(lanes.contains("copy"));
    const RunBatch b = collect_ok(one);
    const auto devices = of_kind(b, EntityKind::device);
    ASSERT_EQ(devices.size(), 1u);
    EXPECT_EQ(devices[0]->name, "GPU 0");
    std::vector<std::pair<double, double>> all = lanes.at("copy");
    all.insert(all.end(), lanes.at("GPU0").begin(), lanes.at("GPU0").end());
    EXPECT_NEAR(metric(devices[0], "busy_time"), union_length(all), 1.0);
    EXPECT_LE(metric(&b.entities[0], "busy_time"), metric(&b.entities[0], "span"));

    PERFWATCH_CORPUS_FILE(three, "rocprof/HGLiu1998_batched_gemm__results.json");
    const RunBatch c = collect_ok(three);
    for (const Entity* d : of_kind(c, EntityKind::device)) EXPECT_TRUE(d->name.starts_with("GPU ")) << d->name;
    EXPECT_FALSE(of_kind(c, EntityKind::memcpy).empty());
    // The run is busy while any GPU is: the union of the GPUs' intervals, never more than its span.
    std::vector<std::pair<double, double>> gpus;
    for (const auto& [lane, v] : results_json_intervals(three))
        if (lane != "copy") gpus.insert(gpus.end(), v.begin(), v.end());
    EXPECT_NEAR(metric(&c.entities[0], "busy_time"), union_length(gpus), 1.0);
    EXPECT_LE(metric(&c.entities[0], "busy_time"), metric(&c.entities[0], "span"));
}

// A name listed twice (two stats tables concatenated) is one kernel: calls, times and share
// added, min and max kept, and the standard deviation pooled from both rows' (computed here from
// the rows as written: population variances around each row's mean).
TEST(RocprofStats, ANameListedAgainAddsToItsRow) {
    const std::string text =
        "\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\",\"MinNs\",\"MaxNs\",\"StdDev\"\n"
        "\"gemm\",10,1000,100,60.0,90,110,5\n"
        "\"relu\",4,200,50,12.0,40,60,8\n"
        "\"gemm\",30,3600,120,28.0,80,150,10\n";
    auto r = collect_content("v3_kernel_stats.csv", text);
    ASSERT_TRUE(r) << r.error().to_string();
    const Entity* gemm = kernel_named(*r, "gemm");
    ASSERT_NE(gemm, nullptr);
    EXPECT_EQ(of_kind(*r, EntityKind::kernel).size(), 2u);
    EXPECT_DOUBLE_EQ(metric(gemm, "launches"), 40);
    EXPECT_DOUBLE_EQ(metric(gemm, "duration_total"), 4600);
    EXPECT_DOUBLE_EQ(metric(gemm, "duration_mean"), 115);
    EXPECT_DOUBLE_EQ(metric(gemm, "duration_min"), 80);
    EXPECT_DOUBLE_EQ(metric(gemm, "duration_max"), 150);
    const double mean = 4600.0 / 40, second_moment = (10 * (25 + 100.0 * 100) + 30 * (100 + 120.0 * 120)) / 40;
    EXPECT_NEAR(metric(gemm, "duration_std"), std::sqrt(second_moment - mean * mean), 1e-9);
    EXPECT_DOUBLE_EQ(metric(&r->entities[0], "gpu_time"), 4800);
    EXPECT_DOUBLE_EQ(metric(&r->entities[0], "launches"), 44);
    bool noted = false;
    for (const std::string& n : r->notes) noted = noted || n.find("1 rows named an entry already listed") != std::string::npos;
    EXPECT_TRUE(noted);
}

TEST(RocprofStats, MissingColumnsNameTheLine) {
    auto r = collect_content("s.csv", "\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\"\n\"k\",1,abc,3,100.0\n");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().line, 2u);
    EXPECT_NE(r.error().message.find("TotalDurationNs"), std::string::npos) << r.error().message;
}

}  // namespace perfwatch::test

namespace perfwatch::test {

TEST(RocprofTraceCsv, DispatchRowsAggregatePerKernel) {
    const RunBatch b = collect_ok(fixture("rocprof/run_kernel_trace.csv"));
    EXPECT_EQ(b.format, "rocprof-trace-csv");
    const Entity* gemm = kernel_named(b, "gemm_bf16_128x128(hip_bfloat16 const*, hip_bfloat16 const*, float*, int, int, int)");
    ASSERT_NE(gemm, nullptr);
    EXPECT_DOUBLE_EQ(metric(gemm, "launches"), 2);
    EXPECT_DOUBLE_EQ(metric(gemm, "duration_total"), 850000 + 860000);
    EXPECT_DOUBLE_EQ(metric(gemm, "vgpr_count"), 128);
    EXPECT_DOUBLE_EQ(metric(gemm, "grid_size"), 1024);  // 262144 work-items / 256 per workgroup
    EXPECT_DOUBLE_EQ(b.entities[0].value("short_launches").value_or(-1), 2);  // layernorm: 9 us, 8.5 us
}

}  // namespace perfwatch::test

namespace perfwatch::test {

namespace {

// The test's own reading of a rocprof v1 raw trace: per name, the count and summed EndNs - BeginNs
// of "BeginNs:EndNs a:b rest" lines; `key` turns `rest` into the name ("" skips the line).
std::map<std::string, std::pair<double, double>> raw_trace_sums(const std::string& path,
                                                                std::string (*key)(const std::string&)) {
    static const std::regex k_line(R"(^(\d+):(\d+) \d+:\d+ (.*)$)");
    std::map<std::string, std::pair<double, double>> out;
    std::istringstream in(read_file(path));
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (!std::regex_match(line, m, k_line)) continue;
        const std::string name = key(m[3]);
        if (name.empty()) continue;
        out[name].first += 1;
        out[name].second += std::stod(m[2]) - std::stod(m[1]);
    }
    return out;
}

}  // namespace

TEST(RocprofTextTrace, OpsTraceKernelsAndCopies) {
    const std::string path = fixture("rocprof/v1_raw/hcc_ops_trace.txt");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format, "rocprof-text-trace");
    const auto kernels = raw_trace_sums(path, [](const std::string& rest) -> std::string {
        const std::string name = rest.substr(0, rest.rfind(':'));
        if (name.find("Copy") != std::string::npos || name.find("Marker") != std::string::npos) return "";
        return name;
    });
    ASSERT_EQ(kernels.size(), 2u);
    double launches = 0, total = 0;
    for (const auto& [name, sums] : kernels) {
        const Entity* e = nullptr;
        for (const Entity& x : b.entities)
            if (x.kind == EntityKind::kernel && x.name == name) e = &x;
        ASSERT_NE(e, nullptr) << name;
        EXPECT_DOUBLE_EQ(e->value("launches").value_or(-1), sums.first);
        EXPECT_DOUBLE_EQ(e->value("duration_total").value_or(-1), sums.second);
        launches += sums.first;
        total += sums.second;
    }
    expect_run_totals(b, {launches, total});
    EXPECT_EQ(std::count_if(b.entities.begin(), b.entities.end(), [](const Entity& e) { return e.kind == EntityKind::memcpy; }), 2);
    EXPECT_NE(std::find(b.notes.begin(), b.notes.end(), "1 barrier packets are not counted as kernels"), b.notes.end());
}

TEST(RocprofTextTrace, ApiTracesTextAndCsv) {
    for (const char* file : {"rocprof/v1_raw/hip_api_trace.txt", "rocprof/v1_raw/4100_hip_api_trace.csv"}) {
        SCOPED_TRACE(file);
        const std::string path = fixture(file);
        const RunBatch b = collect_ok(path);
        std::map<std::string, std::pair<double, double>> calls;
        if (std::string(file).ends_with(".txt")) {
            calls = raw_trace_sums(path, [](const std::string& rest) { return rest.substr(0, rest.find('(')); });
        } else {
            // "Domain","Function",pid,tid,corr,start,end
            calls = call_sums(path, std::regex(R"re(^"[A-Z_]+","([^"]+)",\d+,\d+,\d+,(\d+),(\d+)$)re"));
        }
        ASSERT_FALSE(calls.empty());
        expect_api_calls(b, calls);
        EXPECT_GT(b.entities[0].value("sync_api_calls").value_or(0), 0);  // hipMemcpy, hipDeviceSynchronize
    }
}

// rocprofv2's file plugin writes its HIP API trace as CSV with an unquoted header, a blank line,
// and a launch call's kernel name in a field the header does not name (fixture in that shape,
// from the plugin's source): read as host calls with the note that there are no kernel timings.
TEST(RocprofTextTrace, RocprofV2HipApiCsv) {
    const std::string path = fixture("rocprof/v2_file/12345_hip_api_trace.csv");
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format, "rocprof-api-trace-csv");
    // The test's own reading: function, then begin and end as the row's last fields but one.
    const auto calls = call_sums(path, std::regex(R"re(^[A-Z_]+,"([^"]+)",(?:"[^"]*",)?(\d+),(\d+),\d+$)re"));
    ASSERT_EQ(calls.size(), 6u);
    expect_api_calls(b, calls);
    EXPECT_NE(std::find(b.notes.begin(), b.notes.end(), "API trace only: no kernel timings"), b.notes.end());
}

TEST(RocprofTextTrace, MarkerRangesAreRanges) {
    const RunBatch b = collect_ok(fixture("rocprof/v1_raw/4100_marker_api_trace.csv"));
    const Entity* compute = nullptr;
    for (const Entity& e : b.entities)
        if (e.kind == EntityKind::nvtx_range && e.name == "compute") compute = &e;
    ASSERT_NE(compute, nullptr);
    // The file's two "compute" rows: 2047900 - 2009000 and 2060000 - 2048000.
    EXPECT_DOUBLE_EQ(compute->value("count").value_or(-1), 2);
    EXPECT_DOUBLE_EQ(compute->value("duration_total").value_or(-1), (2047900 - 2009000) + (2060000 - 2048000));
}

}  // namespace perfwatch::test
