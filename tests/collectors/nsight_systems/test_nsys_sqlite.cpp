#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <map>

#include "collectors/nsight_systems/nsys_sqlite.hpp"
#include "tests/collectors/ncu_helpers.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

// The kernel table of the exports these tests write, as nsys creates it.
constexpr const char* k_kernel_table =
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,"
    " correlationId INTEGER, demangledName INTEGER, shortName INTEGER, gridX INTEGER, gridY INTEGER,"
    " gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER, registersPerThread INTEGER,"
    " staticSharedMemory INTEGER, dynamicSharedMemory INTEGER);";

// The test's own reading of an export: kernel rows and summed durations straight from SQL.
struct KernelTotals {
    double launches = 0, total_ns = 0;
};

KernelTotals query_totals(const std::string& path) {
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    SQLite::Statement st(db, "SELECT count(*), coalesce(sum(end - start), 0) FROM CUPTI_ACTIVITY_KIND_KERNEL");
    st.executeStep();
    return {st.getColumn(0).getDouble(), st.getColumn(1).getDouble()};
}

void expect_totals_match(const std::string& path) {
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format, "nsys-sqlite");
    const KernelTotals t = query_totals(path);
    const Entity& run = b.entities[0];
    EXPECT_NEAR(run.value("launches").value_or(-1), t.launches, t.launches * 0.001);
    EXPECT_NEAR(run.value("gpu_time").value_or(-1), t.total_ns, t.total_ns * 0.001);
    double sum = 0;
    for (const Entity* k : of_kind(b, EntityKind::kernel)) sum += metric(k, "duration_total");
    EXPECT_NEAR(sum, t.total_ns, t.total_ns * 0.001);
}

}  // namespace

TEST(NsysSqlite, Corpus2023Schema291) {
    PERFWATCH_CORPUS_FILE(path, "nsys/lsaeteurn-vectoraddition_report1_2023.sqlite");
    expect_totals_match(path);
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.tool_version, "2022.2.1.31");
    EXPECT_EQ(b.format_detail, "export schema 2.9.1");
    const auto devices = of_kind(b, EntityKind::device);
    ASSERT_EQ(devices.size(), 1u);
    EXPECT_EQ(devices[0]->attributes.at("gpu"), "NVIDIA A100-SXM4-40GB");
    EXPECT_DOUBLE_EQ(metric(devices[0], "sm_count"), 108);
    const Entity* add = kernel_named(b, "add(int, float *, float *)");
    ASSERT_NE(add, nullptr);
    EXPECT_EQ(add->attributes.at("short_name"), "add");
    EXPECT_DOUBLE_EQ(metric(add, "grid_size"), 1);
    EXPECT_DOUBLE_EQ(metric(add, "registers_per_thread"), 16);
    // 4608 unified-memory copies: 3072 HtoD of 536870912 bytes, 1536 DtoH of 268435456 bytes.
    double copies = 0, bytes = 0;
    for (const Entity* m : of_kind(b, EntityKind::memcpy)) {
        copies += metric(m, "count");
        bytes += metric(m, "bytes");
    }
    EXPECT_DOUBLE_EQ(copies, 4608);
    EXPECT_DOUBLE_EQ(bytes, 536870912.0 + 268435456.0);
    // cudaDeviceSynchronize is named as a synchronizing call.
    bool sync = false;
    for (const Entity* a : of_kind(b, EntityKind::api_call))
        if (a->name == "cudaDeviceSynchronize") sync = a->attributes.contains("synchronizing");
    EXPECT_TRUE(sync);
    EXPECT_GT(b.entities[0].value("launch_latency_mean").value_or(-1), 0);
}

