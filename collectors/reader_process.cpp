#include "collectors/reader_process.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

#include "collectors/collector.hpp"
#include "collectors/sanitize.hpp"
#include "core/run_wire.hpp"

extern char** environ;

namespace perfwatch {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool k_sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool k_sanitized = true;
#else
constexpr bool k_sanitized = false;
#endif
#else
constexpr bool k_sanitized = false;
#endif

// The answer's descriptor in the child.
constexpr int k_answer_fd = 3;
// How often the parent looks at the child's memory and clock.
constexpr int k_watch_ms = 20;

// The environment a reader gets: sanitizer settings (a test build's own) and the test-only fault
// trigger; nothing a configuration or a secret may live in.
constexpr std::array k_passed_env = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "ASAN_SYMBOLIZER_PATH",
                                     "LLVM_SYMBOLIZER_PATH", "PERFWATCH_TEST_READER_FAULT", "PERFWATCH_SCAN_LEVEL"};

std::string errno_text(int e) { return fmt::format("{} ({})", strerrorname_np(e) ? strerrorname_np(e) : "?", std::strerror(e)); }

// Argument `arg` of a call, masked by `mask`, equals `value` (SCMP_CMP without its C99 literal).
scmp_arg_cmp masked_equal(unsigned arg, scmp_datum_t mask, scmp_datum_t value) {
    scmp_arg_cmp c{};
    c.arg = arg;
    c.op = SCMP_CMP_MASKED_EQ;
    c.datum_a = mask;
    c.datum_b = value;
    return c;
}

