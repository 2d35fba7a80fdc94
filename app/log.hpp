#pragma once

#include <fmt/format.h>

#include <optional>
#include <string_view>

namespace perfwatch {

enum class LogLevel { debug, info, notice, warning, error };

std::optional<LogLevel> log_level_from_string(std::string_view text);

// Only messages at or above `level` are written.
void set_log_level(LogLevel level);
bool log_enabled(LogLevel level);

// Writes one line to stderr, whole even when threads log at once. Under systemd (JOURNAL_STREAM
// set) the line starts with the syslog priority ("<4>") so journald records the level; otherwise
// with a UTC time and the level's name. Newlines in the message are replaced: one event, one line.
void log_line(LogLevel level, std::string_view message);

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
    if (log_enabled(level)) log_line(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace perfwatch
