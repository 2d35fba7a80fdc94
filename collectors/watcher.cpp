#include "collectors/watcher.hpp"

#include <fmt/format.h>
#include <fnmatch.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace perfwatch {

namespace fs = std::filesystem;

namespace {

constexpr std::uint32_t k_dir_mask =
    IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_MODIFY | IN_DELETE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK;

bool glob_matches(const std::string& pattern, const std::string& name, const std::string& relative) {
    const bool by_path = pattern.find('/') != std::string::npos;
    return fnmatch(pattern.c_str(), by_path ? relative.c_str() : name.c_str(), 0) == 0;
}

bool any_matches(const std::vector<std::string>& patterns, const std::string& name, const std::string& relative) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [&](const std::string& p) { return glob_matches(p, name, relative); });
}

std::string relative_to(const std::string& root, const std::string& path) {
    return fs::path(path).lexically_relative(root).generic_string();
}

}  // namespace

WatchEntry classify_watch_entry(const WatchSpec& spec, const std::string& path) {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(path, ec);
    if (ec) return {WatchEntry::Kind::ignore, {}};
    switch (st.type()) {
        case fs::file_type::directory:
            if (watch_enters(spec, path)) return {WatchEntry::Kind::enter, {}};
            if (!spec.recursive && watch_accepts(spec, path))
                return {WatchEntry::Kind::skip, "a directory (this watch is not recursive)"};
            return {WatchEntry::Kind::ignore, {}};
        case fs::file_type::regular:
            return {watch_accepts(spec, path) ? WatchEntry::Kind::file : WatchEntry::Kind::ignore, {}};
        default: break;
    }
    if (!watch_accepts(spec, path)) return {WatchEntry::Kind::ignore, {}};
    switch (st.type()) {
        case fs::file_type::symlink:
            return {WatchEntry::Kind::skip, "a symbolic link (not followed: reports must be regular files in the tree)"};
        case fs::file_type::fifo: return {WatchEntry::Kind::skip, "a FIFO, not a regular file"};
        case fs::file_type::socket: return {WatchEntry::Kind::skip, "a socket, not a regular file"};
        case fs::file_type::block:
        case fs::file_type::character: return {WatchEntry::Kind::skip, "a device, not a regular file"};
        default: return {WatchEntry::Kind::skip, "not a regular file"};
    }
}

std::vector<std::string> WatchSpec::default_excludes() { return {".*", "*~", "*.tmp", "*.part", "*.swp"}; }

bool watch_accepts(const WatchSpec& spec, const std::string& file) {
    if (is_label_sidecar(file)) return false;
    const std::string name = fs::path(file).filename().string();
    const std::string relative = relative_to(spec.path, file);
    if (any_matches(spec.exclude, name, relative)) return false;
    return spec.include.empty() || any_matches(spec.include, name, relative);
}

bool watch_enters(const WatchSpec& spec, const std::string& dir) {
    if (!spec.recursive) return false;
    std::error_code ec;
    if (fs::is_symlink(dir, ec)) return false;
    return !any_matches(spec.exclude, fs::path(dir).filename().string(), relative_to(spec.path, dir));
}

std::vector<std::string> scan_watch(const WatchSpec& spec, std::vector<std::string>& errors) {
    std::vector<std::string> files;
    std::vector<std::string> dirs{spec.path};
    while (!dirs.empty()) {
        const std::string dir = std::move(dirs.back());
        dirs.pop_back();
        std::error_code ec;
        fs::directory_iterator it(dir, ec), end;
        if (ec) {
            errors.push_back(fmt::format("{}: cannot read the directory: {}", dir, ec.message()));
            continue;
        }
        for (; it != end; it.increment(ec)) {
            const std::string path = it->path().string();
            const WatchEntry entry = classify_watch_entry(spec, path);
            if (entry.kind == WatchEntry::Kind::enter) dirs.push_back(path);
            if (entry.kind == WatchEntry::Kind::file) files.push_back(path);
        }
        if (ec) errors.push_back(fmt::format("{}: cannot read the directory: {}", dir, ec.message()));
    }
    std::sort(files.begin(), files.end());
    return files;
}

DirectoryWatcher::DirectoryWatcher(boost::asio::io_context& io, FileHandler on_file, ErrorHandler on_error,
                                   SkipHandler on_skip)
    : m_fd(io), m_on_file(std::move(on_file)), m_on_error(std::move(on_error)), m_on_skip(std::move(on_skip)) {}

DirectoryWatcher::~DirectoryWatcher() { stop(); }

Result<void> DirectoryWatcher::watch(std::vector<WatchSpec> specs) {
    if (!m_fd.is_open()) {
        const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fd < 0) return fail("inotify", 0, fmt::format("cannot start watching: {}", std::strerror(errno)));
        m_fd.assign(fd);
        m_stopped = false;
        read_events();
    }
    for (const auto& [wd, dir] : m_dirs) inotify_rm_watch(m_fd.native_handle(), wd);
    m_dirs.clear();
    m_specs = std::move(specs);
    for (std::size_t i = 0; i < m_specs.size(); ++i)
        if (auto added = add_tree(i, m_specs[i].path); !added) return added;
    return {};
}

