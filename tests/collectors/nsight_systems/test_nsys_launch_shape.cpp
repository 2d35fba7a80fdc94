#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "tests/collectors/ncu_helpers.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

// One kernel launch of a generated export: times in ns, launch shape as nsys records it.
struct KernelRow {
    long long start = 0, end = 0;
    int grid = 1, block = 1, registers = 32, shared = 0;
};

// One unified-memory migration: copyKind 11 (Unified HtoD) or 12 (Unified DtoH), migrationCause
// 1 (user prefetch), 2 (page fault) or 3 (speculative).
struct Migration {
    long long start = 0, end = 0;
    int kind = 11, cause = 2;
    long long bytes = 65536;
};

// Appends `count` migrations of `kind` and `cause`, `length` ns each: the first at `start`, then one
// every `step` ns.
void add_migrations(std::vector<Migration>& out, int count, long long start, long long step, long long length, int kind,
                    int cause, long long bytes = 65536) {
    for (int i = 0; i < count; ++i) out.push_back({start + i * step, start + i * step + length, kind, cause, bytes});
}

// Writes an export in the shape of nsys 2023-2025 (the tables and columns perfwatch reads): one GPU
// of compute capability `cc` with `sms` SMs, one kernel name, its launches, and the migrations.
void write_export(const std::string& path, const std::string& gpu, int major, int minor, int sms, int max_warps,
                  const std::vector<KernelRow>& kernels, const std::vector<Migration>& migrations = {}) {
    SQLite::Database db(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
            "CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, computeMajor INTEGER, computeMinor INTEGER,"
            " smCount INTEGER, maxWarpsPerSm INTEGER);"
            "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,"
            " correlationId INTEGER, demangledName INTEGER, shortName INTEGER, gridX INTEGER, gridY INTEGER,"
            " gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER, registersPerThread INTEGER,"
            " staticSharedMemory INTEGER, dynamicSharedMemory INTEGER);"
            "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER"
            " NOT NULL, streamId INTEGER NOT NULL, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, srcKind INTEGER,"
            " dstKind INTEGER, migrationCause INTEGER);"
            "INSERT INTO StringIds VALUES (1, 'work(float *, int)'), (2, 'work');");
    SQLite::Statement g(db, "INSERT INTO TARGET_INFO_GPU VALUES (0, ?, ?, ?, ?, ?)");
    g.bind(1, gpu);
    g.bind(2, major);
    g.bind(3, minor);
    g.bind(4, sms);
    g.bind(5, max_warps);
    g.exec();
    SQLite::Statement k(db, "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 7, NULL, 1, 2, ?, 1, 1, ?, 1, 1, ?, ?, 0)");
    for (const KernelRow& r : kernels) {
        k.bind(1, static_cast<int64_t>(r.start));
        k.bind(2, static_cast<int64_t>(r.end));
        k.bind(3, r.grid);
        k.bind(4, r.block);
        k.bind(5, r.registers);
        k.bind(6, r.shared);
        k.exec();
        k.reset();
    }
    SQLite::Statement m(db, "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, 0, 7, ?, ?, 7, 7, ?)");
    for (const Migration& r : migrations) {
        m.bind(1, static_cast<int64_t>(r.start));
        m.bind(2, static_cast<int64_t>(r.end));
        m.bind(3, static_cast<int64_t>(r.bytes));
        m.bind(4, r.kind);
        m.bind(5, r.cause);
        m.exec();
        m.reset();
    }
}

// `perfwatch check --format json` on `path`: its findings at warning or above, in order.
std::vector<nlohmann::json> warnings_of(const std::string& path) {
    const ProcessResult r = run_perfwatch({"check", "--format", "json", "--fail-on", "error", path});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<nlohmann::json> out;
    const auto doc = nlohmann::json::parse(r.out);
    for (const auto& f : doc.at("findings"))
        if (f.at("severity") != "info") out.push_back(f);
    return out;
}

}  // namespace

// A <<<1, 1>>> kernel taking all the GPU time: the headline is that it runs in series.
TEST(NsysLaunchShape, ASingleThreadKernelIsTheHeadline) {
    TempDir dir;
    const std::string path = dir.file("serial.sqlite");
    write_export(path, "NVIDIA A100-SXM4-40GB", 8, 0, 108, 64, {{1'000'000, 110'000'000, 1, 1, 16, 0}});
    const auto found = warnings_of(path);
    ASSERT_FALSE(found.empty());
    EXPECT_EQ(found[0].at("rule"), "launch-serial-kernel");
    const std::string message = found[0].at("message");
    EXPECT_NE(message.find("1 block of 1 thread, 1 in all, on a GPU of 108 SMs"), std::string::npos) << message;
    EXPECT_NE(message.find("109 ms"), std::string::npos) << message;  // 110 - 1 ms of the one launch
    for (const auto& f : found) EXPECT_NE(f.at("rule"), "ncu-small-grid") << "one thread is not a small grid";
}

