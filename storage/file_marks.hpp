#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/model.hpp"

namespace perfwatch {

namespace sql {
class Connection;
}

// What the daemon last made of a watched report file: its size and modification time when read,
// and the run it gave (or the error). A file whose size and time still match is not read again.
struct FileMark {
    std::string path;
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::string sha256;  // empty when it could not be read
    std::optional<std::int64_t> run_id;
    std::string error;  // empty when stored
};

// What the daemon made of each watched file: a part of the database (Db::file_marks()).
class FileMarks {
public:
    FileMarks(sql::Connection& db, std::string name) : m_db(&db), m_name(std::move(name)) {}
    Result<std::optional<FileMark>> get(const std::string& path) const;
    // Inserts or replaces the mark of `mark.path`.
    Result<void> save(const FileMark& mark);

private:
    sql::Connection* m_db;
    std::string m_name;
};

}  // namespace perfwatch
