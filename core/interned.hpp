#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace perfwatch::detail {

// A value kept once per process (interned, never freed) or, past its table's bound, shared by the
// handles that copy it and freed with the last of them (counted).
template <class T>
struct InternNode {
    template <class... Args>
    explicit InternNode(Args&&... args) : value(std::forward<Args>(args)...) {}
    T value;
    std::atomic<std::size_t> refs{1};  // counted nodes only
};

// A handle one pointer wide to an interned or counted node (0: none). Copies of an interned node
// cost nothing; copies of a counted one count references. Symbol and MetricKey are made of it.
template <class T>
class InternHandle {
public:
    InternHandle() noexcept = default;
    InternHandle(const InternHandle& other) noexcept : m_bits(other.m_bits) {
        if (counted()) node()->refs.fetch_add(1, std::memory_order_relaxed);
    }
    InternHandle(InternHandle&& other) noexcept : m_bits(other.m_bits) { other.m_bits = 0; }
    InternHandle& operator=(const InternHandle& other) noexcept {
        if (this != &other) {
            InternHandle copy(other);
            std::swap(m_bits, copy.m_bits);
        }
        return *this;
    }
    InternHandle& operator=(InternHandle&& other) noexcept {
        if (this != &other) {
            release();
            m_bits = other.m_bits;
            other.m_bits = 0;
        }
        return *this;
    }
    ~InternHandle() { release(); }

    // Whether the value is interned (or none), not a counted copy.
    bool interned() const noexcept { return !counted(); }
    // Equal identities mean equal values; for interned values the converse holds too.
    std::uintptr_t identity() const noexcept { return m_bits; }

protected:
    using Node = InternNode<T>;
    static constexpr std::uintptr_t k_counted = 1;

    // Takes an interned node, or a fresh counted node (`counted`), holding one reference.
    void adopt(Node* node, bool is_counted) noexcept {
        m_bits = reinterpret_cast<std::uintptr_t>(node) | (is_counted ? k_counted : 0);
    }
    // Takes the node `table` interns under `key` (see InternTable::find_or_add), or, when the
    // table is full, a counted node `make()` builds.
    template <class Table, class Key, class Make, class KeyOf>
    void intern(Table& table, const Key& key, std::size_t cost, Make make, KeyOf key_of) {
        if (Node* found = table.find_or_add(key, cost, make, key_of))
            adopt(found, false);
        else
            adopt(make(), true);
    }
    Node* node() const noexcept { return reinterpret_cast<Node*>(m_bits & ~k_counted); }
    bool counted() const noexcept { return (m_bits & k_counted) != 0; }
    // Interned values are equal exactly when their nodes are the same; a counted value is never
    // interned, but two counted copies of one value may exist: those compare by value.
    static bool same(const InternHandle& a, const InternHandle& b) noexcept {
        if (a.m_bits == b.m_bits) return true;
        if (((a.m_bits | b.m_bits) & k_counted) == 0 || a.m_bits == 0 || b.m_bits == 0) return false;
        return a.node()->value == b.node()->value;
    }

    std::uintptr_t m_bits = 0;

private:
    void release() noexcept {
        if (counted() && node()->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete node();
        m_bits = 0;
    }
};

// The interned nodes of one kind, found by `Key` (a view of the value, which the node keeps
// valid): never freed, so their addresses stay valid for the process. Past `max_cost` in all
// (bytes, nodes: the caller's measure) it adds no more. Thread-safe. One table per type T: each
// thread's cache of recent nodes belongs to the type.
template <class T, class Key, class Hash>
class InternTable {
public:
    explicit InternTable(std::size_t max_cost) : m_max_cost(max_cost) {}

    // The node interned under `key`, or one `make()` builds, costing `cost`, with its key
    // `key_of(node->value)`; nullptr when `key` is new and the table is full.
    template <class Make, class KeyOf>
    InternNode<T>* find_or_add(const Key& key, std::size_t cost, Make make, KeyOf key_of) {
        // Each thread remembers recent nodes by hash, so a value seen before is found without
        // the lock.
        thread_local std::array<InternNode<T>*, 512> recent{};
        InternNode<T>*& slot = recent[Hash{}(key) % recent.size()];
        if (slot != nullptr && key_of(slot->value) == key) return slot;
        std::lock_guard lock(m_mutex);
        if (auto it = m_nodes.find(key); it != m_nodes.end()) return slot = it->second;
        if (m_cost + cost > m_max_cost) return nullptr;
        InternNode<T>* node = make();
        m_nodes.emplace(key_of(node->value), node);
        m_cost += cost;
        return slot = node;
    }
    std::size_t cost() {
        std::lock_guard lock(m_mutex);
        return m_cost;
    }

private:
    std::mutex m_mutex;
    std::unordered_map<Key, InternNode<T>*, Hash> m_nodes;
    std::size_t m_cost = 0;
    const std::size_t m_max_cost;
};

}  // namespace perfwatch::detail
