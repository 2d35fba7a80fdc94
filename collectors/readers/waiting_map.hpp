#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace perfwatch {

// Values waiting for their other half, by ID (a launch for its kernel, by correlation ID), in
// bounded memory: past `limit` entries the oldest are dropped (one whose partner never comes
// would otherwise stay forever). Open addressing in one array (no allocation per entry): a
// trace puts and takes one entry per launch.
template <typename Value>
class WaitingMap {
public:
    explicit WaitingMap(std::size_t limit = 1 << 18) : m_limit(limit) {}

    void put(std::int64_t id, Value value) {
        if (4 * (m_size + 1) > 3 * m_slots.size()) grow();
        Slot& slot = m_slots[find(id)];
        if (!slot.used) ++m_size;
        slot = Slot{id, value, true};
        m_order.push_back(id);
        while (m_size > m_limit || m_order.size() > 2 * m_limit) {
            erase(find(m_order.front()));
            m_order.pop_front();
        }
    }

    // The value waiting under `id`, which stops waiting; nullopt when none is.
    std::optional<Value> take(std::int64_t id) {
        if (m_size == 0) return std::nullopt;
        const std::size_t at = find(id);
        if (!m_slots[at].used) return std::nullopt;
        const Value value = m_slots[at].value;
        erase(at);
        return value;
    }

private:
    struct Slot {
        std::int64_t id = 0;
        Value value{};
        bool used = false;
    };

    std::size_t home(std::int64_t id) const {
        return static_cast<std::size_t>((static_cast<std::uint64_t>(id) * 0x9E3779B97F4A7C15ULL) >> 32) & (m_slots.size() - 1);
    }
    // The slot holding `id`, or the empty slot where it would go.
    std::size_t find(std::int64_t id) const {
        std::size_t at = home(id);
        while (m_slots[at].used && m_slots[at].id != id) at = (at + 1) & (m_slots.size() - 1);
        return at;
    }
    // Empties slot `at` (nothing when it is empty), moving back the entries probed past it.
    void erase(std::size_t at) {
        if (!m_slots[at].used) return;
        const std::size_t mask = m_slots.size() - 1;
        std::size_t hole = at;
        for (std::size_t next = (hole + 1) & mask; m_slots[next].used; next = (next + 1) & mask) {
            const std::size_t want = home(m_slots[next].id);
            // Moves back unless its home lies cyclically in (hole, next].
            if (((next - want) & mask) >= ((next - hole) & mask)) {
                m_slots[hole] = m_slots[next];
                hole = next;
            }
        }
        m_slots[hole] = Slot{};
        --m_size;
    }
    void grow() {
        std::vector<Slot> old(std::max<std::size_t>(64, 2 * m_slots.size()));
        old.swap(m_slots);
        for (const Slot& slot : old)
            if (slot.used) m_slots[find(slot.id)] = slot;
    }

    std::size_t m_limit;
    std::vector<Slot> m_slots;
    std::size_t m_size = 0;
    std::deque<std::int64_t> m_order;  // insertion order, for dropping the oldest
};

}  // namespace perfwatch
