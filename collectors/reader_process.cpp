#include "collectors/reader_process.hpp"

#include <fcntl.h>
#include <malloc.h>
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
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "collectors/collector.hpp"
#include "collectors/readers/byte_source.hpp"
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
// The resident size above which a reader server gives freed memory back after a report.
constexpr std::uint64_t k_trim_bytes = 256 << 20;

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

// What a confinement is for: the reader server (execve'd once, forks a reader per report), or
// the forked reader of one report.
enum class Role { server, reader };

// The seccomp filter of `role`, loaded on top of what the process already has (filters stack).
// The server: no socket, no file opened for writing or created (an unnamed O_TMPFILE, which spans
// spill to, aside), no file system change, and outside sanitizer builds (whose symbolizer and leak
// checker need them) no execve and no ptrace. A reader: beside the server's, no new process (threads
// only).
Result<void> load_filter(Role role) {
    const auto failed = [](std::string what) { return fail("", 0, fmt::format("could not confine the reader: {}", what)); };
    if (role == Role::reader && k_sanitized) return {};
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == nullptr) return failed("seccomp_init");
    int rc = 0;
    const auto deny = [&](int call, int error, std::initializer_list<scmp_arg_cmp> args = {}) {
        if (rc != 0) return;
        rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(static_cast<std::uint32_t>(error)), call,
                                    static_cast<unsigned>(args.size()), args.size() == 0 ? nullptr : args.begin());
    };
    if (role == Role::server) {
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
            for (int call : {SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv)})
                deny(call, EPERM);
            // clone3's flags lie in a structure, so it is refused as absent and glibc falls back to
            // clone, whose flags a filter reads (the reader's filter refuses a new process there).
            deny(SCMP_SYS(clone3), ENOSYS);
        }
    } else {
        for (int call : {SCMP_SYS(fork), SCMP_SYS(vfork)}) deny(call, EPERM);
        deny(SCMP_SYS(clone), EPERM, {masked_equal(0, CLONE_THREAD, 0)});
    }
    if (rc == 0) rc = seccomp_load(ctx);
    seccomp_release(ctx);
    if (rc != 0) return failed("seccomp: " + errno_text(-rc));
    return {};
}

// The server's confinement: it dies with the process that started it, no_new_privs, no core
// file, an address-space bound its readers inherit, and its filter.
Result<void> confine_server(const ReaderLimits& limits) {
    const auto failed = [](std::string what) { return fail("", 0, fmt::format("could not confine the reader: {}", what)); };
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return failed("parent death signal: " + errno_text(errno));
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return failed("no_new_privs: " + errno_text(errno));
    const rlimit core{0, 0};
    if (::setrlimit(RLIMIT_CORE, &core) != 0) return failed("setrlimit: " + errno_text(errno));
    if constexpr (!k_sanitized) {
        // The server watches resident memory; the address space bound stops a burst between two
        // looks (thread stacks and malloc arenas reserve more than they use: 2 GiB above).
        const rlim_t bytes = (limits.memory_mb + 2048) << 20;
        const rlimit as{bytes, bytes};
        if (::setrlimit(RLIMIT_AS, &as) != 0) return failed("setrlimit: " + errno_text(errno));
    }
    return load_filter(Role::server);
}

// A forked reader's own confinement: it dies with the server, its CPU time limit (counted from
// its own start), and no new process.
Result<void> confine_reader(const ReaderLimits& limits) {
    const auto failed = [](std::string what) { return fail("", 0, fmt::format("could not confine the reader: {}", what)); };
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return failed("parent death signal: " + errno_text(errno));
    const rlimit cpu{limits.cpu_seconds, limits.cpu_seconds + 5};
    if (::setrlimit(RLIMIT_CPU, &cpu) != 0) return failed("setrlimit: " + errno_text(errno));
    return load_filter(Role::reader);
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
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    if (child > 0) ::waitpid(child, nullptr, 0);
    out += fmt::format("; new process: {}", child >= 0 ? std::string("allowed") : errno_text(errno));
    return out;
}

