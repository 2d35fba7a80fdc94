#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectors/labels.hpp"
#include "core/error.hpp"

namespace perfwatch {

// A directory the daemon watches for reports (one `watch` entry of the configuration).
struct WatchSpec {
    std::string path;  // absolute
    bool recursive = true;
    // Globs (fnmatch): one without '/' matches the file name, one with '/' the path relative to
    // `path`. No include: every file. Excludes also skip directories by name.
    std::vector<std::string> include;
    std::vector<std::string> exclude = default_excludes();
    std::map<std::string, std::string> labels;  // static labels of every report found here
    // Tried before the configuration's path_templates; a relative one starts at `path`.
    std::optional<PathTemplate> path_template;
    int line = 0;  // of the entry in the configuration, for messages
    int col = 0;

    // Hidden files, editor backups and partial downloads: ".*", "*~", "*.tmp", "*.part", "*.swp".
    static std::vector<std::string> default_excludes();
};

// True when `file` under `spec.path` may be a report: not a label sidecar, matched by an include
// glob (when there are any) and by no exclude glob.
bool watch_accepts(const WatchSpec& spec, const std::string& file);

// True when the directory `dir` under `spec.path` is to be entered: recursive, and no exclude
// glob matches its name. Symbolic links to directories are never entered.
bool watch_enters(const WatchSpec& spec, const std::string& dir);

// What an entry of a watched tree is to its watch (never following symbolic links): a directory
// to enter, a report file, something named like a report that is skipped (`why` says what it
// is), or nothing of interest.
struct WatchEntry {
    enum class Kind { ignore, enter, file, skip };
    Kind kind = Kind::ignore;
    std::string why;
};
WatchEntry classify_watch_entry(const WatchSpec& spec, const std::string& path);

// The accepted regular files under `spec.path` (and its subdirectories when recursive), sorted;
// unreadable directories are reported in `errors` and skipped.
std::vector<std::string> scan_watch(const WatchSpec& spec, std::vector<std::string>& errors);

// Watches directories with inotify on a Boost.Asio io_context (no polling): directories created
// or moved in later are watched too, and on a queue overflow every directory is rescanned.
class DirectoryWatcher {
public:
    enum class Event {
        written,   // closed after writing, or moved into place
        modified,  // written to while still open
        found,     // found by a scan (start-up, a new directory, an overflow)
    };
    using FileHandler = std::function<void(std::size_t watch, const std::string& path, Event event)>;
    using ErrorHandler = std::function<void(const std::string& message)>;
    // A path named like a report that is not read (a symbolic link, FIFO, socket, device, or a
    // directory under a watch that is not recursive), with what it is.
    using SkipHandler = std::function<void(const std::string& path, const std::string& why)>;

    DirectoryWatcher(boost::asio::io_context& io, FileHandler on_file, ErrorHandler on_error,
                     SkipHandler on_skip = {});
    ~DirectoryWatcher();
    DirectoryWatcher(const DirectoryWatcher&) = delete;
    DirectoryWatcher& operator=(const DirectoryWatcher&) = delete;

    // Replaces the watched set with `specs` and reports every file already there as found.
    // Fails when inotify is unavailable or a directory cannot be watched.
    Result<void> watch(std::vector<WatchSpec> specs);
    // Stops watching; no handler is called afterwards.
    void stop();
    std::size_t directories() const { return m_dirs.size(); }
    const std::vector<WatchSpec>& specs() const { return m_specs; }

private:
    // Watches `dir` (and, when the spec is recursive, its subdirectories), reporting files found.
    Result<void> add_tree(std::size_t watch, const std::string& dir);
    void read_events();
    void handle(int wd, std::uint32_t mask, const std::string& name);
    void rescan();

    struct Dir {
        std::size_t watch = 0;
        std::string path;
    };

    boost::asio::posix::stream_descriptor m_fd;
    FileHandler m_on_file;
    ErrorHandler m_on_error;
    SkipHandler m_on_skip;
    std::vector<WatchSpec> m_specs;
    std::unordered_map<int, Dir> m_dirs;
    std::array<char, 64 * 1024> m_buffer{};
    bool m_stopped = false;
};

}  // namespace perfwatch
