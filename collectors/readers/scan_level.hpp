#pragma once

#include <span>

namespace perfwatch {

// The instruction sets a byte scanner has a version for; every version gives the same results.
enum class ScanLevel { base, avx2, avx512 };

// The widest level this CPU (and its operating system) runs.
ScanLevel best_scan_level();
// Every level this CPU runs, narrowest first (for tests that compare them).
std::span<const ScanLevel> usable_scan_levels();
const char* scan_level_name(ScanLevel level);

}  // namespace perfwatch
