#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/model.hpp"

namespace perfwatch {

// What one reader process may spend before it is killed (README: "Readers in a sandbox").
struct ReaderLimits {
    std::uint64_t memory_mb = 4096;  // resident memory, watched by the parent
    std::uint64_t cpu_seconds = 600;
    std::uint64_t wall_seconds = 900;
    std::uint64_t output_mb = 256;   // the answer sent back over the pipe
};

// How reports are read: in a child process (the default for check, ingest and the daemon), or in
// this process (library callers, benchmarks).
enum class ReaderIsolation { process, in_process };

struct ReaderOptions {
    ReaderIsolation isolation = ReaderIsolation::in_process;
    ReaderLimits limits;
    // The perfwatch executable to run as `perfwatch read-report`; empty: this process's own.
    std::string executable;
    // How many reports one reader process reads before it is replaced (after a failure at once);
    // 1: a fresh process forked for each report.
    std::uint64_t reports_per_process = 1000;
};

// Every run of the plain report at `path` (no converter), read in a reader server: a `perfwatch
// read-report` process started with an empty environment (sanitizer options aside), no descriptor
// but its two pipes and stderr, no_new_privs and a seccomp filter (no socket, no file opened for
// writing, no execve), and the limits above, enforced per report. It reads `reports_per_process`
// reports and is replaced (after a failure at once); with 1 it forks a fresh reader per report,
// which also may not start a process. A pool keeps one server per thread reading at a time. The
// parent decodes and sanitizes the answer. A crash, a kill by a limit, a timeout or a malformed
// answer is an Error of kind reader_died saying which, naming `path`.
Result<std::vector<RunBatch>> read_runs_in_process_sandbox(const std::string& path, const ReaderOptions& options);

// The reader server's side (`perfwatch read-report`): confines itself, then for each request on
// descriptor 0 (u32 length, path) reads the report (in a reader forked for it with `fork_each`)
// and writes the reply (how the reader ended, its answer) to descriptor 3. Returns at end of input.
int reader_server_main(const ReaderLimits& limits, bool fork_each);

// The same read in this process or in a child, as `options` says.
Result<std::vector<RunBatch>> read_runs(const std::string& path, const ReaderOptions& options);

}  // namespace perfwatch
