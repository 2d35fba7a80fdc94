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
};

// Every run of the plain report at `path` (no converter), read in a child process: a fresh
// `perfwatch read-report` with an empty environment (sanitizer options aside), no descriptor but
// its answer pipe and stderr, no_new_privs and a seccomp filter (no socket, no file opened for
// writing, no execve), and the limits above. The parent decodes and sanitizes the answer. A
// crash, a kill by a limit, a timeout or a malformed answer is an Error of kind reader_died
// saying which, naming `path`.
Result<std::vector<RunBatch>> read_runs_in_process_sandbox(const std::string& path, const ReaderOptions& options);

// The child's side (`perfwatch read-report`): confines itself, reads `path`, writes its answer
// to descriptor 3 and returns the exit status (0 when the answer, runs or a refusal, was sent).
int reader_process_main(const std::string& path, const ReaderLimits& limits);

// The same read in this process or in a child, as `options` says.
Result<std::vector<RunBatch>> read_runs(const std::string& path, const ReaderOptions& options);

}  // namespace perfwatch