// no_new_privs, the limits a process sets on itself, and the seccomp filter: no socket, no file
// opened for writing or created (an unnamed O_TMPFILE, which spans spill to, aside), no file
// system change, and outside sanitizer builds (whose symbolizer and leak checker need them) no
// execve, no new process, no ptrace.
Result<void> confine(const ReaderLimits& limits) {
    const auto failed = [](std::string what) { return fail("", 0, fmt::format("could not confine the reader: {}", what)); };
    // A reader never outlives the process that waits for its answer.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return failed("parent death signal: " + errno_text(errno));
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return failed("no_new_privs: " + errno_text(errno));
    const rlimit cpu{limits.cpu_seconds, limits.cpu_seconds + 5};
    const rlimit core{0, 0};
    if (::setrlimit(RLIMIT_CPU, &cpu) != 0 || ::setrlimit(RLIMIT_CORE, &core) != 0)
        return failed("setrlimit: " + errno_text(errno));
    if constexpr (!k_sanitized) {
        // The parent watches resident memory; the address space bound stops a burst between two
        // looks (thread stacks and malloc arenas reserve more than they use: 2 GiB above).
        const rlim_t bytes = (limits.memory_mb + 2048) << 20;
        const rlimit as{bytes, bytes};
        if (::setrlimit(RLIMIT_AS, &as) != 0) return failed("setrlimit: " + errno_text(errno));
    }
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == nullptr) return failed("seccomp_init");
    int rc = 0;
    const auto deny = [&](int call, int error, std::initializer_list<scmp_arg_cmp> args = {}) {
        if (rc != 0) return;
        rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(static_cast<std::uint32_t>(error)), call,
                                    static_cast<unsigned>(args.size()), args.size() == 0 ? nullptr : args.begin());
    };
    for (int call : {SCMP_SYS(socket), SCMP_SYS(socketpair), SCMP_SYS(connect), SCMP_SYS(bind), SCMP_SYS(listen),
                     SCMP_SYS(accept), SCMP_SYS(accept4), SCMP_SYS(io_uring_setup), SCMP_SYS(mkdir), SCMP_SYS(mkdirat),
                     SCMP_SYS(rmdir), SCMP_SYS(unlink), SCMP_SYS(unlinkat), SCMP_SYS(rename), SCMP_SYS(renameat),
                     SCMP_SYS(renameat2), SCMP_SYS(link), SCMP_SYS(linkat), SCMP_SYS(symlink), SCMP_SYS(symlinkat),
                     SCMP_SYS(chmod), SCMP_SYS(fchmodat), SCMP_SYS(chown), SCMP_SYS(lchown), SCMP_SYS(fchownat),
                     SCMP_SYS(truncate), SCMP_SYS(mknod), SCMP_SYS(mknodat), SCMP_SYS(creat), SCMP_SYS(mount),
                     SCMP_SYS(umount2), SCMP_SYS(chroot), SCMP_SYS(pivot_root), SCMP_SYS(setns), SCMP_SYS(unshare),
                     SCMP_SYS(bpf), SCMP_SYS(perf_event_open), SCMP_SYS(keyctl), SCMP_SYS(add_key),
                     SCMP_SYS(setxattr), SCMP_SYS(lsetxattr), SCMP_SYS(fsetxattr), SCMP_SYS(removexattr),
                     SCMP_SYS(lremovexattr), SCMP_SYS(fremovexattr), SCMP_SYS(process_vm_writev)})
        deny(call, EPERM);
    // openat2's flags lie in a structure a filter cannot read: refused as absent, glibc uses openat.
    deny(SCMP_SYS(openat2), ENOSYS);
    // Opened for writing (an unnamed temporary file aside), created or truncated.
    for (auto [call, arg] : {std::pair{SCMP_SYS(open), 1u}, std::pair{SCMP_SYS(openat), 2u}}) {
        // (One comparison per argument and rule: the access mode with the O_TMPFILE bit clear.)
        deny(call, EACCES, {masked_equal(arg, O_ACCMODE | __O_TMPFILE, O_WRONLY)});
        deny(call, EACCES, {masked_equal(arg, O_ACCMODE | __O_TMPFILE, O_RDWR)});
        deny(call, EACCES, {masked_equal(arg, O_CREAT, O_CREAT)});
        deny(call, EACCES, {masked_equal(arg, O_TRUNC, O_TRUNC)});
    }
    if constexpr (!k_sanitized) {
        for (int call : {SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(fork), SCMP_SYS(vfork), SCMP_SYS(ptrace),
                         SCMP_SYS(process_vm_readv)})
            deny(call, EPERM);
        // Threads only: clone3's flags lie in a structure, so it is refused as absent and glibc
        // falls back to clone, whose flags a filter reads.
        deny(SCMP_SYS(clone3), ENOSYS);
        deny(SCMP_SYS(clone), EPERM, {masked_equal(0, CLONE_THREAD, 0)});
    }
    if (rc == 0) rc = seccomp_load(ctx);
    seccomp_release(ctx);
    if (rc != 0) return failed("seccomp: " + errno_text(-rc));
    return {};
}

bool write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

// What a probe of the confinement found, one "call: result" per attempt (the fault trigger
// `probe`; tests read it).
std::string probe_confinement() {
    std::string out;
    const auto said = [&](std::string_view what, int result) {
        out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", what, result >= 0 ? std::string("allowed") : errno_text(errno));
        if (result >= 0) ::close(result);
    };
    said("socket", ::socket(AF_INET, SOCK_STREAM, 0));
    said("unix socket", ::socket(AF_UNIX, SOCK_STREAM, 0));
    said("open for writing", ::open("/tmp/perfwatch-reader-probe", O_WRONLY | O_CREAT, 0600));
    said("open read-write", ::open("/etc/hostname", O_RDWR));
    said("unnamed temporary file", ::open("/tmp", O_TMPFILE | O_RDWR, 0600));
    return out;
}