TEST(NsysSqlite, Corpus2025Schema324) {
    PERFWATCH_CORPUS_FILE(path, "nsys/p4arth-cuda-perf-sandbox_report1_nsys2025.5.sqlite");
    expect_totals_match(path);
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.tool_version, "2025.5.2.266");
    // Two pageable HtoD copies and one DtoH copy into pageable memory.
    double pageable = 0;
    for (const Entity* m : of_kind(b, EntityKind::memcpy))
        if (m->attributes.contains("host_memory") && m->attributes.at("host_memory") == "pageable")
            pageable += metric(m, "count");
    EXPECT_DOUBLE_EQ(pageable, 3);
    EXPECT_DOUBLE_EQ(b.entities[0].value("pageable_memcpy_count").value_or(-1), 3);
}

TEST(NsysSqlite, Corpus2021CaptureWithoutGpuDataIsAnEmptyRunWithANote) {
    PERFWATCH_CORPUS_FILE(path, "nsys/cardiac-simulation_report1_2021.sqlite");
    const RunBatch b = collect_ok(path);
    EXPECT_TRUE(of_kind(b, EntityKind::kernel).empty());
    ASSERT_FALSE(b.notes.empty());
    EXPECT_NE(b.notes[0].find("no CUDA kernel data"), std::string::npos);
    ASSERT_EQ(of_kind(b, EntityKind::device).size(), 1u);
    EXPECT_EQ(of_kind(b, EntityKind::device)[0]->attributes.at("cc"), "8.6");
}

TEST(NsysSqlite, ASqliteFileThatIsNotAnExportIsRejected) {
    TempDir dir;
    const std::string path = dir.file("other.sqlite");
    {
        SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        db.exec("CREATE TABLE notes(id INTEGER, text TEXT); INSERT INTO notes VALUES(1, 'hello')");
    }
    auto r = collect_file(path);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().file, path);
    EXPECT_NE(r.error().message.find("not an Nsight Systems export"), std::string::npos) << r.error().message;
}

// An export written here: 3,000 kernels of 4 names on 2 devices, recorded in completion order
// (neighbouring launches swapped), and their cudaLaunchKernel rows in call order among 1,000
// other runtime calls that launch nothing. Launch latency (read side by side, not joined) must
// equal SQL's join; busy time per device must equal the union computed here.
TEST(NsysSqlite, LaunchLatencyAndBusyTimeMatchSqlOnAGeneratedExport) {
    TempDir dir;
    const std::string path = dir.file("generated.sqlite");
    std::map<std::string, std::vector<std::pair<double, double>>> spans;
    {
        SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        db.exec("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
                + std::string(k_kernel_table) +
                "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, correlationId INTEGER, nameId INTEGER);"
                "INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cudaMemcpyAsync_v3020'),"
                " (10, 'k0(float*)'), (11, 'k1(float*)'), (12, 'k2(float*)'), (13, 'k3(float*)'), (20, 'k');");
        db.exec("BEGIN");
        SQLite::Statement k(db, "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, 7, ?, ?, 20, 1, 1, 1, 128, 1, 1, 32, 0, 0)");
        SQLite::Statement r(db, "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?)");
        long long correlation = 100;
        std::vector<std::array<long long, 5>> kernels;
        for (int i = 0; i < 3000; ++i) {
            const long long call = 1000LL * i, start = call + 5000 + (i * 37) % 4000, end = start + 500 + (i * 101) % 3000;
            if (i % 3 == 0) {  // a call that launches nothing
                r.bind(1, static_cast<int64_t>(call - 300));
                r.bind(2, static_cast<int64_t>(call - 200));
                r.bind(3, static_cast<int64_t>(correlation++));
                r.bind(4, 2);
                r.exec();
                r.reset();
            }
            r.bind(1, static_cast<int64_t>(call));
            r.bind(2, static_cast<int64_t>(call + 100));
            r.bind(3, static_cast<int64_t>(correlation));
            r.bind(4, 1);
            r.exec();
            r.reset();
            kernels.push_back({start, end, i % 2, correlation++, 10 + i % 4});
        }
        for (std::size_t i = 0; i + 1 < kernels.size(); i += 2) std::swap(kernels[i], kernels[i + 1]);
        for (const auto& x : kernels) {
            for (int c = 0; c < 5; ++c) k.bind(c + 1, static_cast<int64_t>(x[static_cast<std::size_t>(c)]));
            k.exec();
            k.reset();
            spans[fmt::format("device {}", x[2])].emplace_back(static_cast<double>(x[0]), static_cast<double>(x[1]));
        }
        db.exec("COMMIT");
    }
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    const double latency = db.execAndGet("SELECT avg(k.start - r.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN "
                                         "CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId")
                               .getDouble();
    const double latency_max = db.execAndGet("SELECT max(k.start - r.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN "
                                             "CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId")
                                   .getDouble();
    const RunBatch b = collect_ok(path);
    EXPECT_DOUBLE_EQ(b.entities[0].value("launch_latency_mean").value_or(-1), latency);
    EXPECT_DOUBLE_EQ(b.entities[0].value("launch_latency_max").value_or(-1), latency_max);
    EXPECT_EQ(b.entities[0].value("launches").value_or(-1), 3000);
    EXPECT_EQ(of_kind(b, EntityKind::kernel).size(), 4u);
    for (auto& [device, list] : spans) {
        std::sort(list.begin(), list.end());
        double busy = 0, cur_start = list[0].first, cur_end = list[0].second;
        for (const auto& [s, e] : list) {
            if (s <= cur_end) {
                cur_end = std::max(cur_end, e);
            } else {
                busy += cur_end - cur_start;
                cur_start = s;
                cur_end = e;
            }
        }
        busy += cur_end - cur_start;
        const auto dev = std::find_if(b.entities.begin(), b.entities.end(), [&](const Entity& e) {
            return e.kind == EntityKind::device && e.name == device;
        });
        ASSERT_NE(dev, b.entities.end()) << device;
        EXPECT_DOUBLE_EQ(dev->value("busy_time").value_or(-1), busy) << device;
    }
}

}  // namespace perfwatch::test

