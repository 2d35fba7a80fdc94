#include "app/quiet_queue.hpp"

#include <sys/stat.h>

#include <algorithm>

namespace perfwatch {

std::optional<FileStat> stat_file(const std::string& path) {
    struct stat st {};
    // lstat: a symbolic link in a watched tree is never followed (to /etc/shadow, say).
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    return FileStat{static_cast<std::int64_t>(st.st_size),
                    static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

void QuietQueue::wait(const std::string& path, std::size_t watch, Clock::time_point ready_at, Clock::time_point since,
                      FileStat stat) {
    m_pending[path] = Pending{watch, ready_at, since, stat};
}

bool QuietQueue::written(const std::string& path, Clock::time_point now, Clock::duration quiet) {
    auto it = m_pending.find(path);
    if (it == m_pending.end()) return false;
    it->second.since = now;
    it->second.deadline = now + quiet;
    return true;
}

std::vector<QuietQueue::Ready> QuietQueue::take_ready(Clock::time_point now, Clock::duration quiet,
                                                      const std::unordered_set<std::string>& busy) {
    std::vector<Ready> out;
    for (auto it = m_pending.begin(); it != m_pending.end();) {
        Pending& p = it->second;
        if (p.deadline > now) {
            ++it;
            continue;
        }
        const auto stat = stat_file(it->first);
        if (!stat) {
            it = m_pending.erase(it);
            continue;
        }
        if (*stat != p.stat || busy.contains(it->first)) {
            p.stat = *stat;
            p.deadline = now + quiet;
            ++it;
            continue;
        }
        out.push_back(Ready{it->first, p.watch, p.since});
        it = m_pending.erase(it);
    }
    return out;
}

std::optional<QuietQueue::Clock::time_point> QuietQueue::next_deadline() const {
    if (m_pending.empty()) return std::nullopt;
    auto next = Clock::time_point::max();
    for (const auto& [path, p] : m_pending) next = std::min(next, p.deadline);
    return next;
}

}  // namespace perfwatch
