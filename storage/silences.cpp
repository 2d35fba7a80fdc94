#include "storage/silences.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>

#include "storage/sql.hpp"

namespace perfwatch {

using sql::guarded;
using sql::Statement;

namespace {

// Matchers are stored as lines of KEY=VALUE (keys hold no '=' or newline).
std::string encode_matchers(const std::map<std::string, std::string>& matchers) {
    std::string out;
    for (const auto& [k, v] : matchers) out += k + "=" + v + "\n";
    return out;
}

std::map<std::string, std::string> decode_matchers(const std::string& text) {
    std::map<std::string, std::string> out;
    std::size_t at = 0;
    while (at < text.size()) {
        const auto nl = text.find('\n', at);
        const std::string line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
        if (const auto eq = line.find('='); eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
        if (nl == std::string::npos) break;
        at = nl + 1;
    }
    return out;
}

}  // namespace

Result<std::int64_t> Silences::add(const Silence& silence) {
    return guarded(m_name, [&]() -> Result<std::int64_t> {
        Statement st(*m_db, "INSERT INTO silences(matchers, until_ms, comment, created_ms) VALUES(?,?,?,?) RETURNING id");
        st.bind(1, encode_matchers(silence.matchers));
        st.bind(2, silence.until_ms);
        st.bind(3, silence.comment);
        st.bind(4, silence.created_ms);
        return st.insert_returning_id();
    });
}

Result<std::vector<Silence>> Silences::list(std::optional<std::int64_t> active_at) const {
    return guarded(m_name, [&]() -> Result<std::vector<Silence>> {
        Statement st(*m_db, active_at ? "SELECT id, matchers, until_ms, comment, created_ms FROM silences "
                                                "WHERE until_ms > ? ORDER BY id"
                                              : "SELECT id, matchers, until_ms, comment, created_ms FROM silences "
                                                "ORDER BY id");
        if (active_at) st.bind(1, *active_at);
        std::vector<Silence> out;
        while (st.step())
            out.push_back(Silence{st.column(0).as_int64(), decode_matchers(st.column(1).as_string()),
                                  st.column(2).as_int64(), st.column(3).as_string(), st.column(4).as_int64()});
        return out;
    });
}

Result<bool> Silences::expire(std::int64_t id, std::int64_t now_ms) {
    return guarded(m_name, [&]() -> Result<bool> {
        Statement st(*m_db, "UPDATE silences SET until_ms = CASE WHEN until_ms < ? THEN until_ms ELSE ? END WHERE id = ?");
        st.bind(1, now_ms);
        st.bind(2, now_ms);
        st.bind(3, id);
        return st.exec() > 0;
    });
}

}  // namespace perfwatch