namespace perfwatch::test {

// A synchronizing call's GPU idle time, read here by brute force: for every call, its length minus
// the union of the kernel, copy and set intervals inside it (all rows straight from SQL).
TEST(NsysSqlite, GpuIdleDuringASynchronizeEqualsAnIndependentReading) {
    for (const char* file : {"nsys/lsaeteurn-vectoraddition_report1_2023.sqlite",
                             "nsys/p4arth-cuda-perf-sandbox_report1_nsys2025.5.sqlite"}) {
        PERFWATCH_CORPUS_FILE(path, file);
        SQLite::Database db(path, SQLite::OPEN_READONLY);
        std::vector<std::pair<double, double>> busy;
        for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
            if (!db.tableExists(table)) continue;
            SQLite::Statement st(db, fmt::format("SELECT start, end FROM {}", table));
            while (st.executeStep()) busy.emplace_back(st.getColumn(0).getDouble(), st.getColumn(1).getDouble());
        }
        std::sort(busy.begin(), busy.end());
        std::map<std::string, double> expected;
        SQLite::Statement calls(db, "SELECT s.value, r.start, r.end FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
                                    "ON s.id = r.nameId WHERE s.value LIKE 'cudaDeviceSynchronize%'");
        while (calls.executeStep()) {
            const double a = calls.getColumn(1).getDouble(), b = calls.getColumn(2).getDouble();
            double covered = 0, hi = a;
            for (const auto& [s, e] : busy) {
                const double lo = std::max(s, hi), top = std::min(e, b);
                if (top > lo) covered += top - lo;
                hi = std::max(hi, std::min(e, b));
            }
            expected["cudaDeviceSynchronize"] += (b - a) - covered;
        }
        ASSERT_EQ(expected.size(), 1u) << file;
        const RunBatch batch = collect_ok(path);
        bool found = false;
        for (const Entity* e : of_kind(batch, EntityKind::api_call))
            if (e->name == "cudaDeviceSynchronize") {
                found = true;
                EXPECT_NEAR(metric(e, "gpu_idle_during"), expected["cudaDeviceSynchronize"], 1) << file;
            }
        EXPECT_TRUE(found) << file;
    }
}

}  // namespace perfwatch::test

