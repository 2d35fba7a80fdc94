#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/convert.hpp"
#include "collectors/labels.hpp"
#include "core/error.hpp"
#include "core/model.hpp"
#include "core/vocabulary.hpp"
#include "notify/format.hpp"
#include "storage/db.hpp"

// What several commands share: errors printed, the database opened, runs stored and named.
namespace perfwatch {

// Prints `perfwatch: error: ...` (or `skipped:`) for `e` on stderr.
void print_error(const Error& e);
// Opens the database, printing why not; nullopt when it cannot be opened.
std::optional<Db> open_db(const std::string& path);

// A number as the tables print it: integers without decimals, else six significant digits.
std::string value_text(double v);
// Nanoseconds in the largest fitting unit ("1.25 ms").
std::string time_text(double ns);
// `text` as a run id; nullopt when it is not a whole number.
std::optional<std::int64_t> as_run_id(const std::string& text);
std::int64_t count_kind(const RunBatch& b, EntityKind kind);
// A stored run as reports name it.
RunRef run_ref(const StoredRun& run);

struct IngestedRun {
    StoreOutcome stored;
    RunBatch batch;
};
// Collects (as `reader` says: in a reader process for check and ingest) and stores one report:
// one run, or one per session of a log holding several. Prints nothing; the caller reports.
Result<std::vector<IngestedRun>> ingest_one(Db& db, const std::string& file, const LabelSources& labels,
                                            const std::vector<Converter>& converters, const ReaderOptions& reader);

// Splits K=V label arguments into `out`; false (and says why on stderr) on a malformed one.
bool parse_labels(const std::vector<std::string>& args, std::map<std::string, std::string>& out);

// The clock in Unix ms, and such a time as "2026-12-01T08:00:00Z".
std::int64_t now_ms();
std::string utc_text(std::int64_t ms);
// An absolute UTC time (2026-12-01T08:00:00Z, 2026-12-01 08:00, 2026-12-01) in Unix ms, or a
// duration (30m, 4h, 2d, 1w) added to `now`; nullopt when neither.
std::optional<std::int64_t> parse_until(const std::string& text, std::int64_t now);

}  // namespace perfwatch
