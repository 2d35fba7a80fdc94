#pragma once

#include "collectors/collector.hpp"

namespace perfwatch {

// PyTorch profiler / Kineto traces (.json and .json.gz), new and legacy (2021) schemas, NVIDIA,
// AMD and CPU-only traces, read as a stream: memory holds the aggregates, not the trace.
const Collector& kineto_collector();

}  // namespace perfwatch