// 4-thread blocks on compute capability 7.5: 4 of 32 lanes per warp, and the 16 block slots of
// an SM hold 16 one-warp blocks of its 32 warps.
TEST(NsysLaunchShape, BlocksUnderAWarpAreTheHeadlineWithTheirLanesAndBlockSlots) {
    TempDir dir;
    const std::string path = dir.file("blocks.sqlite");
    std::vector<KernelRow> rows;
    for (int i = 0; i < 20; ++i) rows.push_back({i * 30'000'000LL, i * 30'000'000LL + 22'000'000, 4'194'304, 4, 26, 0});
    write_export(path, "NVIDIA GeForce GTX 1660 SUPER", 7, 5, 22, 32, rows);
    const auto found = warnings_of(path);
    ASSERT_FALSE(found.empty());
    EXPECT_EQ(found[0].at("rule"), "launch-small-blocks");
    const std::string message = found[0].at("message");
    const double lanes = 100.0 * 4 / 32, occupancy = 100.0 * 16 * 1 / 32;  // 16 block slots x 1 warp of 32
    EXPECT_NE(message.find(fmt::format("{:.0f}% of each warp's 32 lanes work", lanes)), std::string::npos) << message;
    EXPECT_NE(message.find(fmt::format("occupancy to {:.0f}% (16 blocks per SM on compute capability 7.5)", occupancy)),
              std::string::npos)
        << message;
    EXPECT_NE(message.find(fmt::format("about {:.0f}% of the GPU's thread slots", lanes * occupancy / 100)),
              std::string::npos)
        << message;
}

