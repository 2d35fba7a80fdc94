#include "storage/file_marks.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>

#include "storage/sql.hpp"

namespace perfwatch {

using sql::guarded;
using sql::now_utc;
using sql::Statement;

Result<std::optional<FileMark>> FileMarks::get(const std::string& path) const {
    return guarded(m_name, [&]() -> Result<std::optional<FileMark>> {
        Statement st(*m_db, "SELECT size, mtime_ns, sha256, run_id, error FROM watched_files WHERE path = ?");
        st.bind(1, path);
        if (!st.step()) return std::optional<FileMark>{};
        FileMark m;
        m.path = path;
        m.size = st.column(0).as_int64();
        m.mtime_ns = st.column(1).as_int64();
        m.sha256 = st.column(2).as_string();
        if (!st.column(3).is_null()) m.run_id = st.column(3).as_int64();
        m.error = st.column(4).as_string();
        return std::optional<FileMark>{std::move(m)};
    });
}

Result<void> FileMarks::save(const FileMark& mark) {
    return guarded(m_name, [&]() -> Result<void> {
        Statement st(*m_db,
                             "INSERT INTO watched_files(path, size, mtime_ns, sha256, run_id, error, seen_at) "
                             "VALUES(?,?,?,?,?,?,?) ON CONFLICT(path) DO UPDATE SET size = excluded.size, "
                             "mtime_ns = excluded.mtime_ns, sha256 = excluded.sha256, run_id = excluded.run_id, "
                             "error = excluded.error, seen_at = excluded.seen_at");
        st.bind(1, mark.path);
        st.bind(2, mark.size);
        st.bind(3, mark.mtime_ns);
        st.bind(4, mark.sha256);
        st.bind(5, mark.run_id);
        st.bind(6, mark.error);
        st.bind(7, now_utc());
        st.exec();
        return {};
    });
}

}  // namespace perfwatch
