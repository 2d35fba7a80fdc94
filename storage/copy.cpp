#include <fmt/format.h>

#include "storage/db.hpp"
#include "storage/schema.hpp"
#include "storage/sql.hpp"

namespace perfwatch {


Result<std::vector<std::pair<std::string, std::int64_t>>> Db::copy_into(Db& to) const {
    auto copied = sql::guarded(to.m_path, [&]() -> Result<void> {
        if (sql::query_int(*to.m_db, "SELECT count(*) FROM runs") > 0)
            return fail(to.m_path, 0, "the destination already holds runs; copy into an empty database");
        sql::Transaction tx(*to.m_db);
        for (const SchemaTable& t : schema_tables()) {
            sql::Statement from(*m_db, fmt::format("SELECT * FROM {}{}", t.name, t.has_id ? " ORDER BY id" : ""));
            std::optional<sql::Statement> insert;
            while (from.step()) {
                if (!insert) {
                    std::string columns, marks;
                    for (int i = 0; i < from.column_count(); ++i) {
                        columns += fmt::format("{}{}", i > 0 ? ", " : "", from.column_name(i));
                        marks += i > 0 ? ", ?" : "?";
                    }
                    insert.emplace(*to.m_db, fmt::format("INSERT INTO {}({}) VALUES({})", t.name, columns, marks));
                }
                for (int i = 0; i < from.column_count(); ++i) insert->bind_value(i + 1, from.column(i));
                insert->exec();
            }
            // PostgreSQL's identities go on after the highest id copied.
            if (t.has_id && to.m_db->dialect() == sql::Dialect::postgresql)
                to.m_db->exec(fmt::format("SELECT setval(pg_get_serial_sequence('{0}', 'id'), "
                                          "COALESCE((SELECT max(id) FROM {0}), 0) + 1, false)",
                                          t.name));
        }
        tx.commit();
        return {};
    });
    if (!copied) return std::unexpected(copied.error());
    return sql::guarded(to.m_path, [&]() -> Result<std::vector<std::pair<std::string, std::int64_t>>> {
        std::vector<std::pair<std::string, std::int64_t>> counts;
        for (const SchemaTable& t : schema_tables()) {
            const std::string count = fmt::format("SELECT count(*) FROM {}", t.name);
            const std::int64_t here = sql::query_int(*m_db, count), there = sql::query_int(*to.m_db, count);
            if (here != there)
                return fail(to.m_path, 0, fmt::format("table {}: {} rows copied of {}", t.name, there, here));
            counts.emplace_back(t.name, here);
        }
        return counts;
    });
}

}  // namespace perfwatch
