#include "storage/pins.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>

#include "storage/sql.hpp"

namespace perfwatch {

using sql::guarded;
using sql::now_utc;
using sql::Statement;

Result<bool> Pins::pin(std::int64_t run_id, const std::string& comment) {
    return guarded(m_name, [&]() -> Result<bool> {
        Statement exists(*m_db, "SELECT 1 FROM runs WHERE id = ?");
        exists.bind(1, run_id);
        if (!exists.step()) return false;
        Statement st(*m_db, "INSERT INTO baseline_pins(run_id, pinned_at, comment) VALUES(?,?,?) ON CONFLICT(run_id) DO UPDATE SET "
                                    "pinned_at = excluded.pinned_at, comment = excluded.comment");
        st.bind(1, run_id);
        st.bind(2, now_utc());
        st.bind(3, comment);
        st.exec();
        return true;
    });
}

Result<bool> Pins::unpin(std::int64_t run_id) {
    return guarded(m_name, [&]() -> Result<bool> {
        Statement st(*m_db, "DELETE FROM baseline_pins WHERE run_id = ?");
        st.bind(1, run_id);
        return st.exec() > 0;
    });
}

Result<std::vector<BaselinePin>> Pins::list() const {
    return guarded(m_name, [&]() -> Result<std::vector<BaselinePin>> {
        Statement st(*m_db, "SELECT run_id, pinned_at, comment FROM baseline_pins ORDER BY pinned_at DESC, run_id DESC");
        std::vector<BaselinePin> out;
        while (st.step())
            out.push_back({st.column(0).as_int64(), st.column(1).as_string(), st.column(2).as_string()});
        return out;
    });
}

}  // namespace perfwatch
