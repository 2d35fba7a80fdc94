#include "core/symbol.hpp"

#include <array>
#include <atomic>
#include <functional>
#include <mutex>
#include <ostream>
#include <unordered_map>

namespace perfwatch {

namespace {

struct Node {
    explicit Node(std::string_view t) : text(t) {}
    std::string text;
    std::atomic<std::size_t> refs{1};  // counted nodes only
};

// The interned texts: never freed, so their addresses and views stay valid for the process.
class Table {
public:
    // The interned node of `text`, or nullptr when the table is full and `text` is not in it.
    Node* find_or_add(std::string_view text) {
        std::lock_guard lock(m_mutex);
        if (auto it = m_nodes.find(text); it != m_nodes.end()) return it->second;
        if (m_bytes + text.size() > k_max_interned_bytes) return nullptr;
        auto* node = new Node(text);
        m_nodes.emplace(std::string_view(node->text), node);
        m_bytes += text.size();
        return node;
    }
    std::size_t bytes() {
        std::lock_guard lock(m_mutex);
        return m_bytes;
    }

private:
    std::mutex m_mutex;
    std::unordered_map<std::string_view, Node*> m_nodes;
    std::size_t m_bytes = 0;
};

Table& table() {
    static Table* t = new Table;  // never destroyed: Symbols in static objects outlive any order
    return *t;
}

Node* node_of(std::uintptr_t bits) { return reinterpret_cast<Node*>(bits & ~std::uintptr_t{1}); }

}  // namespace

Symbol::Symbol(std::string_view text) {
    if (text.empty()) return;
    // Each thread remembers recent interned texts by hash, so a text seen before is found
    // without the table's lock.
    thread_local std::array<Node*, 512> recent{};
    const std::size_t hash = std::hash<std::string_view>{}(text);
    Node*& slot = recent[hash % recent.size()];
    if (slot != nullptr && slot->text == text) {
        m_bits = reinterpret_cast<std::uintptr_t>(slot);
        return;
    }
    if (Node* node = table().find_or_add(text)) {
        slot = node;
        m_bits = reinterpret_cast<std::uintptr_t>(node);
        return;
    }
    m_bits = reinterpret_cast<std::uintptr_t>(new Node(text)) | k_counted;
}

Symbol::Symbol(const Symbol& other) noexcept : m_bits(other.m_bits) {
    if ((m_bits & k_counted) != 0) node_of(m_bits)->refs.fetch_add(1, std::memory_order_relaxed);
}

Symbol& Symbol::operator=(const Symbol& other) noexcept {
    if (this != &other) {
        Symbol copy(other);
        std::swap(m_bits, copy.m_bits);
    }
    return *this;
}

Symbol& Symbol::operator=(Symbol&& other) noexcept {
    if (this != &other) {
        release();
        m_bits = other.m_bits;
        other.m_bits = 0;
    }
    return *this;
}

void Symbol::release() noexcept {
    if ((m_bits & k_counted) != 0) {
        Node* node = node_of(m_bits);
        if (node->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete node;
    }
    m_bits = 0;
}

const std::string& Symbol::str() const noexcept {
    static const std::string k_empty;
    return m_bits == 0 ? k_empty : node_of(m_bits)->text;
}

std::ostream& operator<<(std::ostream& out, const Symbol& s) { return out << s.view(); }

std::size_t Symbol::interned_bytes() { return table().bytes(); }

}  // namespace perfwatch