// The test-only fault trigger (PERFWATCH_TEST_READER_FAULT): makes the reader crash, grow past
// its memory limit, hang, answer garbage, or report what its confinement allows.
std::optional<std::string> test_fault(const std::string& path) {
    const char* fault = std::getenv("PERFWATCH_TEST_READER_FAULT");
    if (fault == nullptr) return std::nullopt;
    // "KIND", or "KIND:TEXT" for the reports whose path holds TEXT only; several, comma-separated:
    // the first that takes the path.
    std::string_view what;
    for (std::string_view rest = fault; !rest.empty() && what.empty();) {
        const auto comma = rest.find(',');
        std::string_view one = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        if (const auto colon = one.find(':'); colon != std::string_view::npos) {
            if (path.find(one.substr(colon + 1)) == std::string::npos) continue;
            one = one.substr(0, colon);
        }
        what = one;
    }
    if (what == "crash") {
        volatile int* nowhere = nullptr;
        *nowhere = 1;
    } else if (what == "memory") {
        std::vector<std::unique_ptr<char[]>> held;
        while (true) {
            held.push_back(std::make_unique<char[]>(64 << 20));
            std::memset(held.back().get(), 1, 64 << 20);
        }
    } else if (what == "hang") {
        while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
    } else if (what == "garbage") {
        write_all(k_answer_fd, "PWRUN\x01\x01\xff\xff\xff\xff\xff\xff\xff\x7f garbage");
        std::exit(0);
    } else if (what == "probe") {
        return probe_confinement();
    }
    return std::nullopt;
}

std::string signal_text(int sig) {
    const char* name = sigabbrev_np(sig);
    return fmt::format("signal {} ({}{})", sig, name ? "SIG" : "", name ? name : std::to_string(sig));
}

