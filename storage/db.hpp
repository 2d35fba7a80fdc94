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
#include "storage/outbox.hpp"

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

// A run's id with its labels, for choosing comparable runs.
struct RunLabels {
    std::int64_t id = 0;
    std::map<std::string, std::string> labels;
};

// A run pinned as the baseline of the runs comparable with it.
struct BaselinePin {
    std::int64_t run_id = 0;
    std::string pinned_at;
    std::string comment;
};

// Open: the rule fired and the series has not come back. Resolved: back inside the band for
// the rule's resolve_after runs. Accepted: a user took the new level as the baseline.
enum class RegressionStatus { open, resolved, accepted };
std::string_view to_string(RegressionStatus s);
std::optional<RegressionStatus> regression_status_from_string(std::string_view s);

// One regression followed over history (hysteresis): opened when its rule fires, resolved only
// after `resolve_after` comparable runs back inside the band, or accepted.
struct RegressionState {
    std::int64_t id = 0;  // 0: not stored yet
    std::string rule;
    EntityKind entity_kind = EntityKind::kernel;
    std::string entity_name;
    std::string series;  // comparable-run key plus branch
    std::string metric;
    bool higher_is_worse = true;
    double baseline = 0;    // baseline median when it opened
    double band_limit = 0;  // a value beyond this (in the worse direction) is still regressed
    std::int64_t opened_run = 0;
    std::optional<std::int64_t> first_bad_run;
    std::int64_t last_run = 0;
    std::int64_t inside_runs = 0;  // consecutive runs back inside the band
    std::optional<std::int64_t> resolved_run;
    std::string resolution;  // "back inside the band", "accepted"
    RegressionStatus status = RegressionStatus::open;
    std::int64_t last_bad_run = 0;       // the newest run still outside the band
    std::optional<double> current;       // the level that opened it
    std::optional<double> change_pct;    // its change against `baseline` when it opened
    std::string comment;                 // given when accepted
    std::string since;                   // when the opening run was ingested (read only)
};

// One point of a metric's history.
struct SeriesPoint {
    std::int64_t run_id = 0;
    double value = 0;
};

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


// Alerts whose labels (the run's, plus rule and severity) match every matcher (a value or a glob)
// are not sent while it lasts.
struct Silence {
    std::int64_t id = 0;
    std::map<std::string, std::string> matchers;
    std::int64_t until_ms = 0;  // Unix time in ms
    std::string comment;
    std::int64_t created_ms = 0;
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
    // Reads runs back as load() does, in the order of `run_ids` (ids without a run skipped), in
    // eight statements for up to 500 runs whatever their number: a history window in one go.
    Result<std::vector<StoredRun>> load_runs(const std::vector<std::int64_t>& run_ids) const;
    // Statements this database connection has run (storage/sql.hpp's counter).
    std::uint64_t statements_run() const;


    Result<std::vector<RunSummary>> list_runs() const;
    // -1 when the database fails.
    std::int64_t count_runs() const;

    // Replaces the stored findings of a run with `findings` (one transaction).
    Result<void> store_findings(std::int64_t run_id, const std::vector<Finding>& findings);
    Result<std::vector<Finding>> load_findings(std::int64_t run_id) const;

    // Runs stored before `before_id` (all runs when 0) whose labels include every pair of
    // `must_match`, newest first; at most `limit` (0: no limit).
    Result<std::vector<RunLabels>> find_runs(const std::map<std::string, std::string>& must_match,
                                             std::int64_t before_id = 0, std::size_t limit = 0) const;

    // Values of `metric` on the entity of `kind` named `name` in each of `runs` that has it.
    Result<std::vector<SeriesPoint>> metric_series(EntityKind kind, const std::string& name, const std::string& metric,
                                                   const std::vector<std::int64_t>& runs) const;

    // Pins a run (replacing an earlier pin of it); false when the run does not exist.
    Result<bool> pin_baseline(std::int64_t run_id, const std::string& comment);
    // False when the run was not pinned.
    Result<bool> unpin_baseline(std::int64_t run_id);
    // Newest first.
    Result<std::vector<BaselinePin>> baseline_pins() const;

    // Regressions of a series still open.
    Result<std::vector<RegressionState>> open_regressions(const std::string& series) const;
    // Every regression, newest first (open ones only when `open_only`).
    Result<std::vector<RegressionState>> regressions(bool open_only) const;
    // Every regression of a series, oldest first (the baseline window is cut by them).
    Result<std::vector<RegressionState>> series_regressions(const std::string& series) const;
    // Accepts an open regression: its new level becomes the baseline. nullopt when there is no
    // open regression `id`.
    Result<std::optional<RegressionState>> accept_regression(std::int64_t id, const std::string& comment);
    // Inserts (id 0, then set) or updates open regression states, in one transaction.
    Result<void> save_regressions(std::vector<RegressionState>& states);

    // A run is processed once the pipeline has stored its findings (the daemon re-runs the rules
    // on a run stored before a crash but never processed).
    Result<void> mark_processed(std::int64_t run_id);
    Result<bool> is_processed(std::int64_t run_id) const;

    // Claims the evaluation of an unprocessed run for `owner` until `until_ms`, so that a fleet
    // evaluates each run once: claimed, already processed, or held by another owner whose claim
    // has not lapsed at `now_ms` (try again later: it may die before it is done).
    enum class RunClaim { claimed, processed, held };
    Result<RunClaim> claim_run(std::int64_t run_id, const std::string& owner, std::int64_t until_ms, std::int64_t now_ms);

    Result<std::optional<FileMark>> file_mark(const std::string& path) const;
    // Inserts or replaces the mark of `mark.path`.
    Result<void> save_file_mark(const FileMark& mark);

    // In one transaction: enqueues `messages` (a key already there is skipped; one with a join_id
    // joins that open message instead), records their alert fingerprints, and marks the run
    // processed. Returns how many were new.
    Result<std::size_t> complete_run(std::int64_t run_id, const std::vector<OutboxMessage>& messages);
    // The alert outbox of this database (storage/outbox.hpp).
    Outbox& outbox() { return m_outbox; }
    const Outbox& outbox() const { return m_outbox; }

    Result<std::int64_t> add_silence(const Silence& silence);
    // Every silence, or those still active at `active_at` (Unix ms).
    Result<std::vector<Silence>> silences(std::optional<std::int64_t> active_at) const;
    // Ends a silence now; false when there is no such silence.
    Result<bool> expire_silence(std::int64_t id, std::int64_t now_ms);

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
};

}  // namespace perfwatch
