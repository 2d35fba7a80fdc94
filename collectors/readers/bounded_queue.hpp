#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

namespace perfwatch {

// A bounded queue of items (byte chunks, batches of events) from one thread to another; emptied
// items come back for reuse, so memory stays at the queue's depth of items.
template <typename T>
class BoundedQueue {
public:
    explicit BoundedQueue(std::size_t depth) : m_depth(depth) {}

    // An item to fill: an emptied one when there is one (its capacity kept), else a new one.
    T spare() {
        std::lock_guard lock(m_mutex);
        if (m_free.empty()) return {};
        T item = std::move(m_free.back());
        m_free.pop_back();
        return item;
    }
    // Waits for room; false once closed (the item is dropped).
    bool push(T item) {
        std::unique_lock lock(m_mutex);
        m_changed.wait(lock, [&] { return m_queue.size() < m_depth || m_closed; });
        if (m_closed) return false;
        m_queue.push_back(std::move(item));
        m_changed.notify_all();
        return true;
    }
    // Waits for an item; nullopt once closed and drained.
    std::optional<T> pop() {
        std::unique_lock lock(m_mutex);
        m_changed.wait(lock, [&] { return !m_queue.empty() || m_closed; });
        if (m_queue.empty()) return std::nullopt;
        T item = std::move(m_queue.front());
        m_queue.pop_front();
        m_changed.notify_all();
        return item;
    }
    void recycle(T item) {
        std::lock_guard lock(m_mutex);
        m_free.push_back(std::move(item));
    }
    // No more items: pop() hands out what is queued, then nullopt; push() refuses.
    void close() {
        {
            std::lock_guard lock(m_mutex);
            m_closed = true;
        }
        m_changed.notify_all();
    }

private:
    std::size_t m_depth;
    std::mutex m_mutex;
    std::condition_variable m_changed;
    std::deque<T> m_queue;
    std::vector<T> m_free;
    bool m_closed = false;
};

}  // namespace perfwatch
