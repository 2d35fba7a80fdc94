#include "collectors/nsight_systems/nsys_unified_memory.hpp"

#include <fmt/format.h>

#include <optional>

#include "collectors/readers/sqlite_schema.hpp"

namespace perfwatch {

namespace {

// CUDA_MEMCPY_KIND_UVM_* and CUDA_UNIFIED_MEMORY_MIGRATION_CAUSE_* (ENUM_CUDA_MEMCPY_OPER and
// ENUM_CUDA_UNIF_MEM_MIGRATION of the export).
constexpr long long k_uvm_htod = 11, k_uvm_dtoh = 12, k_uvm_dtod = 13;
constexpr long long k_cause_user = 1, k_cause_fault = 2, k_cause_speculative = 3;

}  // namespace

bool is_unified_copy(long long copy_kind) { return copy_kind >= k_uvm_htod && copy_kind <= k_uvm_dtod; }

Result<UnifiedMemory> read_unified_memory(SQLite::Database& db, const std::string& path, const std::string& name_column) {
    UnifiedMemory um;
    const auto tables = sqlite_tables(db);
    if (!tables.contains("CUPTI_ACTIVITY_KIND_MEMCPY")) return um;
    auto list = sqlite_select_list(db, path, "the nsys export", "CUPTI_ACTIVITY_KIND_MEMCPY",
                                   {"start", "end", "copyKind", "bytes"}, {"migrationCause"});
    if (!list) return std::unexpected(list.error());
    SQLite::Statement migrations(db, fmt::format("SELECT {} FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind IN ({}, {}, {}) "
                                                 "ORDER BY start",
                                                 *list, k_uvm_htod, k_uvm_dtoh, k_uvm_dtod));
    const bool kernels = tables.contains("CUPTI_ACTIVITY_KIND_KERNEL");
    std::optional<SQLite::Statement> kernel_rows;
    bool kernel_left = false;
    // The kernels started so far: the latest end among them and the name of the kernel it belongs to.
    double running_end = -1;
    long long running_name = 0;
    auto next_kernel = [&]() { kernel_left = kernel_rows->executeStep(); };
    while (migrations.executeStep()) {
        if (!kernel_rows && kernels) {
            auto klist = sqlite_select_list(db, path, "the nsys export", "CUPTI_ACTIVITY_KIND_KERNEL",
                                            {"start", "end", name_column});
            if (!klist) return std::unexpected(klist.error());
            kernel_rows.emplace(db, fmt::format("SELECT {} FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start", *klist));
            next_kernel();
        }
        const double start = migrations.getColumn(0).getDouble(), end = migrations.getColumn(1).getDouble();
        const long long kind = migrations.getColumn(2).getInt64();
        const double bytes = migrations.getColumn(3).getDouble();
        const long long cause = migrations.getColumn(4).isNull() ? 0 : migrations.getColumn(4).getInt64();
        um.migrations += 1;
        um.bytes += bytes;
        const bool fault = cause == k_cause_fault || cause == k_cause_speculative;
        if (fault) um.fault_migrations += 1;
        if (cause == k_cause_user) um.prefetch_migrations += 1;
        if (kind == k_uvm_dtoh && cause == k_cause_fault) um.host_fault_migrations += 1;
        // Kernels that started before this migration ended; one still running at its start overlaps it.
        while (kernel_rows && kernel_left && kernel_rows->getColumn(0).getDouble() < end) {
            const double kend = kernel_rows->getColumn(1).getDouble();
            if (kend > running_end) {
                running_end = kend;
                running_name = kernel_rows->getColumn(2).isNull() ? 0 : kernel_rows->getColumn(2).getInt64();
            }
            next_kernel();
        }
        if (running_end > start) {
            um.during_kernels += 1;
            um.time_during_kernels += end - start;
            KernelMigrations& k = um.by_kernel[running_name];
            k.count += 1;
            k.time += end - start;
            k.bytes += bytes;
            if (fault) k.faults += 1;
        }
    }
    return um;
}

}  // namespace perfwatch
