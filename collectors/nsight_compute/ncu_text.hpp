#pragma once

#include "collectors/collector.hpp"

namespace perfwatch {

// Nsight Compute's text output: the default section tables (2019 to 2025 layouts), `--metrics`
// output and `--print-summary per-gpu|per-kernel`.
const Collector& ncu_text_collector();

}  // namespace perfwatch
