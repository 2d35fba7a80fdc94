// Measures a collector on real-size files, the way the daemon reads them (collect_file: streamed
// from disk, hashed, gzip inflated on the fly): input MB/s (and decompressed MB/s for .gz), rows
// or events per second, wall time and the process's peak resident memory. Run one file per
// process so each peak is the collector's own.
// Rows: trace events for JSON traces, activity rows for SQLite exports, records for CSV and text.
#include <sys/resource.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "collectors/readers/byte_source.hpp"
#include "collectors/collector.hpp"

using namespace perfwatch;

namespace {

// Counted apart from the timed run (and before it, so its memory is not the collector's).
struct InputSize {
    double bytes = 0;       // as read from the file
    double inflated = 0;    // after gzip decompression
    double rows = 0;
};

Result<InputSize> measure_input(const std::string& path) {
    InputSize size;
    size.bytes = static_cast<double>(std::filesystem::file_size(path));
    auto file = FileSource::open(path);
    if (!file) return std::unexpected(file.error());
    auto head = (*file)->head(16);
    if (!head) return std::unexpected(head.error());
    if (head->starts_with(std::string_view("SQLite format 3\0", 16))) {
        size.inflated = size.bytes;
        SQLite::Database db(path, SQLite::OPEN_READONLY);
        for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                                  "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"})
            if (db.tableExists(table)) size.rows += db.execAndGet(fmt::format("SELECT count(*) FROM {}", table)).getDouble();
        return size;
    }
    std::unique_ptr<ByteSource> inflated;
    ByteSource* source = file->get();
    if (is_gzip(*head)) {
        inflated = gunzip(path, **file, InflateLimits{});
        source = inflated.get();
    }
    // JSON traces: one "ph" key per event; other text: lines.
    const bool json = path.find(".json") != std::string::npos;
    std::vector<char> buf(1 << 20);
    char prev[3] = {0, 0, 0};
    while (true) {
        auto got = source->read(buf.data(), buf.size());
        if (!got) return std::unexpected(got.error());
        if (*got == 0) break;
        size.inflated += static_cast<double>(*got);
        for (std::size_t i = 0; i < *got; ++i) {
            const char c = buf[i];
            if (json) {
                if (c == 'h' && prev[2] == 'p' && prev[1] == '"') size.rows += 1;
                prev[0] = prev[1];
                prev[1] = prev[2];
                prev[2] = c;
            } else if (c == '\n') {
                size.rows += 1;
            }
        }
    }
    return size;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        fmt::print(stderr, "usage: bench_collect [--sandbox PERFWATCH_BINARY] FILE...\n");
        return 2;
    }
    // --sandbox: each file read as check and the daemon read it, in a confined reader process
    // (`PERFWATCH_BINARY read-report`); its time and CPU are the whole process's, its peak RSS
    // the child's.
    ReaderOptions reader;
    int first = 1;
    if (argc > 3 && std::string_view(argv[1]) == "--sandbox") {
        reader.isolation = ReaderIsolation::process;
        reader.executable = argv[2];
        first = 3;
    }
    int status = 0;
    for (int i = first; i < argc; ++i) {
        const std::string path = argv[i];
        auto size = measure_input(path);
        if (!size) {
            fmt::print(stderr, "{}\n", size.error().to_string());
            status = 1;
            continue;
        }
        rusage before{};
        getrusage(RUSAGE_SELF, &before);
        const auto t0 = std::chrono::steady_clock::now();
        auto runs = collect_file_runs(path, {}, reader);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!runs) {
            fmt::print(stderr, "{}\n", runs.error().to_string());
            status = 1;
            continue;
        }
        const RunBatch& batch = runs->back();
        rusage usage{};
        getrusage(RUSAGE_SELF, &usage);
        if (reader.isolation == ReaderIsolation::process) {
            rusage child{};
            getrusage(RUSAGE_CHILDREN, &child);
            usage.ru_utime.tv_sec += child.ru_utime.tv_sec;
            usage.ru_utime.tv_usec += child.ru_utime.tv_usec;
            usage.ru_stime.tv_sec += child.ru_stime.tv_sec;
            usage.ru_stime.tv_usec += child.ru_stime.tv_usec;
            usage.ru_maxrss = std::max(usage.ru_maxrss, child.ru_maxrss);
        }
        const double cpu = static_cast<double>(usage.ru_utime.tv_sec - before.ru_utime.tv_sec + usage.ru_stime.tv_sec -
                                               before.ru_stime.tv_sec) +
                           static_cast<double>(usage.ru_utime.tv_usec - before.ru_utime.tv_usec + usage.ru_stime.tv_usec -
                                               before.ru_stime.tv_usec) / 1e6;
        const double mb = size->bytes / 1e6, inflated_mb = size->inflated / 1e6;
        std::string gz;
        if (size->inflated != size->bytes) gz = fmt::format(" ({:.1f} MB/s decompressed)", inflated_mb / secs);
        fmt::print("{:<34} {:>8.1f} MB {:>8.1f} MB/s{} {:>11.0f} rows/s {:>7.2f} s wall {:>7.2f} s cpu  peak RSS {:.1f} MB"
                   "  [{}, {:.0f} rows, {} entities]\n",
                   std::filesystem::path(path).filename().string(), mb, mb / secs, gz, size->rows / secs, secs, cpu,
                   static_cast<double>(usage.ru_maxrss) / 1024.0, batch.format, size->rows, batch.entities.size());
        std::fflush(stdout);
    }
    return status;
}
