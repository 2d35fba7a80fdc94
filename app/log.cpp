#include "app/log.hpp"

#include <fmt/chrono.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "core/text.hpp"

namespace perfwatch {

namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::info)};
std::mutex g_write;

constexpr std::string_view k_names[] = {"debug", "info", "notice", "warning", "error"};
constexpr int k_syslog_priority[] = {7, 6, 5, 4, 3};

bool under_journald() {
    static const bool journald = std::getenv("JOURNAL_STREAM") != nullptr;
    return journald;
}

}  // namespace

std::optional<LogLevel> log_level_from_string(std::string_view text) {
    for (std::size_t i = 0; i < std::size(k_names); ++i)
        if (k_names[i] == text) return static_cast<LogLevel>(i);
    return std::nullopt;
}

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }

bool log_enabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(); }

void log_line(LogLevel level, std::string_view message) {
    if (!log_enabled(level)) return;
    // One event, one line: line breaks become spaces; other control characters (terminal escapes,
    // NUL) and bytes that are not UTF-8 become U+FFFD.
    std::string text(message);
    for (char& c : text)
        if (c == '\n' || c == '\r') c = ' ';
    text = to_valid_utf8(text, true);
    const auto index = static_cast<std::size_t>(level);
    std::string line;
    if (under_journald())
        line = fmt::format("<{}>{}\n", k_syslog_priority[index], text);
    else
        line = fmt::format("{:%Y-%m-%dT%H:%M:%S}Z {}: {}\n",
                           std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now()),
                           k_names[index], text);
    const std::lock_guard lock(g_write);
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
}

}  // namespace perfwatch
