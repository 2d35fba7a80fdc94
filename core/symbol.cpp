#include "core/symbol.hpp"

#include <functional>
#include <ostream>

namespace perfwatch {

namespace {

using Table = detail::InternTable<std::string, std::string_view, std::hash<std::string_view>>;

// The interned texts, costed in bytes.
Table& table() {
    static Table* t = new Table(k_max_interned_bytes);  // never destroyed: Symbols in static objects outlive any order
    return *t;
}

}  // namespace

Symbol::Symbol(std::string_view text) {
    if (text.empty()) return;
    intern(
        table(), text, text.size(), [&] { return new Node(text); }, [](const std::string& t) { return std::string_view(t); });
}

const std::string& Symbol::empty_text() noexcept {
    static const std::string k_empty;
    return k_empty;
}

std::ostream& operator<<(std::ostream& out, const Symbol& s) { return out << s.view(); }

std::size_t Symbol::interned_bytes() { return table().cost(); }

}  // namespace perfwatch