namespace perfwatch::test {

namespace {

// An export of 20 kernels with Nsight Systems GPU metrics sampled every 50 us: GR Active and the
// GPC clock, `busy_mhz` while a kernel runs and 345 MHz between them, stored in MHz or (as some
// nsys versions do under the same name) in Hz. Returns the mean clock of the busy samples in Hz,
// summed here as the rows are written.
double write_gpu_metrics_export(const std::string& path, double busy_mhz, bool in_hz, double stretch = 1) {
    SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
            + std::string(k_kernel_table) +
            "CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER, sourceId INTEGER, typeName TEXT, metricId INTEGER,"
            " metricName TEXT);"
            "CREATE TABLE GPU_METRICS (timestamp INTEGER, typeId INTEGER, metricId INTEGER, value INTEGER);"
            "INSERT INTO StringIds VALUES (1, 'stencil(float*)'), (2, 'stencil');"
            "INSERT INTO TARGET_INFO_GPU_METRICS VALUES (65536, 0, 'GH100', 0, 'GPC Clock Frequency [MHz]'),"
            " (65536, 0, 'GH100', 1, 'SYS Clock Frequency [MHz]'), (65536, 0, 'GH100', 2, 'GR Active [Throughput %]');");
    db.exec("BEGIN");
    SQLite::Statement k(db, "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 7, 0, 1, 2, 132, 1, 1, 256, 1, 1, 32, 0, 0)");
    SQLite::Statement m(db, "INSERT INTO GPU_METRICS VALUES (?, 65536, ?, ?)");
    auto sample = [&](long long t, int metric, double value) {
        m.bind(1, static_cast<int64_t>(t));
        m.bind(2, metric);
        m.bind(3, static_cast<int64_t>(value));
        m.exec();
        m.reset();
    };
    std::vector<std::pair<long long, long long>> kernels;
    for (int i = 0; i < 20; ++i) {
        const long long start = 1'000'000LL * i + 200'000,
                        end = start + static_cast<long long>(stretch * static_cast<double>(400'000 + 10'000LL * i));
        k.bind(1, static_cast<int64_t>(start));
        k.bind(2, static_cast<int64_t>(end));
        k.exec();
        k.reset();
        kernels.emplace_back(start, end);
    }
    double busy_sum = 0;
    int busy_samples = 0;
    for (long long t = 0; t < 20'000'000; t += 50'000) {
        const bool busy = std::any_of(kernels.begin(), kernels.end(), [&](const auto& s) { return t >= s.first && t < s.second; });
        // The clock wanders a little while busy: +-15 MHz by sample.
        const double mhz = busy ? busy_mhz + static_cast<double>((t / 50'000) % 7 - 3) * 5 : 345;
        sample(t, 0, in_hz ? mhz * 1e6 : mhz);
        sample(t, 1, in_hz ? 1.6e9 : 1600);
        sample(t, 2, busy ? 80 + (t / 50'000) % 20 : 0);
        if (busy) {
            busy_sum += mhz * 1e6;
            ++busy_samples;
        }
    }
    db.exec("COMMIT");
    return busy_sum / busy_samples;
}

}  // namespace

TEST(NsysSqlite, TheSmClockIsTheGpuMetricsClockWhileTheGpuWorked) {
    TempDir dir;
    for (const bool in_hz : {false, true}) {
        const std::string path = dir.file(in_hz ? "hz.sqlite" : "mhz.sqlite");
        const double expected = write_gpu_metrics_export(path, 1755, in_hz);
        ASSERT_NEAR(expected, 1755e6, 20e6);
        const RunBatch b = collect_ok(path);
        EXPECT_DOUBLE_EQ(b.entities[0].value("sm_frequency").value_or(-1), expected) << (in_hz ? "Hz" : "MHz");
    }
    // Without GR Active the samples cannot say when the GPU worked: no clock is read.
    const std::string path = dir.file("mhz.sqlite");
    SQLite::Database(path, SQLite::OPEN_READWRITE).exec("DELETE FROM GPU_METRICS WHERE metricId = 2");
    EXPECT_FALSE(collect_ok(path).entities[0].value("sm_frequency").has_value());
}

// A later export whose GPU ran at a lower clock: run-clock-changed says both clocks, and the
// kernel, 1755/1410 times slower at the lower clock, is not compared with runs at the other.
TEST(NsysSqlite, AThrottledRunIsToldByItsClockAndItsKernelTimesAreNotCompared) {
    TempDir dir;
    const std::string db = dir.file("h.db");
    for (int i = 0; i < 11; ++i) {
        const bool slow = i == 10;
        const std::string path = dir.file(fmt::format("run{}.sqlite", i));
        write_gpu_metrics_export(path, slow ? 1410 : 1755, false, slow ? 1755.0 / 1410 : 1.0);
        const auto r = run_perfwatch({"check", "--db", db, "--format", "json", "--label", "benchmark=stencil", "--label",
                                      fmt::format("commit=c{}", i), path});
        ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
        if (!slow) continue;
        const auto doc = nlohmann::json::parse(r.out);
        bool told = false;
        for (const auto& f : doc["findings"]) {
            EXPECT_NE(f["rule"], "kernel-time-regression") << f["message"];
            if (f["rule"] != "run-clock-changed") continue;
            const std::string msg = f["message"];
            told = msg.find("1410 MHz") != std::string::npos && msg.find("1755 MHz in the baseline") != std::string::npos;
            EXPECT_TRUE(told) << msg;
        }
        EXPECT_TRUE(told);
    }
}

// An export from an old nsys (issue 48): no META_DATA_EXPORT, a TARGET_INFO_GPU of only vmId,
// deviceId, name, busLocation and isDiscrete (no id column), the kernel, runtime and memcpy tables
// of that version. Its 3 kernel rows (2 names: 100+250 ns of "stencil", 40 ns of "reduce") and 4
// runtime calls are read; the device keeps its name.
TEST(NsysSqlite, AnOldExportWithoutIdOrMetadataReadsItsKernels) {
    TempDir dir;
    const std::string path = dir.file("old.sqlite");
    {
        SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        db.exec("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);"
                "CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, deviceId INTEGER NOT NULL, name TEXT, "
                "busLocation TEXT, isDiscrete INTEGER);"
                "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId "
                "INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, "
                "globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, launchType INTEGER, "
                "cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT "
                "NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT "
                "NULL, staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, "
                "localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, "
                "sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);"
                "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass "
                "INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue "
                "INTEGER NOT NULL, callchainId INTEGER);"
                "INSERT INTO StringIds VALUES (1, 'stencil(float*)'), (2, 'stencil'), (3, 'reduce(int*)'), "
                "(4, 'reduce'), (5, 'cudaLaunchKernel_v7000'), (6, 'cudaDeviceSynchronize_v3020');"
                "INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'GeForce RTX 3080', '0000:01:00.0', 1);"
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1000, 1010, 0, 1, 11, 5, 0, NULL),"
                " (1100, 1110, 0, 1, 12, 5, 0, NULL), (1200, 1210, 0, 1, 13, 5, 0, NULL), (1300, 2000, 0, 1, 14, 6, 0, NULL);"
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES"
                " (1050, 1150, 0, 1, 7, 11, 1, 1, 2, 0, 0, 32, 8, 1, 1, 256, 1, 1, 0, 0, 0, 0, 1, 0, NULL, 0),"
                " (1200, 1450, 0, 1, 7, 12, 1, 1, 2, 0, 0, 32, 16, 1, 1, 256, 1, 1, 0, 0, 0, 0, 2, 0, NULL, 0),"
                " (1500, 1540, 0, 1, 7, 13, 1, 3, 4, 0, 0, 16, 1, 1, 1, 128, 1, 1, 512, 0, 0, 0, 3, 0, NULL, 0);");
    }
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.format, "nsys-sqlite");
    EXPECT_EQ(b.format_detail, "export without metadata table (2021 or older)");
    EXPECT_EQ(b.entities[0].value("launches").value_or(-1), 3);
    EXPECT_EQ(of_kind(b, EntityKind::kernel).size(), 2u);
    EXPECT_EQ(metric(kernel_named(b, "stencil(float*)"), "launches"), 2);
    EXPECT_EQ(metric(kernel_named(b, "stencil(float*)"), "duration_total"), 100 + 250);
    EXPECT_EQ(metric(kernel_named(b, "reduce(int*)"), "duration_total"), 40);
    EXPECT_EQ(metric(kernel_named(b, "stencil(float*)"), "grid_size"), 16);  // its longest launch's
    const auto devices = of_kind(b, EntityKind::device);
    ASSERT_EQ(devices.size(), 1u);
    EXPECT_EQ(devices[0]->attributes.at("gpu"), "GeForce RTX 3080");
    double calls = 0;
    for (const Entity* a : of_kind(b, EntityKind::api_call)) calls += metric(a, "count");
    EXPECT_EQ(calls, 4);
}

// A table the reader needs without a column it needs is named in the error, not "Unknown column".
TEST(NsysSqlite, AMissingColumnIsNamedWithItsTable) {
    TempDir dir;
    const std::string path = dir.file("odd.sqlite");
    {
        SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        db.exec("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
                "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, finish INTEGER, deviceId INTEGER,"
                " demangledName INTEGER);"
                "INSERT INTO StringIds VALUES (1, 'k');"
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 1);");
    }
    const auto r = collect_file(path);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("CUPTI_ACTIVITY_KIND_KERNEL table has no end column"), std::string::npos)
        << r.error().message;
}

// API-only captures (CUDA runtime rows, no kernel, copy or memset table): 5 calls read as host
// calls with a note that says so; an export with neither says no GPU activity was recorded.
TEST(NsysSqlite, AnApiOnlyCaptureIsReadAsHostCallsWithANote) {
    TempDir dir;
    const std::string path = dir.file("api_only.sqlite");
    {
        SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        db.exec("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
                "CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER);"
                "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, correlationId INTEGER, nameId INTEGER);"
                "INSERT INTO StringIds VALUES (1, 'cudaMalloc_v3020'), (2, 'cudaLaunchKernel_v7000');"
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (0, 50, 1, 1), (60, 70, 2, 2), (80, 90, 3, 2),"
                " (100, 110, 4, 2), (120, 130, 5, 2);");
    }
    const RunBatch b = collect_ok(path);
    EXPECT_TRUE(of_kind(b, EntityKind::kernel).empty());
    ASSERT_EQ(b.notes.size(), 1u);
    EXPECT_NE(b.notes[0].find("API-only capture: 5 CUDA API calls read as host calls; no GPU activity recorded"),
              std::string::npos)
        << b.notes[0];
    EXPECT_EQ(b.entities[0].value("api_calls").value_or(-1), 5);

    const std::string nothing = dir.file("nothing.sqlite");
    {
        SQLite::Database db(nothing, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        db.exec("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
                "CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER);");
    }
    const RunBatch none = collect_ok(nothing);
    ASSERT_EQ(none.notes.size(), 1u);
    EXPECT_TRUE(none.notes[0].starts_with("no GPU activity recorded")) << none.notes[0];
}

}  // namespace perfwatch::test

namespace perfwatch::test {

// Idle time split by the call that issued the work ending each gap, from a generated export: a
// first cudaLaunchKernel of 15.9 ms (module loading) inside the GPU's timeline is start-up; three
// 5 ms gaps whose launches the host made only during them are host gaps; the rest are launch gaps.
// The expected figures are the gaps as written here.
TEST(NsysSqlite, IdleCausesComeFromTheCallsThatIssuedTheWork) {
    TempDir dir;
    const std::string path = dir.file("causes.sqlite");
    struct Row {
        long long call_start, call_end, start, end;
    };
    std::vector<Row> rows;
    rows.push_back({-200'000, -190'000, 0, 500'000});                 // an early kernel
    rows.push_back({500'000, 16'400'000, 16'500'000, 17'500'000});    // the first call: 15.9 ms
    long long t = 17'500'000;
    for (int i = 0; i < 20; ++i) {  // back to back: each launched during the previous kernel
        rows.push_back({t - 50'000, t - 45'000, t + 2'000, t + 102'000});
        t += 102'000;
    }
    for (int i = 0; i < 3; ++i) {  // the host away 5 ms, then one launch
        rows.push_back({t + 4'990'000, t + 4'995'000, t + 5'000'000, t + 5'400'000});
        t += 5'400'000;
    }
    {
        SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        db.exec("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);" + std::string(k_kernel_table) +
                "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, correlationId INTEGER, nameId INTEGER);"
                "INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cuLaunchKernel'), (10, 'k(float*)');");
        SQLite::Statement k(db, "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 7, ?, 10, 10, 64, 1, 1, 256, 1, 1, 32, 0, 0)");
        SQLite::Statement r(db, "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?)");
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const auto corr = static_cast<int64_t>(100 + i);
            r.bind(1, static_cast<int64_t>(rows[i].call_start));
            r.bind(2, static_cast<int64_t>(rows[i].call_end));
            r.bind(3, corr);
            r.bind(4, i == 0 ? 2 : 1);
            r.exec();
            r.reset();
            k.bind(1, static_cast<int64_t>(rows[i].start));
            k.bind(2, static_cast<int64_t>(rows[i].end));
            k.bind(3, corr);
            k.exec();
            k.reset();
        }
    }
    const double span = static_cast<double>(rows.back().end - rows.front().start);
    const double startup_gap = static_cast<double>(rows[1].start - rows[0].end);
    double host_gaps = 0;
    for (std::size_t i = rows.size() - 3; i < rows.size(); ++i) host_gaps += static_cast<double>(rows[i].start - rows[i - 1].end);
    const RunBatch b = collect_ok(path);
    const Entity& run = b.entities[0];
    EXPECT_DOUBLE_EQ(run.value("idle_startup").value_or(-1), startup_gap);
    EXPECT_DOUBLE_EQ(run.value("idle_startup_pct").value_or(-1), 100 * startup_gap / span);
    EXPECT_DOUBLE_EQ(run.value("host_gaps").value_or(-1), 3);
    EXPECT_DOUBLE_EQ(run.value("idle_host_gaps_pct").value_or(-1), 100 * host_gaps / span);
    EXPECT_EQ(run.attributes.at("startup_call"), "cudaLaunchKernel");
    EXPECT_DOUBLE_EQ(run.value("startup_call_time").value_or(-1), 15'900'000);
    const ProcessResult r = run_perfwatch({"check", "--format", "json", path});
    const auto doc = nlohmann::json::parse(r.out);
    bool startup = false;
    for (const auto& f : doc.at("findings"))
        if (f.at("rule") == "timeline-startup-idle") {
            startup = true;
            const std::string message = f.at("message");
            EXPECT_NE(message.find("the first call of cudaLaunchKernel took 15.9 ms"), std::string::npos) << message;
        }
    EXPECT_TRUE(startup) << r.out;
}

}  // namespace perfwatch::test
