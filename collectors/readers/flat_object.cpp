#include "collectors/readers/flat_object.hpp"

#include "collectors/readers/units.hpp"

namespace perfwatch {

namespace {

constexpr std::size_t k_refused = std::string_view::npos;

bool json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool digit(char c) { return c >= '0' && c <= '9'; }

std::size_t skip_space(std::string_view t, std::size_t i) {
    while (i < t.size() && json_space(t[i])) ++i;
    return i;
}

// After the string opening at t[i]: past its closing quote; refused with an escape or a control
// character (which simdjson refuses).
std::size_t string_end(std::string_view t, std::size_t i) {
    for (++i; i < t.size(); ++i) {
        const auto c = static_cast<unsigned char>(t[i]);
        if (c == '"') return i + 1;
        if (c == '\\' || c < 0x20) return k_refused;
    }
    return k_refused;
}

// After the plain number at t[i]: digits without a leading zero, at most 18 of them without a
// fraction, else a fraction of at least one digit; no sign, no exponent.
std::size_t number_end(std::string_view t, std::size_t i) {
    const std::size_t from = i;
    while (i < t.size() && digit(t[i])) ++i;
    const std::size_t whole = i - from;
    if (whole == 0 || (whole > 1 && t[from] == '0')) return k_refused;
    if (i < t.size() && t[i] == '.') {
        const std::size_t fraction = ++i;
        while (i < t.size() && digit(t[i])) ++i;
        if (i == fraction) return k_refused;
    } else if (whole > 18) {
        return k_refused;
    }
    if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) return k_refused;
    return i;
}

// After the array of plain numbers opening at t[i].
std::size_t array_end(std::string_view t, std::size_t i) {
    i = skip_space(t, i + 1);
    if (i < t.size() && t[i] == ']') return i + 1;
    while (true) {
        i = number_end(t, i);
        if (i == k_refused) return k_refused;
        i = skip_space(t, i);
        if (i >= t.size()) return k_refused;
        if (t[i] == ']') return i + 1;
        if (t[i] != ',') return k_refused;
        i = skip_space(t, i + 1);
    }
}

std::size_t value_end(std::string_view t, std::size_t i) {
    if (i >= t.size()) return k_refused;
    const auto literal = [&](std::string_view word) {
        return t.substr(i, word.size()) == word ? i + word.size() : k_refused;
    };
    switch (t[i]) {
    case '"': return string_end(t, i);
    case '[': return array_end(t, i);
    case 't': return literal("true");
    case 'f': return literal("false");
    case 'n': return literal("null");
    default: return number_end(t, i);
    }
}

}  // namespace

bool FlatObject::read(std::string_view json) {
    m_members.clear();
    const auto refuse = [this] {
        m_members.clear();
        return false;
    };
    std::size_t i = skip_space(json, 0);
    if (i >= json.size() || json[i] != '{') return refuse();
    i = skip_space(json, i + 1);
    if (i < json.size() && json[i] == '}') return skip_space(json, i + 1) == json.size() || refuse();
    while (true) {
        if (i >= json.size() || json[i] != '"') return refuse();
        const std::size_t key_end = string_end(json, i);
        if (key_end == k_refused) return refuse();
        const std::string_view key = json.substr(i + 1, key_end - i - 2);
        i = skip_space(json, key_end);
        if (i >= json.size() || json[i] != ':') return refuse();
        const std::size_t value_at = skip_space(json, i + 1);
        const std::size_t end = value_end(json, value_at);
        if (end == k_refused) return refuse();
        m_members.push_back({key, json.substr(value_at, end - value_at)});
        i = skip_space(json, end);
        if (i >= json.size()) return refuse();
        if (json[i] == '}') return skip_space(json, i + 1) == json.size() || refuse();
        if (json[i] != ',') return refuse();
        i = skip_space(json, i + 1);
    }
}

const FlatObject::Member* FlatObject::find(std::string_view key) const {
    for (const Member& m : m_members)
        if (m.key == key) return &m;
    return nullptr;
}

bool FlatObject::number(std::string_view key, double& out) const {
    const Member* m = find(key);
    if (m == nullptr) return false;
    if (m->value.front() == '"') {
        const auto v = parse_report_number(m->value.substr(1, m->value.size() - 2));
        if (v) out = *v;
        return v.has_value();
    }
    return digit(m->value.front()) && parse_decimal(m->value, out);
}

bool FlatObject::string(std::string_view key, std::string_view& out) const {
    const Member* m = find(key);
    if (m == nullptr || m->value.front() != '"') return false;
    out = m->value.substr(1, m->value.size() - 2);
    return true;
}

double FlatObject::product(std::string_view key) const {
    const Member* m = find(key);
    if (m == nullptr || m->value.front() != '[') return -1;
    double p = 1;
    std::size_t i = skip_space(m->value, 1);
    while (i < m->value.size() && digit(m->value[i])) {
        const std::size_t end = number_end(m->value, i);
        double v = 0;
        if (!parse_decimal(m->value.substr(i, end - i), v)) return -1;
        p *= v;
        i = skip_space(m->value, end);
        if (i < m->value.size() && m->value[i] == ',') i = skip_space(m->value, i + 1);
    }
    return p;
}

}  // namespace perfwatch
