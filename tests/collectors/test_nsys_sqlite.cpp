#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include "collectors/nsys_sqlite.hpp"
#include "tests/collectors/ncu_helpers.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

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

}  // namespace perfwatch::test