// 192 registers per thread in 256-thread blocks on compute capability 8.6: a warp takes
// ceil(192 x 32 / 256) x 256 = 6,144 registers, 65,536 hold 10 warps, one 8-warp block per SM,
// 8 of 48 warps.
TEST(NsysLaunchShape, RegisterBoundOccupancyFollowsTheCalculator) {
    TempDir dir;
    const std::string path = dir.file("registers.sqlite");
    write_export(path, "NVIDIA GeForce RTX 3060", 8, 6, 28, 48, {{0, 5'000'000'000LL, 40, 256, 192, 0}});
    const auto found = warnings_of(path);
    ASSERT_FALSE(found.empty());
    EXPECT_EQ(found[0].at("rule"), "launch-low-occupancy");
    const std::string message = found[0].at("message");
    const double per_warp = std::ceil(192.0 * 32 / 256) * 256;
    const double blocks = std::floor(std::floor(65536 / per_warp) / 8);
    EXPECT_EQ(blocks, 1);
    EXPECT_NE(message.find(fmt::format("registers allow {:.0f} block per SM, a theoretical occupancy of {:.1f}%", blocks,
                                       100.0 * blocks * 8 / 48)),
              std::string::npos)
        << message;
}

// Page-fault migrations while a well-shaped kernel runs: the headline names the migrations, their
// count and time from the rows, and prefetching (not pinned memory); a count of migrations in
// kernels equals SQL's own join.
TEST(NsysLaunchShape, ManagedMemoryFaultsInsideAKernelAreCountedAndNamed) {
    TempDir dir;
    const std::string path = dir.file("um.sqlite");
    std::vector<Migration> migrations;
    add_migrations(migrations, 40, 0, 10'000, 3'000, 11, 3, 262144);  // before
    for (int i = 0; i < 155; ++i)
        migrations.push_back({1'000'000 + i * 9'000LL, 1'000'000 + i * 9'000LL + 3'500, 11, i % 3 == 0 ? 3 : 2, 65536});
    add_migrations(migrations, 72, 3'000'000, 8'000, 7'000, 12, 3);
    write_export(path, "NVIDIA GeForce RTX 3080", 8, 6, 68, 48, {{1'000'000, 2'450'000, 4096, 256, 16, 0}}, migrations);
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    const long long inside = db.execAndGet("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY m WHERE copyKind IN (11, 12, 13)"
                                           " AND EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL k"
                                           " WHERE k.start < m.end AND k.end > m.start)")
                                 .getInt64();
    const long long inside_ns = db.execAndGet("SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY m WHERE copyKind IN "
                                              "(11, 12, 13) AND EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL k"
                                              " WHERE k.start < m.end AND k.end > m.start)")
                                    .getInt64();
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.entities[0].value("um_migrations").value_or(-1), 40 + 155 + 72);
    EXPECT_EQ(b.entities[0].value("um_migrations_during").value_or(-1), static_cast<double>(inside));
    EXPECT_EQ(b.entities[0].value("um_migration_time_during").value_or(-1), static_cast<double>(inside_ns));
    const auto found = warnings_of(path);
    ASSERT_FALSE(found.empty());
    EXPECT_EQ(found[0].at("rule"), "um-migrations-in-kernel");
    const std::string message = found[0].at("message");
    EXPECT_NE(message.find(fmt::format("{} unified-memory migrations", inside)), std::string::npos) << message;
    EXPECT_NE(message.find("cudaMemPrefetchAsync"), std::string::npos) << message;
    EXPECT_NE(message.find("Pinned host memory does not apply"), std::string::npos) << message;
}

// A prefetch, then the host faulting the pages back, then the kernel faulting them in again: the
// message says the prefetch was undone, with the count of host-fault migrations from the rows.
TEST(NsysLaunchShape, APrefetchUndoneByTheHostIsTold) {
    TempDir dir;
    const std::string path = dir.file("undone.sqlite");
    std::vector<Migration> migrations;
    add_migrations(migrations, 50, 0, 10'000, 5'000, 11, 1);  // prefetch
    add_migrations(migrations, 48, 600'000, 10'000, 5'000, 12, 2);
    add_migrations(migrations, 60, 2'000'000, 20'000, 5'000, 11, 2);
    write_export(path, "NVIDIA A10G", 8, 6, 80, 48, {{2'000'000, 4'000'000, 8192, 256, 32, 0}}, migrations);
    const auto found = warnings_of(path);
    ASSERT_FALSE(found.empty());
    EXPECT_EQ(found[0].at("rule"), "um-migrations-in-kernel");
    const std::string message = found[0].at("message");
    EXPECT_NE(message.find("48 migrations in the run went back to the host on CPU page faults"), std::string::npos) << message;
    EXPECT_NE(message.find("The prefetch was undone by host access"), std::string::npos) << message;
}

// A level-by-level solve on a 40-SM T4: one kernel launched once per level, its grid growing from 1
// to 120 blocks of 128 threads, each launch about 60 us. Its longest launch happens to have 120
// blocks; most of its time is in smaller grids. The shares in the message are SQL's, from each
// launch's grid against smCount.
TEST(NsysLaunchShape, AKernelWhoseGridsVaryIsJudgedOverAllItsLaunches) {
    TempDir dir;
    const std::string path = dir.file("levels.sqlite");
    std::vector<KernelRow> launches;
    long long t = 1'000'000;
    for (int level = 0; level < 200; ++level) {
        const int grid = level < 150 ? 1 + level % 30 : 41 + level % 80;
        const long long length = 60'000 + (grid == 120 ? 5'000 : level % 7 * 100);
        launches.push_back({t, t + length, grid, 128, 40, 0});
        t += length + 20'000;
    }
    write_export(path, "Tesla T4", 7, 5, 40, 32, launches);
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    const double small_pct = db.execAndGet("SELECT 100.0 * sum(CASE WHEN gridX * gridY * gridZ < 40 THEN end - start ELSE 0 END)"
                                           " / sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
                                 .getDouble();
    const double idle_pct = db.execAndGet("SELECT 100.0 * sum((end - start) * max(0.0, 1.0 - gridX * gridY * gridZ / 40.0))"
                                          " / sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
                                .getDouble();
    const long long longest_grid =
        db.execAndGet("SELECT gridX FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY end - start DESC LIMIT 1").getInt64();
    ASSERT_GE(longest_grid, 40);  // the longest launch alone would say the grid fills the GPU
    const auto found = warnings_of(path);
    ASSERT_FALSE(found.empty());
    EXPECT_EQ(found[0].at("rule"), "launch-small-grids");
    const std::string message = found[0].at("message");
    EXPECT_NE(message.find(fmt::format("{:.0f}% of its time is in launches of fewer blocks than the GPU's 40 SMs (its longest "
                                       "launch has {} blocks of 128 threads): {:.0f}% of the SMs sit idle",
                                       small_pct, longest_grid, idle_pct)),
              std::string::npos)
        << message;
    EXPECT_NEAR(found[0].at("estimated_speedup_pct").get<double>(), idle_pct, 1e-6);
    for (const auto& f : found) EXPECT_NE(f.at("rule"), "ncu-small-grid") << f.dump();
}

// In the shape of a managed-memory softmax (a prefetch, the host faulting the pages back, the kernel
// faulting them in again): the export's copy rows are all migrations, 2.3x the kernel time. They
// are not copies the program issued: no copy finding, no pinned-memory advice; memcpy_bytes leaves
// them out and um_migration_time is SQL's sum of their durations.
TEST(NsysLaunchShape, MigrationsAreNotCopiesTheProgramIssued) {
    TempDir dir;
    const std::string path = dir.file("migrations.sqlite");
    std::vector<Migration> migrations;
    add_migrations(migrations, 50, 0, 50'000, 40'000, 11, 1, 2097152);
    add_migrations(migrations, 48, 2'600'000, 40'000, 30'000, 12, 2);
    add_migrations(migrations, 60, 5'000'000, 30'000, 20'000, 11, 2);
    write_export(path, "Tesla T4", 7, 5, 40, 32, {{5'000'000, 7'000'000, 320, 256, 32, 0}}, migrations);
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    const long long migration_ns =
        db.execAndGet("SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind IN (11, 12, 13)").getInt64();
    const long long kernel_ns = db.execAndGet("SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").getInt64();
    ASSERT_GE(migration_ns, 2 * kernel_ns);  // copies under the old reading would dominate
    const RunBatch b = collect_ok(path);
    EXPECT_EQ(b.entities[0].value("um_migration_time").value_or(-1), static_cast<double>(migration_ns));
    EXPECT_EQ(b.entities[0].value("memcpy_bytes").value_or(-1), 0);
    const ProcessResult r = run_perfwatch({"check", "--format", "json", path});
    const auto doc = nlohmann::json::parse(r.out);
    bool undone = false;
    for (const auto& f : doc.at("findings")) {
        EXPECT_NE(f.at("rule"), "timeline-copy-dominated") << f.dump();
        const std::string message = f.at("message");
        EXPECT_EQ(message.find("cudaMallocHost"), std::string::npos) << message;
        EXPECT_EQ(message.find("(pinned host memory"), std::string::npos) << message;
        undone = undone || message.find("The prefetch was undone by host access") != std::string::npos;
    }
    EXPECT_TRUE(undone) << r.out;
}

// Prefetches before the kernel and the results faulted back to the host after it: migrations outside
// the kernel, 13x its time. That is the run's finding, with managed-memory advice; the ratio in the
// message is SQL's (migrations not overlapping a kernel over the kernels' time).
TEST(NsysLaunchShape, MigrationsOutsideTheKernelsThatDominateAreTheManagedDataFinding) {
    TempDir dir;
    const std::string path = dir.file("prefetch_heavy.sqlite");
    std::vector<Migration> migrations;
    add_migrations(migrations, 200, 0, 60'000, 50'000, 11, 1, 2097152);
    add_migrations(migrations, 100, 14'000'000, 40'000, 30'000, 12, 2);
    write_export(path, "NVIDIA A100-SXM4-80GB", 8, 0, 108, 64, {{12'500'000, 13'500'000, 4096, 256, 24, 0}}, migrations);
    SQLite::Database db(path, SQLite::OPEN_READONLY);
    const double outside = db.execAndGet("SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY m WHERE copyKind IN "
                                         "(11, 12, 13) AND NOT EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL k"
                                         " WHERE k.start < m.end AND k.end > m.start)")
                               .getDouble();
    const double kernels = db.execAndGet("SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").getDouble();
    const auto found = warnings_of(path);
    ASSERT_FALSE(found.empty());
    EXPECT_EQ(found[0].at("rule"), "um-migrations-dominate");
    const std::string message = found[0].at("message");
    EXPECT_NE(message.find(fmt::format("{:.1f}x the", outside / kernels)), std::string::npos) << message;
    EXPECT_NE(message.find("200 prefetched to the GPU, 100 back to the host on CPU page faults"), std::string::npos)
        << message;
    EXPECT_NE(message.find("Pinned host memory does not apply"), std::string::npos) << message;
}

// A microbenchmark: 60 us of kernel and one 0.76 ms pageable copy. Under 2 ms of GPU work in all,
// nothing is a warning, however small its grid or its copies.
TEST(NsysLaunchShape, UnderTwoMillisecondsOfGpuWorkNothingIsAWarning) {
    TempDir dir;
    const std::string path = dir.file("tiny.sqlite");
    write_export(path, "Tesla T4", 7, 5, 40, 32, {{1'000'000, 1'060'000, 1, 256, 16, 0}});
    {
        SQLite::Database db(path, SQLite::OPEN_READWRITE);
        db.exec("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (100000, 860000, 0, 7, 4194304, 1, 0, 2, NULL)");
    }
    const ProcessResult r = run_perfwatch({"check", "--format", "json", "--fail-on", "warning", path});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    for (const auto& f : doc.at("findings")) EXPECT_EQ(f.at("severity"), "info") << f.dump();
}

}  // namespace perfwatch::test
