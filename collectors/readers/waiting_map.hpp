#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <vector>

namespace perfwatch {

// Values waiting for their other half, by ID (a launch for its kernel, by correlation ID), in
// bounded memory: past `limit` entries the oldest are dropped (one whose partner never comes
// would otherwise stay forever). Open addressing in one array (no allocation per entry): a
// trace puts and takes one entry per launch. IDs that follow each other (correlation IDs count
// up) land in neighbouring slots; an entry that would land past k_max_probe slots from its own
// (IDs crafted to collide) is dropped as if it were the oldest, so no input makes it slow. A
// slot is its entry's ID and value only: the ID INT64_MIN marks an empty one and is never kept.
template <typename Value>
class WaitingMap {
public:
    explicit WaitingMap(std::size_t limit = 1 << 18) : m_limit(limit) {}

    void put(std::int64_t id, Value value) {
        if (id == k_empty) return;  // marks an empty slot: never kept
        if (4 * (m_size + 1) > 3 * m_slots.size()) grow();
        const std::size_t at = find(id);
        if (at == k_none) return;
        Slot& slot = m_slots[at];
        if (!slot.used()) ++m_size;
        slot = Slot{id, value};
        m_order.push_back(id);
        while (m_size > m_limit || m_order.size() > 2 * m_limit) {
            erase(find(m_order.front()));
            m_order.pop_front();
        }
        // Full, the next put drops the oldest: its slot, long untouched, is fetched while the
        // caller goes on.
        if (!m_order.empty() && (m_size == m_limit || m_order.size() == 2 * m_limit))
            __builtin_prefetch(&m_slots[home(m_order.front())]);
    }

    // Starts fetching the slot where `id` would be, so a put or take of it soon after finds it in
    // the cache (the table outgrows it; neighbouring IDs share lines).
    void prefetch(std::int64_t id) const {
        if (!m_slots.empty()) __builtin_prefetch(&m_slots[home(id)]);
    }

    // The value waiting under `id`, which stops waiting; nullopt when none is.
    std::optional<Value> take(std::int64_t id) {
        if (m_size == 0 || id == k_empty) return std::nullopt;
        const std::size_t at = find(id);
        if (at == k_none || !m_slots[at].used()) return std::nullopt;
        const Value value = m_slots[at].value;
        erase(at);
        return value;
    }

private:
    // The ID of an empty slot.
    static constexpr std::int64_t k_empty = std::numeric_limits<std::int64_t>::min();
    struct Slot {
        std::int64_t id = k_empty;
        Value value{};
        bool used() const { return id != k_empty; }
    };

    static constexpr std::size_t k_max_probe = 128;
    static constexpr std::size_t k_none = static_cast<std::size_t>(-1);

    std::size_t home(std::int64_t id) const {
        const auto u = static_cast<std::uint64_t>(id);
        return static_cast<std::size_t>(u ^ (u >> 17) ^ (u >> 34) ^ (u >> 51)) & (m_slots.size() - 1);
    }
    // The slot holding `id`, or the empty slot where it would go; k_none past k_max_probe slots.
    std::size_t find(std::int64_t id) const {
        std::size_t at = home(id);
        for (std::size_t probe = 0; probe < k_max_probe; ++probe, at = (at + 1) & (m_slots.size() - 1))
            if (!m_slots[at].used() || m_slots[at].id == id) return at;
        return k_none;
    }
    // Empties slot `at` (nothing when it is k_none or empty), moving back the entries probed past
    // it. No entry lies k_max_probe or more slots past its home, so none that far past the hole
    // can move into it: the walk stops there, not at the end of the run of used slots (which
    // consecutive IDs make as long as the table is full).
    void erase(std::size_t at) {
        if (at == k_none || !m_slots[at].used()) return;
        const std::size_t mask = m_slots.size() - 1;
        std::size_t hole = at;
        for (std::size_t next = (hole + 1) & mask; m_slots[next].used() && ((next - hole) & mask) < k_max_probe;
             next = (next + 1) & mask) {
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
        for (const Slot& slot : old) {
            if (!slot.used()) continue;
            if (const std::size_t at = find(slot.id); at != k_none) m_slots[at] = slot;
            else --m_size;  // crafted to collide: dropped
        }
    }

    std::size_t m_limit;
    std::vector<Slot> m_slots;
    std::size_t m_size = 0;
    std::deque<std::int64_t> m_order;  // insertion order, for dropping the oldest
};

}  // namespace perfwatch