void DirectoryWatcher::stop() {
    m_stopped = true;
    m_dirs.clear();
    if (m_fd.is_open()) {
        boost::system::error_code ignored;
        m_fd.cancel(ignored);
        m_fd.close(ignored);
    }
}

Result<void> DirectoryWatcher::add_tree(std::size_t watch, const std::string& root) {
    const WatchSpec& spec = m_specs[watch];
    std::vector<std::string> dirs{root};
    while (!dirs.empty()) {
        const std::string dir = std::move(dirs.back());
        dirs.pop_back();
        const int wd = inotify_add_watch(m_fd.native_handle(), dir.c_str(), k_dir_mask);
        if (wd < 0) {
            std::string why = std::strerror(errno);
            if (errno == ENOSPC) why += " (raise fs.inotify.max_user_watches)";
            if (dir == spec.path) return fail(dir, 0, fmt::format("cannot watch the directory: {}", why));
            m_on_error(fmt::format("{}: cannot watch the directory: {}", dir, why));
            continue;
        }
        m_dirs[wd] = Dir{watch, dir};
        std::error_code ec;
        fs::directory_iterator it(dir, ec), end;
        if (ec) m_on_error(fmt::format("{}: cannot read the directory: {}", dir, ec.message()));
        for (; !ec && it != end; it.increment(ec)) {
            const std::string path = it->path().string();
            const WatchEntry entry = classify_watch_entry(spec, path);
            if (entry.kind == WatchEntry::Kind::enter) dirs.push_back(path);
            if (entry.kind == WatchEntry::Kind::file) m_on_file(watch, path, Event::found);
            if (entry.kind == WatchEntry::Kind::skip && m_on_skip) m_on_skip(path, entry.why);
        }
    }
    return {};
}

void DirectoryWatcher::read_events() {
    m_fd.async_read_some(boost::asio::buffer(m_buffer), [this](const boost::system::error_code& ec, std::size_t n) {
        if (m_stopped) return;
        if (ec) {
            if (ec != boost::asio::error::operation_aborted)
                m_on_error(fmt::format("inotify: reading events failed: {}", ec.message()));
            return;
        }
        std::size_t at = 0;
        while (at + sizeof(inotify_event) <= n) {
            inotify_event ev;
            std::memcpy(&ev, m_buffer.data() + at, sizeof ev);
            const char* name_at = m_buffer.data() + at + sizeof(inotify_event);
            const std::string name = ev.len > 0 ? std::string(name_at, strnlen(name_at, ev.len)) : std::string();
            at += sizeof(inotify_event) + ev.len;
            handle(ev.wd, ev.mask, name);
            if (m_stopped) return;
        }
        read_events();
    });
}

void DirectoryWatcher::handle(int wd, std::uint32_t mask, const std::string& name) {
    if (mask & IN_Q_OVERFLOW) {
        m_on_error("inotify: event queue overflowed; rescanning every watched directory");
        rescan();
        return;
    }
    const auto it = m_dirs.find(wd);
    if (it == m_dirs.end()) return;
    if (mask & IN_IGNORED) {
        m_dirs.erase(it);
        return;
    }
    const Dir dir = it->second;
    if (mask & IN_DELETE_SELF) {
        if (dir.path == m_specs[dir.watch].path)
            m_on_error(fmt::format("{}: the watched directory was removed; reports there are no longer seen", dir.path));
        return;
    }
    if (name.empty()) return;
    const std::string path = dir.path + "/" + name;
    const WatchSpec& spec = m_specs[dir.watch];
    if (mask & IN_ISDIR) {
        if ((mask & (IN_CREATE | IN_MOVED_TO)) && watch_enters(spec, path)) {
            if (auto added = add_tree(dir.watch, path); !added) m_on_error(added.error().to_string());
        } else if ((mask & (IN_CREATE | IN_MOVED_TO)) && m_on_skip) {
            const WatchEntry entry = classify_watch_entry(spec, path);
            if (entry.kind == WatchEntry::Kind::skip) m_on_skip(path, entry.why);
        }
        return;
    }
    if (!watch_accepts(spec, path)) return;
    if (mask & (IN_CREATE | IN_MOVED_TO)) {
        // A symbolic link, FIFO, socket or device named like a report: said once, never read.
        const WatchEntry entry = classify_watch_entry(spec, path);
        if (entry.kind == WatchEntry::Kind::skip) {
            if (m_on_skip) m_on_skip(path, entry.why);
            return;
        }
    }
    if (mask & (IN_CLOSE_WRITE | IN_MOVED_TO))
        m_on_file(dir.watch, path, Event::written);
    else if (mask & (IN_MODIFY | IN_CREATE))
        m_on_file(dir.watch, path, Event::modified);
}

void DirectoryWatcher::rescan() {
    for (std::size_t i = 0; i < m_specs.size(); ++i)
        if (auto added = add_tree(i, m_specs[i].path); !added) m_on_error(added.error().to_string());
}

}  // namespace perfwatch
