#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/model.hpp"
#include "storage/outbox.hpp"

namespace perfwatch {

namespace sql {
class Connection;
}

// Where the reading of a watched file stands. reading: handed to a reader and not finished (the
// mark is committed before the reader starts, so it outlives a kill -9); read and failed: done
// (failed: the report's own fault); quarantined: reading it ended the reader (a reader process
// that died, or the daemon itself), so it is never read again automatically; retry: a person
// asked for a quarantined or failed file to be read once more.
enum class ReadState { reading, read, failed, quarantined, retry };
std::string_view to_string(ReadState state);
std::optional<ReadState> read_state_from_string(std::string_view text);

// What the daemon last made of a watched report file: its size and modification time when read,
// and the run it gave (or the error). A file read or failed whose size and time still match is not
// read again; a quarantined one neither.
struct FileMark {
    std::string path;
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::string sha256;  // empty when it could not be read
    std::optional<std::int64_t> run_id;
    std::string error;  // failed: why; quarantined (and retry after it): the quarantine's reason
    ReadState state = ReadState::read;
    // reading: the daemon reading it (host:configuration), so a fleet's daemons judge only their own.
    std::string reader = {};
    // Daemon ends while it was being read that nothing explained (a kill, the OOM killer, a power
    // cut): one is forgiven (it is read again), the second quarantines it.
    int deaths = 0;
    std::string quarantined_at = {};  // UTC, when last quarantined ("" if never)
    std::string seen_at = {};         // UTC, when the mark was last written (read back only)
};

// What the daemon made of each watched file: a part of the database (Db::file_marks()).
class FileMarks {
public:
    FileMarks(sql::Connection& db, std::string name) : m_db(&db), m_name(std::move(name)) {}
    Result<std::optional<FileMark>> get(const std::string& path) const;
    // Inserts or replaces the mark of `mark.path` (one statement: committed at once outside a
    // transaction).
    Result<void> save(const FileMark& mark);
    // Every mark, or those in `state`, by path.
    Result<std::vector<FileMark>> list(std::optional<ReadState> state = std::nullopt) const;
    // The marks `reader` left in the reading state (those its previous process was reading when it ended).
    Result<std::vector<FileMark>> reading_by(const std::string& reader) const;
    // In one transaction: `mark` saved as quarantined at mark.quarantined_at (now when empty; its
    // error the reason) and `alerts` enqueued in `outbox` (a key already there is skipped).
    // Returns the time it was quarantined.
    Result<std::string> quarantine(FileMark mark, Outbox& outbox, const std::vector<OutboxMessage>& alerts);
    // Asks for a quarantined or failed file to be read once more: its state becomes retry. The
    // state it had; an error when `path` has no mark or is being read.
    Result<ReadState> request_retry(const std::string& path);
    // Forgets the reading marks `reader` left with no death counted (a clean stop: none is being
    // read; each is read again as a new file at the next start). How many.
    Result<std::int64_t> forget_unfinished(const std::string& reader);

private:
    sql::Connection* m_db;
    std::string m_name;
};

}  // namespace perfwatch
