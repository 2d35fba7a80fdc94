#pragma once

#include "collectors/collector.hpp"

namespace perfwatch {

// rocprof v1 `--stats` CSVs (kernels, HIP API, copies; old unquoted names holding commas) and
// rocprofv3 `*_kernel_stats.csv`.
const Collector& rocprof_stats_collector();

// rocprof SQLite: v1 `results.db` (KERN/OPS/HIP/COPY tables) and the rocprofv3 rocpd database
// (its `kernels` and `memory_copies` views).
const Collector& rocprof_sqlite_collector();

// rocprofv3 *_kernel_trace.csv (one row per dispatch).
const Collector& rocprof_trace_csv_collector();

// rocprof v1 results.json (a Chrome trace of HIP API, copies and GPU kernels).
const Collector& rocprof_json_collector();

}  // namespace perfwatch
