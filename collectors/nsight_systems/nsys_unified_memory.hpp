#pragma once

#include <map>
#include <string>

#include <SQLiteCpp/Database.h>

#include "core/error.hpp"

namespace perfwatch {

// Unified-memory migrations of one kernel name: those that ran while a kernel of that name was
// running (on any device), and how many of those a page fault caused.
struct KernelMigrations {
    double count = 0, time = 0, bytes = 0, faults = 0;
};

// Unified-memory migrations of an Nsight Systems export (CUPTI_ACTIVITY_KIND_MEMCPY rows of kind
// Unified HtoD/DtoH/DtoD, with their migration cause where the export has it).
struct UnifiedMemory {
    double migrations = 0, bytes = 0;  // their time is the copy rows' (um_migration_time)
    double fault_migrations = 0;     // page fault or speculative prefetch after a fault
    double prefetch_migrations = 0;  // cudaMemPrefetchAsync (user prefetch)
    double host_fault_migrations = 0;  // DtoH on a page fault: the CPU touched managed pages
    double during_kernels = 0, time_during_kernels = 0;
    std::map<long long, KernelMigrations> by_kernel;  // by the kernel's name string ID
    bool any() const { return migrations > 0; }
};

// Whether CUDA_MEMCPY_KIND `copy_kind` is a unified-memory migration (Unified HtoD, DtoH, DtoD).
bool is_unified_copy(long long copy_kind);

// Reads the migrations and matches them to the kernels they overlapped: two passes in start
// order (SQLite sorts), so memory does not grow with the number of rows. `name_column` is the
// kernel table's name column ("demangledName" or "shortName").
Result<UnifiedMemory> read_unified_memory(SQLite::Database& db, const std::string& path, const std::string& name_column);

}  // namespace perfwatch
