#include "storage/file_marks.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <array>
#include <chrono>

#include "storage/sql.hpp"

namespace perfwatch {

using sql::guarded;
using sql::now_utc;
using sql::Statement;

namespace {

constexpr std::array<std::pair<ReadState, std::string_view>, 5> k_states{{
    {ReadState::reading, "reading"},
    {ReadState::read, "read"},
    {ReadState::failed, "failed"},
    {ReadState::quarantined, "quarantined"},
    {ReadState::retry, "retry"},
}};

constexpr const char* k_columns = "path, size, mtime_ns, sha256, run_id, error, state, reader, deaths, "
                                  "quarantined_at, seen_at";

FileMark mark_from(Statement& st) {
    FileMark m;
    m.path = st.column(0).as_string();
    m.size = st.column(1).as_int64();
    m.mtime_ns = st.column(2).as_int64();
    m.sha256 = st.column(3).as_string();
    if (!st.column(4).is_null()) m.run_id = st.column(4).as_int64();
    m.error = st.column(5).as_string();
    // A state this build does not know (a newer one wrote it) is not read again automatically.
    m.state = read_state_from_string(st.column(6).as_string()).value_or(ReadState::quarantined);
    m.reader = st.column(7).as_string();
    m.deaths = static_cast<int>(st.column(8).as_int64());
    if (!st.column(9).is_null()) m.quarantined_at = st.column(9).as_string();
    m.seen_at = st.column(10).as_string();
    return m;
}

void save_mark(sql::Connection& db, const FileMark& mark) {
    Statement st(db, "INSERT INTO watched_files(path, size, mtime_ns, sha256, run_id, error, state, reader, deaths, "
                     "quarantined_at, seen_at) VALUES(?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(path) DO UPDATE SET "
                     "size = excluded.size, mtime_ns = excluded.mtime_ns, sha256 = excluded.sha256, "
                     "run_id = excluded.run_id, error = excluded.error, state = excluded.state, "
                     "reader = excluded.reader, deaths = excluded.deaths, quarantined_at = excluded.quarantined_at, "
                     "seen_at = excluded.seen_at");
    st.bind(1, mark.path);
    st.bind(2, mark.size);
    st.bind(3, mark.mtime_ns);
    st.bind(4, mark.sha256);
    st.bind(5, mark.run_id);
    st.bind(6, mark.error);
    st.bind(7, std::string(to_string(mark.state)));
    st.bind(8, mark.reader);
    st.bind(9, static_cast<std::int64_t>(mark.deaths));
    if (mark.quarantined_at.empty())
        st.bind(10);
    else
        st.bind(10, mark.quarantined_at);
    st.bind(11, now_utc());
    st.exec();
}

}  // namespace

std::string_view to_string(ReadState state) {
    for (const auto& [s, name] : k_states)
        if (s == state) return name;
    return "read";
}

std::optional<ReadState> read_state_from_string(std::string_view text) {
    for (const auto& [s, name] : k_states)
        if (name == text) return s;
    return std::nullopt;
}

Result<std::optional<FileMark>> FileMarks::get(const std::string& path) const {
    return guarded(m_name, [&]() -> Result<std::optional<FileMark>> {
        Statement st(*m_db, fmt::format("SELECT {} FROM watched_files WHERE path = ?", k_columns));
        st.bind(1, path);
        if (!st.step()) return std::optional<FileMark>{};
        return std::optional<FileMark>{mark_from(st)};
    });
}

Result<void> FileMarks::save(const FileMark& mark) {
    return guarded(m_name, [&]() -> Result<void> {
        save_mark(*m_db, mark);
        return {};
    });
}

Result<std::vector<FileMark>> FileMarks::list(std::optional<ReadState> state) const {
    return guarded(m_name, [&]() -> Result<std::vector<FileMark>> {
        Statement st(*m_db, fmt::format("SELECT {} FROM watched_files{} ORDER BY path", k_columns,
                                        state ? " WHERE state = ?" : ""));
        if (state) st.bind(1, std::string(to_string(*state)));
        std::vector<FileMark> out;
        while (st.step()) out.push_back(mark_from(st));
        return out;
    });
}

Result<std::vector<FileMark>> FileMarks::reading_by(const std::string& reader) const {
    return guarded(m_name, [&]() -> Result<std::vector<FileMark>> {
        Statement st(*m_db,
                     fmt::format("SELECT {} FROM watched_files WHERE state = ? AND reader = ? ORDER BY path", k_columns));
        st.bind(1, std::string(to_string(ReadState::reading)));
        st.bind(2, reader);
        std::vector<FileMark> out;
        while (st.step()) out.push_back(mark_from(st));
        return out;
    });
}

Result<std::string> FileMarks::quarantine(FileMark mark, Outbox& outbox, const std::vector<OutboxMessage>& alerts) {
    return guarded(m_name, [&]() -> Result<std::string> {
        sql::Transaction tx(*m_db);
        mark.state = ReadState::quarantined;
        mark.reader.clear();
        if (mark.quarantined_at.empty()) mark.quarantined_at = now_utc();
        save_mark(*m_db, mark);
        outbox.enqueue(alerts);
        tx.commit();
        return mark.quarantined_at;
    });
}

Result<ReadState> FileMarks::request_retry(const std::string& path) {
    return guarded(m_name, [&]() -> Result<ReadState> {
        sql::Transaction tx(*m_db);
        auto mark = get(path);
        if (!mark) return std::unexpected(mark.error());
        if (!*mark) return fail(path, 0, "no watched file of that name (see `perfwatch files`)");
        const ReadState was = (*mark)->state;
        if (was == ReadState::reading) return fail(path, 0, "it is being read now");
        if (was == ReadState::read)
            return fail(path, 0, "it was read (a file is read again when it changes); nothing to retry");
        Statement st(*m_db, "UPDATE watched_files SET state = ?, seen_at = ? WHERE path = ?");
        st.bind(1, std::string(to_string(ReadState::retry)));
        st.bind(2, now_utc());
        st.bind(3, path);
        st.exec();
        tx.commit();
        return was;
    });
}

Result<std::int64_t> FileMarks::forget_unfinished(const std::string& reader) {
    return guarded(m_name, [&]() -> Result<std::int64_t> {
        Statement st(*m_db, "DELETE FROM watched_files WHERE state = ? AND reader = ? AND deaths = 0 RETURNING path");
        st.bind(1, std::string(to_string(ReadState::reading)));
        st.bind(2, reader);
        std::int64_t forgotten = 0;
        while (st.step()) ++forgotten;
        return forgotten;
    });
}

}  // namespace perfwatch
