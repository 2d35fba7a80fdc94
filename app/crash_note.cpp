#include "app/crash_note.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "collectors/readers/byte_source.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PERFWATCH_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define PERFWATCH_ASAN 1
#endif
#ifdef PERFWATCH_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace perfwatch {

namespace {

// Plain data only: the handler may use nothing else.
thread_local constinit const char* t_reading = nullptr;  // the path this worker thread reads, or null
constinit char g_crash_note[4096] = {};                // where the note goes ("" : nowhere)
constinit struct sigaction g_previous_handlers[NSIG] = {};
constexpr int k_crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// Async-signal-safe: "SIGNAL\nPATH" (signal 0: a sanitizer report), only when a worker thread was
// reading.
void write_crash_note(int signal) {
    const char* path = t_reading;
    if (path == nullptr || g_crash_note[0] == '\0') return;
    const int fd = ::open(g_crash_note, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return;
    char number[16];
    int n = 0;
    char digits[12];
    int d = 0;
    for (int v = signal; d == 0 || v > 0; v /= 10) digits[d++] = static_cast<char>('0' + v % 10);
    while (d > 0) number[n++] = digits[--d];
    number[n++] = '\n';
    [[maybe_unused]] auto a = ::write(fd, number, static_cast<std::size_t>(n));
    [[maybe_unused]] auto b = ::write(fd, path, std::strlen(path));
    ::close(fd);
}

extern "C" void on_crash_signal(int signal, siginfo_t* info, void* context) {
    write_crash_note(signal);
    const struct sigaction& previous = g_previous_handlers[signal];
    if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
        previous.sa_sigaction(signal, info, context);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN && previous.sa_handler != nullptr) {
        previous.sa_handler(signal);
    }
    // Dies of the signal once the handler returns (it is blocked until then).
    std::signal(signal, SIG_DFL);
    std::raise(signal);
}

}  // namespace

CrashNoteReading::CrashNoteReading(const std::string& path) { t_reading = path.c_str(); }

CrashNoteReading::~CrashNoteReading() { t_reading = nullptr; }

void install_crash_note(const std::string& note_path) {
    if (note_path.empty() || note_path.size() >= sizeof g_crash_note) return;
    std::memcpy(g_crash_note, note_path.c_str(), note_path.size() + 1);
    for (const int signal : k_crash_signals) {
        struct sigaction action = {};
        action.sa_sigaction = &on_crash_signal;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        ::sigaction(signal, &action, &g_previous_handlers[signal]);
    }
#ifdef PERFWATCH_ASAN
    __sanitizer_set_death_callback(+[] { write_crash_note(0); });
#endif
}

std::optional<CrashNote> take_crash_note(const std::string& note_path) {
    if (note_path.empty()) return std::nullopt;
    std::FILE* f = std::fopen(note_path.c_str(), "rb");
    if (f == nullptr) return std::nullopt;
    std::string text;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    std::fclose(f);
    std::remove(note_path.c_str());
    const auto newline = text.find('\n');
    if (newline == std::string::npos || newline + 1 >= text.size()) return std::nullopt;
    CrashNote note;
    try {
        note.signal = std::stoi(text.substr(0, newline));
    } catch (const std::exception&) {
        return std::nullopt;
    }
    note.path = text.substr(newline + 1);
    return note;
}

std::string crash_signal_text(int signal) {
    if (signal == 0) return "a sanitizer report";
    const char* name = ::sigabbrev_np(signal);
    return name != nullptr ? fmt::format("SIG{}", name) : fmt::format("signal {}", signal);
}


std::string crash_note_path(const std::string& db_path, bool postgresql, const std::string& owner) {
    const std::string name = "perfwatch-crash-" + sha256_hex(owner).substr(0, 16);
    if (!postgresql) {
        const std::filesystem::path db(db_path);
        return (db.parent_path() / (db.filename().string() + "." + name)).string();
    }
    const char* state = std::getenv("STATE_DIRECTORY");
    if (state == nullptr || *state == '\0') return {};
    const std::string first(state, std::strcspn(state, ":"));
    return (std::filesystem::path(first) / name).string();
}

}  // namespace perfwatch
