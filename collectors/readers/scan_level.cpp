#include "collectors/readers/scan_level.hpp"

#include <vector>

namespace perfwatch {

namespace {

std::vector<ScanLevel> detect_levels() {
    std::vector<ScanLevel> levels{ScanLevel::base};
#if defined(__x86_64__)
    // __builtin_cpu_supports also asks whether the operating system saves the wider registers.
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi")) levels.push_back(ScanLevel::avx2);
    // AVX-512 only where it does not slow the core's clock (Ice Lake and Zen 4 on, which have
    // VBMI2; Skylake's server parts do not), as simdjson chooses its own kernel.
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("bmi"))
        levels.push_back(ScanLevel::avx512);
#endif
    return levels;
}

const std::vector<ScanLevel>& levels() {
    static const std::vector<ScanLevel> k_levels = detect_levels();
    return k_levels;
}

}  // namespace

ScanLevel best_scan_level() { return levels().back(); }

std::span<const ScanLevel> usable_scan_levels() { return levels(); }

const char* scan_level_name(ScanLevel level) {
    switch (level) {
    case ScanLevel::base: return "base";
    case ScanLevel::avx2: return "avx2";
    case ScanLevel::avx512: return "avx512";
    }
    return "?";
}

}  // namespace perfwatch