// A child's resident memory in bytes, from /proc/PID/statm; 0 when it cannot be read.
std::uint64_t resident_bytes(pid_t pid) {
    std::ifstream in(fmt::format("/proc/{}/statm", pid));
    std::uint64_t size = 0, resident = 0;
    if (!(in >> size >> resident)) return 0;
    return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

Error died(const std::string& path, std::string why) {
    Error e = fail(path, 0, fmt::format("the reader process {} while reading it", why)).error();
    e.kind = ErrorKind::reader_died;
    return e;
}

bool is_content_hash(std::string_view h) {
    const std::string_view hex = h.substr(0, h.find('#'));
    return hex.size() == 64 && hex.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

}  // namespace

int reader_process_main(const std::string& path, const ReaderLimits& limits) {
    std::string answer;
    if (auto confined = confine(limits); !confined) {
        Error e = confined.error();
        e.file = path;
        e.kind = ErrorKind::internal;
        answer = encode_error(e);
    } else if (auto probe = test_fault(path)) {
        answer = encode_error(fail(path, 0, *probe).error());
    } else {
        Result<std::vector<RunBatch>> runs = fail(path, 0, "not read");
        try {
            runs = collect_plain_file_runs(path);
        } catch (const std::exception& e) {
            runs = fail(path, 0, fmt::format("internal error while reading the report: {}", e.what()));
            runs.error().kind = ErrorKind::internal;
        }
        answer = runs ? encode_runs(*runs) : encode_error(runs.error());
    }
    if (!write_all(k_answer_fd, answer)) return 3;
    ::close(k_answer_fd);
    return 0;
}

Result<std::vector<RunBatch>> read_runs_in_process_sandbox(const std::string& path, const ReaderOptions& options) {
    const ReaderLimits& limits = options.limits;
    const std::string executable = options.executable.empty() ? "/proc/self/exe" : options.executable;
    int answer_pipe[2];
    if (::pipe2(answer_pipe, O_CLOEXEC) != 0)
        return fail(path, 0, fmt::format("cannot start a reader: pipe: {}", errno_text(errno)));

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, answer_pipe[1], k_answer_fd);
    posix_spawn_file_actions_addclosefrom_np(&actions, k_answer_fd + 1);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    std::vector<std::string> args = {executable,
                                     "read-report",
                                     "--memory-mb",
                                     std::to_string(limits.memory_mb),
                                     "--cpu-seconds",
                                     std::to_string(limits.cpu_seconds),
                                     "--",
                                     path};
    std::vector<std::string> env;
    for (const char* name : k_passed_env)
        if (const char* v = std::getenv(name); v != nullptr && std::string_view(name) != "ASAN_OPTIONS")
            env.push_back(fmt::format("{}={}", name, v));
    // In a sanitizer build, a sanitizer's report ends the reader by a signal the parent names.
    if constexpr (k_sanitized) {
        const char* asan = std::getenv("ASAN_OPTIONS");
        env.push_back(fmt::format("ASAN_OPTIONS={}{}abort_on_error=1", asan ? asan : "", asan && *asan ? ":" : ""));
    }
    std::vector<char*> argv, envp;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);

    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, executable.c_str(), &actions, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(answer_pipe[1]);
    if (spawned != 0) {
        ::close(answer_pipe[0]);
        return fail(path, 0, fmt::format("cannot start a reader ({}): {}", executable, errno_text(spawned)));
    }

    // Read the answer while watching the child's memory, clock and output.
    const auto start = std::chrono::steady_clock::now();
    const std::uint64_t memory_limit = limits.memory_mb << 20, output_limit = limits.output_mb << 20;
    std::string answer;
    std::optional<std::string> killed_for;
    std::array<char, 1 << 16> chunk;
    while (true) {
        pollfd p{answer_pipe[0], POLLIN, 0};
        const int ready = ::poll(&p, 1, k_watch_ms);
        if (ready < 0 && errno != EINTR) {
            killed_for = fmt::format("could not be watched ({})", errno_text(errno));
            break;
        }
        if (ready > 0) {
            const ssize_t n = ::read(answer_pipe[0], chunk.data(), chunk.size());
            if (n == 0) break;
            if (n < 0 && errno != EINTR && errno != EAGAIN) {
                killed_for = fmt::format("could not be read from ({})", errno_text(errno));
                break;
            }
            if (n > 0) answer.append(chunk.data(), static_cast<std::size_t>(n));
            if (answer.size() > output_limit) {
                killed_for = fmt::format("was killed after its answer passed the output limit of {} MB", limits.output_mb);
                break;
            }
        }
        if (const std::uint64_t rss = resident_bytes(pid); rss > memory_limit) {
            killed_for = fmt::format("was killed after exceeding its memory limit of {} MB ({} MB resident)",
                                     limits.memory_mb, rss >> 20);
            break;
        }
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds(limits.wall_seconds)) {
            killed_for = fmt::format("was killed after running past its time limit of {} s", limits.wall_seconds);
            break;
        }
    }
    if (killed_for) ::kill(pid, SIGKILL);
    ::close(answer_pipe[0]);
    // The answer is complete: the child only exits now (a leak check may run first).
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (killed_for) return std::unexpected(died(path, *killed_for));
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        if (sig == SIGXCPU)
            return std::unexpected(died(path, fmt::format("was killed by {} after its CPU time limit of {} s",
                                                          signal_text(sig), limits.cpu_seconds)));
        return std::unexpected(died(path, fmt::format("was killed by {}", signal_text(sig))));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return std::unexpected(died(path, fmt::format("exited with status {}", WEXITSTATUS(status))));

    auto decoded = decode_answer(answer);
    if (!decoded) return std::unexpected(died(path, fmt::format("sent a malformed answer ({})", decoded.error().to_string())));
    if (decoded->refused) {
        Error e = std::move(*decoded->refused);
        e.file = path;  // the parent names the file it asked for
        if (e.kind == ErrorKind::database || e.kind == ErrorKind::reader_died) e.kind = ErrorKind::report;
        return std::unexpected(std::move(e));
    }
    for (RunBatch& batch : decoded->runs) {
        if (!is_content_hash(batch.sha256))
            return std::unexpected(died(path, "sent a malformed answer (a run without a SHA-256 content hash)"));
        batch.source = path;
        sanitize_batch(batch);
    }
    if (decoded->runs.empty()) return std::unexpected(died(path, "sent an answer with no run"));
    return std::move(decoded->runs);
}

Result<std::vector<RunBatch>> read_runs(const std::string& path, const ReaderOptions& options) {
    if (options.isolation == ReaderIsolation::process) return read_runs_in_process_sandbox(path, options);
    return collect_plain_file_runs(path);
}

}  // namespace perfwatch
