#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace perfwatch {

// A regular file's size and modification time; nullopt for a missing file, a directory or a
// symbolic link (never followed out of a watched tree).
struct FileStat {
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const FileStat&) const = default;
};
std::optional<FileStat> stat_file(const std::string& path);

// Report files waiting for their quiet period: a file is ready once it stayed unchanged (size and
// modification time) for the quiet period since it was last seen written; one that changed, or
// is being read, waits again; one that vanished is forgotten.
class QuietQueue {
public:
    using Clock = std::chrono::steady_clock;

    struct Ready {
        std::string path;
        std::size_t watch = 0;
        Clock::time_point since;  // when its last write was seen
    };

    // `path` (of watched directory `watch`) waits until `ready_at`, as it is now (`stat`).
    void wait(const std::string& path, std::size_t watch, Clock::time_point ready_at, Clock::time_point since,
              FileStat stat);
    // A write to a waiting file: it waits `quiet` from `now` again. False when it is not waiting.
    bool written(const std::string& path, Clock::time_point now, Clock::duration quiet);
    bool contains(const std::string& path) const { return m_pending.contains(path); }

    // The files whose wait is over and that did not change meanwhile nor are in `busy`.
    std::vector<Ready> take_ready(Clock::time_point now, Clock::duration quiet,
                                  const std::unordered_set<std::string>& busy);
    // When the next wait ends; nullopt when nothing waits.
    std::optional<Clock::time_point> next_deadline() const;
    std::size_t size() const { return m_pending.size(); }
    void clear() { m_pending.clear(); }

private:
    struct Pending {
        std::size_t watch = 0;
        Clock::time_point deadline;
        Clock::time_point since;
        FileStat stat;
    };
    std::unordered_map<std::string, Pending> m_pending;
};

}  // namespace perfwatch
