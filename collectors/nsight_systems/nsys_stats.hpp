#pragma once

#include "collectors/collector.hpp"

namespace perfwatch {

// `nsys stats` output, text or `--format csv`, alone or inside a build log: the kernel, CUDA API,
// OS runtime, NVTX, memory-by-time and memory-by-size summaries and the GPU trace, in the 2020,
// 2021, 2022 and 2023+ header generations. A log holding several sessions yields its last one.
const Collector& nsys_stats_collector();

}  // namespace perfwatch