// The test-only fault trigger (PERFWATCH_TEST_READER_FAULT): makes the reader crash, grow past
// its memory limit, hang, answer garbage, or report what its confinement allows; returns the
// answer it sends instead of the report's.
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
        return std::string("PWRUN\x01\x01\xff\xff\xff\xff\xff\xff\xff\x7f garbage");
    } else if (what == "probe") {
        return encode_error(fail(path, 0, probe_confinement()).error());
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

std::string memory_text(const ReaderLimits& limits, std::uint64_t rss) {
    return fmt::format("was killed after exceeding its memory limit of {} MB ({} MB resident)", limits.memory_mb, rss >> 20);
}

std::string time_text(const ReaderLimits& limits) {
    return fmt::format("was killed after running past its time limit of {} s", limits.wall_seconds);
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

// How a reader ended: the answer it wrote, and its exit status or why it was killed.
struct ReaderEnd {
    std::string answer;
    std::optional<std::string> killed_for;
    int status = 0;  // waitpid's
};

// Reads the answer of forked reader `pid` from `fd` until it closes, watching the reader's memory,
// clock and output and killing it past a limit; then reaps it.
ReaderEnd watch_reader(pid_t pid, int fd, const ReaderLimits& limits) {
    const auto start = std::chrono::steady_clock::now();
    const std::uint64_t memory_limit = limits.memory_mb << 20, output_limit = limits.output_mb << 20;
    ReaderEnd end;
    std::array<char, 1 << 16> chunk;
    while (true) {
        pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, k_watch_ms);
        if (ready < 0 && errno != EINTR) {
            end.killed_for = fmt::format("could not be watched ({})", errno_text(errno));
            break;
        }
        if (ready > 0) {
            const ssize_t n = ::read(fd, chunk.data(), chunk.size());
            if (n == 0) break;
            if (n < 0 && errno != EINTR && errno != EAGAIN) {
                end.killed_for = fmt::format("could not be read from ({})", errno_text(errno));
                break;
            }
            if (n > 0) end.answer.append(chunk.data(), static_cast<std::size_t>(n));
            if (end.answer.size() > output_limit) {
                end.killed_for = fmt::format("was killed after its answer passed the output limit of {} MB", limits.output_mb);
                break;
            }
        }
        if (const std::uint64_t rss = resident_bytes(pid); rss > memory_limit) {
            end.killed_for = memory_text(limits, rss);
            break;
        }
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds(limits.wall_seconds)) {
            end.killed_for = time_text(limits);
            break;
        }
    }
    if (end.killed_for) ::kill(pid, SIGKILL);
    // The answer is complete: the reader only exits now.
    while (::waitpid(pid, &end.status, 0) < 0 && errno == EINTR) {
    }
    return end;
}

// The server's reply for one report: u64 length, then u8 how (0 exited, 1 killed by a signal, 2
// killed by the server for a limit), i32 the exit status or signal, u32 and the limit's text, and
// the reader's answer to the end.
std::string encode_reply(const ReaderEnd& end) {
    const std::uint8_t how = end.killed_for ? 2 : WIFSIGNALED(end.status) ? 1 : 0;
    const std::int32_t code = how == 1 ? WTERMSIG(end.status) : how == 0 ? WEXITSTATUS(end.status) : 0;
    const std::string text = end.killed_for.value_or("");
    const auto text_size = static_cast<std::uint32_t>(text.size());
    const std::uint64_t size = 1 + 4 + 4 + text.size() + end.answer.size();
    std::string out;
    out.reserve(8 + size);
    out.append(reinterpret_cast<const char*>(&size), 8);
    out.push_back(static_cast<char>(how));
    out.append(reinterpret_cast<const char*>(&code), 4);
    out.append(reinterpret_cast<const char*>(&text_size), 4);
    out += text;
    out += end.answer;
    return out;
}

std::string read_one_report(const std::string& path) {
    if (auto fault = test_fault(path)) return std::move(*fault);
    Result<std::vector<RunBatch>> runs = fail(path, 0, "not read");
    try {
        runs = collect_plain_file_runs(path);
    } catch (const std::exception& e) {
        runs = fail(path, 0, fmt::format("internal error while reading the report: {}", e.what()));
        runs.error().kind = ErrorKind::internal;
    }
    return runs ? encode_runs(*runs) : encode_error(runs.error());
}

