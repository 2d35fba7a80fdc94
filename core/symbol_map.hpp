#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/symbol.hpp"

namespace perfwatch {

// Values by text key, in key order, kept in one flat list with interned keys: an entity's dozen
// attributes cost one allocation rather than a tree node each. It offers the part of std::map's
// interface the tree uses, with the same meaning. A key past the last is appended at once (entries
// added in key order, as from a std::map or a query ordered by key, cost O(1) each); others cost
// moving the entries after them: fill a large map from a sorted source.
template <class Value>
class SymbolMap {
public:
    using value_type = std::pair<Symbol, Value>;
    using iterator = std::vector<value_type>::iterator;
    using const_iterator = std::vector<value_type>::const_iterator;

    SymbolMap() = default;

    // The value of `key`, added empty when missing.
    Value& operator[](std::string_view key) {
        if (m_items.empty() || m_items.back().first < key) return m_items.emplace_back(Symbol(key), Value()).second;
        auto it = lower_bound(key);
        if (it == m_items.end() || it->first != key) it = m_items.emplace(it, Symbol(key), Value());
        return it->second;
    }
    // The value of `key`; throws std::out_of_range when missing.
    const Value& at(std::string_view key) const {
        auto it = find(key);
        if (it == end()) throw std::out_of_range("no entry " + std::string(key));
        return it->second;
    }
    Value& at(std::string_view key) { return const_cast<Value&>(std::as_const(*this).at(key)); }

    iterator find(std::string_view key) {
        auto it = lower_bound(key);
        return it != m_items.end() && it->first == key ? it : m_items.end();
    }
    const_iterator find(std::string_view key) const { return const_cast<SymbolMap&>(*this).find(key); }
    bool contains(std::string_view key) const { return find(key) != end(); }

    // Adds `key` with `value` unless present; the entry and whether it was added.
    std::pair<iterator, bool> emplace(std::string_view key, Value value) {
        if (m_items.empty() || m_items.back().first < key) {
            m_items.emplace_back(Symbol(key), std::move(value));
            return {std::prev(m_items.end()), true};
        }
        auto it = lower_bound(key);
        if (it != m_items.end() && it->first == key) return {it, false};
        return {m_items.emplace(it, Symbol(key), std::move(value)), true};
    }
    // Removes `key`; how many entries went (0 or 1).
    std::size_t erase(std::string_view key) {
        auto it = find(key);
        if (it == m_items.end()) return 0;
        m_items.erase(it);
        return 1;
    }
    // Removes the entry at `it`; the entry after it.
    iterator erase(const_iterator it) { return m_items.erase(it); }
    // Removes the entries `pred` holds for; how many went.
    template <class Pred>
    friend std::size_t erase_if(SymbolMap& a, Pred pred) {
        return std::erase_if(a.m_items, pred);
    }

    iterator begin() noexcept { return m_items.begin(); }
    iterator end() noexcept { return m_items.end(); }
    const_iterator begin() const noexcept { return m_items.begin(); }
    const_iterator end() const noexcept { return m_items.end(); }
    std::size_t size() const noexcept { return m_items.size(); }
    bool empty() const noexcept { return m_items.empty(); }
    // Gives back room kept for entries not added.
    void shrink_to_fit() { m_items.shrink_to_fit(); }

    bool operator==(const SymbolMap&) const = default;

private:
    iterator lower_bound(std::string_view key) {
        return std::lower_bound(m_items.begin(), m_items.end(), key,
                                [](const value_type& item, std::string_view k) { return item.first.view() < k; });
    }

    std::vector<value_type> m_items;
};

// An entity's attributes: texts by name.
using Attributes = SymbolMap<std::string>;

}  // namespace perfwatch
