#pragma once

#include <optional>
#include <string>

namespace perfwatch {

// The crash note: which file a worker thread was reading when the daemon crashed, written by a
// crash handler and read at the next start, so that file alone is quarantined (the others read
// then are innocent).

// While it lives, the calling thread is reading `path` (kept by address: `path` must outlive it):
// a crash now writes the note naming it.
class CrashNoteReading {
public:
    explicit CrashNoteReading(const std::string& path);
    ~CrashNoteReading();
    CrashNoteReading(const CrashNoteReading&) = delete;
    CrashNoteReading& operator=(const CrashNoteReading&) = delete;
};

// Writes the crash note to `note_path` when a thread crashes while reading a file (the
// sanitizers' reports included); the handlers there before run after it. Empty: no note.
void install_crash_note(const std::string& note_path);

// What the crash note said: the file and the signal (0: a sanitizer report).
struct CrashNote {
    int signal = 0;
    std::string path;
};

// The note the previous process left at `note_path` (removed once read).
std::optional<CrashNote> take_crash_note(const std::string& note_path);

// A crash note's signal for people: "SIGSEGV", or "a sanitizer report" for 0.
std::string crash_signal_text(int signal);

// Where a daemon keeps its crash note: beside a SQLite database, in systemd's $STATE_DIRECTORY for
// PostgreSQL (empty elsewhere: a death is then judged as unexplained). Named for the daemon
// (`owner`), so daemons of other configurations never read each other's.
std::string crash_note_path(const std::string& db_path, bool postgresql, const std::string& owner);

}  // namespace perfwatch