// Serves one request in a reader forked for it, which confines itself further, reads `path` and
// writes its answer to its pipe; watches it; returns the reply.
std::string serve_forked(const std::string& path, const ReaderLimits& limits) {
    int answer_pipe[2];
    if (::pipe2(answer_pipe, O_CLOEXEC) != 0) {
        ReaderEnd end;
        end.killed_for = fmt::format("could not start (pipe: {})", errno_text(errno));
        return encode_reply(end);
    }
    const pid_t server = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        // The reader: its answer goes to descriptor 3 (the server's reply pipe is not its own).
        ::close(answer_pipe[0]);
        ::dup2(answer_pipe[1], k_answer_fd);
        ::close(answer_pipe[1]);
        ::close(0);
        std::string answer;
        if (auto confined = confine_reader(limits); !confined || ::getppid() != server) {
            Error e = confined ? fail(path, 0, "the reader server is gone").error() : confined.error();
            e.file = path;
            e.kind = ErrorKind::internal;
            answer = encode_error(e);
        } else {
            answer = read_one_report(path);
        }
        const bool sent = write_all(k_answer_fd, answer);
        ::_exit(sent ? 0 : 3);
    }
    ::close(answer_pipe[1]);
    ReaderEnd end;
    if (pid < 0) {
        end.killed_for = fmt::format("could not start (fork: {})", errno_text(errno));
    } else {
        end = watch_reader(pid, answer_pipe[0], limits);
    }
    ::close(answer_pipe[0]);
    return encode_reply(end);
}

// Serves one request in the server itself: its CPU time limit counted from now, the report read,
// the memory it freed given back to the system. (Its parent watches its memory and clock.)
std::string serve_here(const std::string& path, const ReaderLimits& limits) {
    rusage used{};
    ::getrusage(RUSAGE_SELF, &used);
    const auto spent = static_cast<rlim_t>(used.ru_utime.tv_sec + used.ru_stime.tv_sec + 1);
    const rlimit cpu{spent + limits.cpu_seconds, spent + limits.cpu_seconds + 5};
    ::setrlimit(RLIMIT_CPU, &cpu);
    ReaderEnd end;
    end.answer = read_one_report(path);
    // A large report's memory goes back (the next report is judged by the resident size); a
    // small one's stays for the next to reuse (each page given back costs a fault when reused).
    if (resident_bytes(::getpid()) > k_trim_bytes) ::malloc_trim(0);
    return encode_reply(end);
}

bool read_exact(int fd, char* out, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::read(fd, out, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        out += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

bool same_limits(const ReaderLimits& a, const ReaderLimits& b) {
    return a.memory_mb == b.memory_mb && a.cpu_seconds == b.cpu_seconds && a.wall_seconds == b.wall_seconds &&
           a.output_mb == b.output_mb;
}

// The parent's side of one reader server: a `perfwatch read-report` process started once, sent a
// path per report, answering with a reply (encode_reply). One request at a time.
class ReaderServer {
public:
    explicit ReaderServer(const ReaderOptions& options) : m_options(options) {}
    ReaderServer(const ReaderServer&) = delete;
    ReaderServer& operator=(const ReaderServer&) = delete;
    ~ReaderServer() { stop(); }

    // Whether it runs and reads with `options` (and may read another report).
    bool serves(const ReaderOptions& options) const {
        return m_pid > 0 && m_served < options.reports_per_process && m_options.executable == options.executable &&
               m_options.reports_per_process == options.reports_per_process && same_limits(m_options.limits, options.limits);
    }

    // Starts the server process; an error says why it could not.
    Result<void> start();

    // Reads `path`: how its reader ended. A server that failed is stopped.
    ReaderEnd read(const std::string& path);

    // Ends the server (killed, whatever it was doing; a dead one keeps its status) and returns
    // its waitpid status.
    int stop() {
        int status = 0;
        if (m_pid <= 0) return status;
        ::close(m_requests);
        ::close(m_replies);
        ::kill(m_pid, SIGKILL);
        while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
        }
        m_pid = -1;
        return status;
    }

private:
    enum class Received { reply, closed, timed_out, over_memory };

    // Writes a request without dying of SIGPIPE when the server is gone (the signal is held and
    // taken back on this thread).
    bool send(std::string_view bytes);
    // Waits for the reply, watching the server's memory and clock.
    Received receive(std::string& reply, std::uint64_t& rss);

    ReaderOptions m_options;
    pid_t m_pid = -1;
    int m_requests = -1, m_replies = -1;
    std::uint64_t m_served = 0;
};

Result<void> ReaderServer::start() {
    int requests[2], replies[2];
    if (::pipe2(requests, O_CLOEXEC) != 0) return fail("", 0, fmt::format("cannot start a reader: pipe: {}", errno_text(errno)));
    if (::pipe2(replies, O_CLOEXEC) != 0) {
        ::close(requests[0]);
        ::close(requests[1]);
        return fail("", 0, fmt::format("cannot start a reader: pipe: {}", errno_text(errno)));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, requests[0], 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, replies[1], k_answer_fd);
    posix_spawn_file_actions_addclosefrom_np(&actions, k_answer_fd + 1);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    const ReaderLimits& limits = m_options.limits;
    std::vector<std::string> args = {m_options.executable,
                                     "read-report",
                                     "--memory-mb",
                                     std::to_string(limits.memory_mb),
                                     "--cpu-seconds",
                                     std::to_string(limits.cpu_seconds),
                                     "--wall-seconds",
                                     std::to_string(limits.wall_seconds),
                                     "--output-mb",
                                     std::to_string(limits.output_mb)};
    if (m_options.reports_per_process <= 1) args.emplace_back("--fork-each");
    std::vector<std::string> env;
    for (const char* name : k_passed_env)
        if (const char* v = std::getenv(name); v != nullptr && std::string_view(name) != "ASAN_OPTIONS")
            env.push_back(fmt::format("{}={}", name, v));
    // In a sanitizer build, a sanitizer's report ends the reader by a signal the parent names.
    if constexpr (k_sanitized) {
        const char* asan = std::getenv("ASAN_OPTIONS");
        env.push_back(fmt::format("ASAN_OPTIONS={}{}abort_on_error=1", asan ? asan : "", asan && *asan ? ":" : ""));
    }
    // Every symbol bound once in the server, not again in each reader it forks.
    env.emplace_back("LD_BIND_NOW=1");
    std::vector<char*> argv, envp;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);

    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, m_options.executable.c_str(), &actions, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(requests[0]);
    ::close(replies[1]);
    if (spawned != 0) {
        ::close(requests[1]);
        ::close(replies[0]);
        return fail("", 0, fmt::format("cannot start a reader ({}): {}", m_options.executable, errno_text(spawned)));
    }
    m_pid = pid;
    m_requests = requests[1];
    m_replies = replies[0];
    m_served = 0;
    return {};
}

