#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>

namespace perfwatch {

// Values waiting for their other half, by ID (a launch for its kernel, by correlation ID), in
// bounded memory: past `limit` entries the oldest are dropped (one whose partner never comes
// would otherwise stay forever).
template <typename Value>
class WaitingMap {
public:
    explicit WaitingMap(std::size_t limit = 1 << 18) : m_limit(limit) {}

    void put(std::int64_t id, Value value) {
        m_waiting[id] = value;
        m_order.push_back(id);
        while (m_waiting.size() > m_limit || m_order.size() > 2 * m_limit) {
            m_waiting.erase(m_order.front());
            m_order.pop_front();
        }
    }

    // The value waiting under `id`, which stops waiting; nullopt when none is.
    std::optional<Value> take(std::int64_t id) {
        auto it = m_waiting.find(id);
        if (it == m_waiting.end()) return std::nullopt;
        const Value value = it->second;
        m_waiting.erase(it);
        return value;
    }

private:
    std::size_t m_limit;
    std::unordered_map<std::int64_t, Value> m_waiting;
    std::deque<std::int64_t> m_order;  // insertion order, for dropping the oldest
};

}  // namespace perfwatch
