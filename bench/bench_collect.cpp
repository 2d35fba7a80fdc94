// Measures collector throughput on the files given: MB/s, rows (lines) per second, wall time and
// peak resident memory of the process.
#include <sys/resource.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "collectors/collector.hpp"

int main(int argc, char** argv) {
    if (argc < 2) {
        fmt::print(stderr, "usage: bench_collect FILE...\n");
        return 2;
    }
    int status = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string path = argv[i];
        std::ifstream in(path, std::ios::binary);
        const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const auto rows = std::count(content.begin(), content.end(), '\n');
        const auto t0 = std::chrono::steady_clock::now();
        auto batch = perfwatch::collect_content(path, content);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!batch) {
            fmt::print(stderr, "{}\n", batch.error().to_string());
            status = 1;
            continue;
        }
        rusage usage{};
        getrusage(RUSAGE_SELF, &usage);
        const double mb = static_cast<double>(content.size()) / 1e6;
        fmt::print("{:<40} {:>9.1f} MB  {:>8.1f} MB/s  {:>12.0f} rows/s  {:>7.3f} s  peak RSS {:.1f} MB  ({}, {} entities)\n",
                   std::filesystem::path(path).filename().string(), mb, mb / secs,
                   static_cast<double>(rows) / secs, secs, static_cast<double>(usage.ru_maxrss) / 1024.0,
                   batch->format, batch->entities.size());
    }
    return status;
}