bool ReaderServer::send(std::string_view bytes) {
    sigset_t pipe_only, old;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    const bool sent = write_all(m_requests, bytes);
    if (!sent && errno == EPIPE) {
        const timespec now{0, 0};
        while (::sigtimedwait(&pipe_only, nullptr, &now) < 0 && errno == EINTR) {
        }
    }
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return sent;
}

ReaderServer::Received ReaderServer::receive(std::string& reply, std::uint64_t& rss) {
    const ReaderLimits& limits = m_options.limits;
    // A server that forks a reader per report enforces its clock itself; this bound is for a
    // server that stopped answering.
    const auto wall = std::chrono::seconds(limits.wall_seconds + (m_options.reports_per_process <= 1 ? 5 : 0));
    const auto deadline = std::chrono::steady_clock::now() + wall;
    const std::uint64_t memory_limit = limits.memory_mb << 20;
    std::uint64_t size = 0;
    std::size_t have = 0;
    bool sized = false;
    while (!sized || have < size) {
        if (std::chrono::steady_clock::now() > deadline) return Received::timed_out;
        pollfd p{m_replies, POLLIN, 0};
        const int ready = ::poll(&p, 1, k_watch_ms);
        if (ready < 0 && errno != EINTR) return Received::closed;
        if (ready <= 0) {
            if ((rss = resident_bytes(m_pid)) > memory_limit) return Received::over_memory;
            continue;
        }
        if (!sized) {
            if (!read_exact(m_replies, reinterpret_cast<char*>(&size), 8)) return Received::closed;
            // The reader's answer within its limit, plus the reply's own fields.
            if (size < 9 || size > (limits.output_mb << 20) + (1 << 16)) return Received::closed;
            sized = true;
            reply.resize(size);
            continue;
        }
        const ssize_t n = ::read(m_replies, reply.data() + have, size - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return Received::closed;
        have += static_cast<std::size_t>(n);
    }
    return Received::reply;
}

ReaderEnd ReaderServer::read(const std::string& path) {
    ReaderEnd end;
    const auto size = static_cast<std::uint32_t>(path.size());
    std::string request(reinterpret_cast<const char*>(&size), 4);
    request += path;
    std::string reply;
    std::uint64_t rss = 0;
    const Received got = send(request) ? receive(reply, rss) : Received::closed;
    if (got != Received::reply) {
        // (Stopped whatever happened: one that closed its pipe or sent a malformed length may live on.)
        end.status = stop();
        if (got == Received::timed_out) end.killed_for = time_text(m_options.limits);
        if (got == Received::over_memory) end.killed_for = memory_text(m_options.limits, rss);
        return end;
    }
    ++m_served;
    const auto how = static_cast<std::uint8_t>(reply[0]);
    std::int32_t code = 0;
    std::uint32_t text_size = 0;
    std::memcpy(&code, reply.data() + 1, 4);
    std::memcpy(&text_size, reply.data() + 5, 4);
    text_size = std::min<std::uint32_t>(text_size, static_cast<std::uint32_t>(reply.size() - 9));
    if (how == 2) end.killed_for = reply.substr(9, text_size);
    end.status = how == 1 ? (code & 0x7f) : (code & 0xff) << 8;  // waitpid's form: a signal, or an exit status
    end.answer = reply.substr(9 + text_size);
    return end;
}

// The servers not in use, reused by the next report of the same options; a thread takes one
// (or starts one) per report, so several threads read in parallel.
class ReaderServerPool {
public:
    std::unique_ptr<ReaderServer> take(const ReaderOptions& options) {
        std::lock_guard lock(m_mutex);
        while (!m_idle.empty()) {
            std::unique_ptr<ReaderServer> server = std::move(m_idle.back());
            m_idle.pop_back();
            if (server->serves(options)) return server;
        }
        return std::make_unique<ReaderServer>(options);
    }
    void give_back(std::unique_ptr<ReaderServer> server, const ReaderOptions& options) {
        if (!server->serves(options)) return;
        std::lock_guard lock(m_mutex);
        m_idle.push_back(std::move(server));
    }

private:
    std::mutex m_mutex;
    std::vector<std::unique_ptr<ReaderServer>> m_idle;
};

ReaderServerPool& server_pool() {
    static ReaderServerPool pool;
    return pool;
}

// The reader's end as this report's result.
Result<std::vector<RunBatch>> judge(const std::string& path, const ReaderLimits& limits, ReaderEnd end) {
    if (end.killed_for) return std::unexpected(died(path, *end.killed_for));
    const int status = end.status;
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        if (sig == SIGXCPU)
            return std::unexpected(died(path, fmt::format("was killed by {} after its CPU time limit of {} s",
                                                          signal_text(sig), limits.cpu_seconds)));
        return std::unexpected(died(path, fmt::format("was killed by {}", signal_text(sig))));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return std::unexpected(died(path, fmt::format("exited with status {}", WEXITSTATUS(status))));

    auto decoded = decode_answer(end.answer);
    if (!decoded) {
        std::string_view why = decoded.error().message;
        if (why.starts_with("malformed reader answer: ")) why.remove_prefix(std::string_view("malformed reader answer: ").size());
        return std::unexpected(died(path, fmt::format("sent a malformed answer (at byte {}: {})", decoded.error().offset, why)));
    }
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

}  // namespace

int reader_server_main(const ReaderLimits& limits, bool fork_each) {
    // Reading in the server itself, it may not start a process either.
    auto confined = confine_server(limits);
    if (confined && !fork_each) confined = load_filter(Role::reader);
    // What every reader would do first is done once here: the SHA-256 library set up (it reads
    // its configuration file).
    if (confined) sha256_hex("");
    std::uint32_t size = 0;
    std::string path;
    while (read_exact(0, reinterpret_cast<char*>(&size), 4)) {
        if (size > (1u << 20)) return 3;
        path.resize(size);
        if (!read_exact(0, path.data(), size)) return 3;
        std::string reply;
        if (!confined) {
            // Every request gets the reason as its reader's refusal.
            Error e = confined.error();
            e.file = path;
            e.kind = ErrorKind::internal;
            ReaderEnd end;
            end.answer = encode_error(e);
            reply = encode_reply(end);
        } else {
            reply = fork_each ? serve_forked(path, limits) : serve_here(path, limits);
        }
        if (!write_all(k_answer_fd, reply)) return 3;
    }
    return 0;
}

Result<std::vector<RunBatch>> read_runs_in_process_sandbox(const std::string& path, const ReaderOptions& options) {
    ReaderOptions resolved = options;
    if (resolved.executable.empty()) resolved.executable = "/proc/self/exe";
    resolved.reports_per_process = std::max<std::uint64_t>(resolved.reports_per_process, 1);
    std::unique_ptr<ReaderServer> server = server_pool().take(resolved);
    if (!server->serves(resolved)) {
        if (auto started = server->start(); !started) {
            Error e = started.error();
            e.file = path;
            return std::unexpected(std::move(e));
        }
    }
    ReaderEnd end = server->read(path);
    server_pool().give_back(std::move(server), resolved);
    return judge(path, resolved.limits, std::move(end));
}

Result<std::vector<RunBatch>> read_runs(const std::string& path, const ReaderOptions& options) {
    if (options.isolation == ReaderIsolation::process) return read_runs_in_process_sandbox(path, options);
    return collect_plain_file_runs(path);
}

}  // namespace perfwatch
