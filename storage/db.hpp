#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/model.hpp"
#include "storage/browse.hpp"
#include "storage/file_marks.hpp"
#include "storage/history_reads.hpp"
#include "storage/jobs.hpp"
#include "storage/outbox.hpp"
#include "storage/pins.hpp"
#include "storage/regressions.hpp"
#include "storage/silences.hpp"

namespace perfwatch {

namespace sql {
class Connection;
}

// The schema version this build migrates databases to, the same on both backends.
int current_schema_version();

// A run is a report's content (sha256) under its labels. The same content under other labels
// (another commit, branch or build) is a new run sharing the stored entities.
struct StoreOutcome {
    std::int64_t run_id = 0;
    bool inserted = false;  // false: the same content under the same labels was already run_id
    std::optional<std::int64_t> content_run;  // the run whose stored content this new run shares
};

struct RunSummary {
    std::int64_t id = 0;
    std::string source;
    std::string format;
    std::string ingested_at;
    std::int64_t kernels = 0;
};

// What to prune: per-launch samples of runs ingested more than `samples_days` ago, and runs (with
// their entities, findings and regressions) ingested more than `runs_days` ago; never a pinned run
// or one of `keep` (the baselines and bad runs of open regressions, which only engine/ can name).
struct RetentionPolicy {
    std::optional<int> samples_days;
    std::optional<int> runs_days;
    std::set<std::int64_t> keep;
    std::size_t batch_runs = 50;  // runs per transaction: writers wait at most one batch
    std::string now;              // ISO 8601 UTC; empty: the clock
};

// What a prune removed (or, dry, would remove), and the database's bytes in use around it.
struct PruneReport {
    std::size_t runs = 0;
    std::size_t sample_sets = 0;     // entities whose per-launch samples went
    std::size_t messages = 0;        // delivered or failed outbox messages past runs_days
    std::size_t kept_protected = 0;  // old enough, kept: pinned or needed by an open regression
    std::int64_t bytes_before = 0;
    std::int64_t bytes_after = 0;
};

// Where the history lives: a SQLite file (the embedded default), or a PostgreSQL server shared by a
// fleet (`postgresql://user@host:port/db?sslmode=...`); its password from `password_file` (first
// line) when given, else as libpq finds it (PGPASSWORD, ~/.pgpass).
struct DbLocation {
    std::string location;
    std::string password_file;
};

// The history store on either backend. All SQL of the project lives behind this class.
class Db {
public:
    // Opens the database of `where` (creating a SQLite file, in WAL mode) and applies pending
    // migrations. Errors name the location without any password.
    static Result<Db> open(const DbLocation& where);
    // The password file from $PERFWATCH_DB_PASSWORD_FILE.
    static Result<Db> open(const std::string& location);

    Db(Db&&) noexcept;
    Db& operator=(Db&&) noexcept;
    ~Db();

    int schema_version() const;

    // Stores one report in one transaction: either all of it or nothing. The same content under
    // the same labels is not stored twice (its run id is returned with inserted=false); the same
    // content under other labels is a new run whose entities are those already stored.
    Result<StoreOutcome> store(const RunBatch& batch);

    // Reads a run back with its labels, entities, metrics and tool findings.
    Result<std::optional<StoredRun>> load(std::int64_t run_id) const;
    // Statements this database connection has run (storage/sql.hpp's counter).
    std::uint64_t statements_run() const;


    Result<std::vector<RunSummary>> list_runs() const;
    // -1 when the database fails.
    std::int64_t count_runs() const;

    // Replaces the stored findings of a run with `findings` (one transaction).
    Result<void> store_findings(std::int64_t run_id, const std::vector<Finding>& findings);
    Result<std::vector<Finding>> load_findings(std::int64_t run_id) const;

    // A run is processed once the pipeline has stored its findings (the daemon re-runs the rules
    // on a run stored before a crash but never processed).
    Result<void> mark_processed(std::int64_t run_id);
    Result<bool> is_processed(std::int64_t run_id) const;

    // Claims the evaluation of an unprocessed run for `owner` until `until_ms`, so that a fleet
    // evaluates each run once: claimed, already processed, or held by another owner whose claim
    // has not lapsed at `now_ms` (try again later: it may die before it is done).
    enum class RunClaim { claimed, processed, held };
    Result<RunClaim> claim_run(std::int64_t run_id, const std::string& owner, std::int64_t until_ms, std::int64_t now_ms);

    // In one transaction: enqueues `messages` (a key already there is skipped; one with a join_id
    // joins that open message instead), records their alert fingerprints, and marks the run
    // processed. Returns how many were new.
    Result<std::size_t> complete_run(std::int64_t run_id, const std::vector<OutboxMessage>& messages);
    // The parts of this database, each with its own records: history reads (runs of a series, a
    // window of runs in one batch), the alert outbox, the regressions
    // followed over history, reads for browsing it (the dashboard), pinned baselines, silences, and the daemon's marks of watched files.
    Outbox& outbox() { return m_outbox; }
    const Outbox& outbox() const { return m_outbox; }
    HistoryReads& history() { return m_history; }
    const HistoryReads& history() const { return m_history; }
    const BrowseReads& browse() const { return m_browse; }
    RegressionStore& regressions() { return m_regressions; }
    const RegressionStore& regressions() const { return m_regressions; }
    Pins& pins() { return m_pins; }
    const Pins& pins() const { return m_pins; }
    Silences& silences() { return m_silences; }
    const Silences& silences() const { return m_silences; }
    Jobs& jobs() { return m_jobs; }
    const Jobs& jobs() const { return m_jobs; }
    FileMarks& file_marks() { return m_file_marks; }
    const FileMarks& file_marks() const { return m_file_marks; }

    // Applies `policy` in transactions of policy.batch_runs runs (storage/retention.cpp); a
    // run whose stored entities later runs share hands them to the oldest of those first.
    // `dry_run` counts and changes nothing.
    Result<PruneReport> prune(const RetentionPolicy& policy, bool dry_run);
    // Pages in use times the page size (free pages left by deletions not counted).
    Result<std::int64_t> bytes_in_use() const;
    // Rewrites the database compactly (VACUUM): the file shrinks to what is in use. Takes as
    // long as copying the database, and as much free disk.
    Result<void> vacuum();

    // Copies every row of this database into `to` (the other backend, or another file), keeping
    // ids, in one transaction on `to`, which must hold no runs; then counts each table on both
    // sides. The tables and their row counts, or the first table whose counts differ.
    Result<std::vector<std::pair<std::string, std::int64_t>>> copy_into(Db& to) const;

    // The location as errors and logs name it (a PostgreSQL password masked).
    const std::string& name() const { return m_path; }
    bool is_postgresql() const;

private:
    explicit Db(std::unique_ptr<sql::Connection> db, std::string path);
    // `count` fresh ids for entities, inside the storing transaction.
    std::vector<std::int64_t> allocate_entity_ids(std::size_t count);

    std::unique_ptr<sql::Connection> m_db;
    std::string m_path;
    Outbox m_outbox;
    HistoryReads m_history;
    BrowseReads m_browse;
    RegressionStore m_regressions;
    Pins m_pins;
    Silences m_silences;
    FileMarks m_file_marks;
    Jobs m_jobs;
};

}  // namespace perfwatch
