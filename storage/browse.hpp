#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/model.hpp"

namespace perfwatch {

namespace sql {
class Connection;
}

// One run as the dashboard indexes it: cheap columns only, no entities.
struct RunIndexRow {
    std::int64_t id = 0;
    std::string labels_key;  // core's labels_key(): "k=v\n" per label, sorted by key
    std::string ingested_at;
    std::string format;
    std::string source;
};

// A value of a metric on one run, with the launches of the same entity where it has them.
struct RunValue {
    double value = 0;
    std::optional<double> launches;
};

// Reads for browsing history (the dashboard): each a fixed number of statements whatever the
// number of runs, series or findings it covers. A part of the database (Db::browse()).
class BrowseReads {
public:
    BrowseReads(sql::Connection& db, std::string name) : m_db(&db), m_name(std::move(name)) {}

    // Every run stored after `after_id` (all: 0), oldest first, in one statement.
    Result<std::vector<RunIndexRow>> run_index(std::int64_t after_id = 0) const;
    // How many runs there are and the newest's id: whether an index read before is still whole.
    Result<std::pair<std::int64_t, std::int64_t>> run_count_and_newest() const;
    // `metric` of the entity of `kind` in each of `runs` that has it (with `name` where given, the
    // first such entity otherwise), keyed by run id, with the entity's `launches`: one statement
    // per 500 runs.
    Result<std::map<std::int64_t, RunValue>> metric_values(EntityKind kind, const std::optional<std::string>& name,
                                                           const std::string& metric,
                                                           const std::vector<std::int64_t>& runs) const;
    // The stored samples of `metric` (a kernel's launch durations: "duration") of the entity named
    // `name` of `kind` in each of `runs` that has them, keyed by run id; one statement per 500 runs.
    Result<std::map<std::int64_t, std::vector<double>>> samples(EntityKind kind, const std::string& name, const std::string& metric,
                                                                const std::vector<std::int64_t>& runs) const;
    // Open regressions per series key.
    Result<std::map<std::string, std::int64_t>> open_regressions_by_series() const;
    // Findings per run by severity (info, warning, error), for each of `runs` that has any.
    Result<std::map<std::int64_t, std::array<std::int64_t, 3>>> finding_counts(const std::vector<std::int64_t>& runs) const;
    // Those of `runs` that are a rank of a stored job.
    Result<std::set<std::int64_t>> job_ranks_among(const std::vector<std::int64_t>& runs) const;
    // The report path of each of `runs` that exists.
    Result<std::map<std::int64_t, std::string>> sources(const std::vector<std::int64_t>& runs) const;
    // The names of the `limit` kernels of `run` with the most GPU time (launches x mean duration).
    Result<std::vector<std::string>> top_kernels(std::int64_t run, std::size_t limit) const;
    // Kernel names holding `needle` (ASCII case ignored; '%' and '_' literal), at most `limit`,
    // by name, each with the newest run that has it.
    Result<std::vector<std::pair<std::string, std::int64_t>>> kernels_named(std::string_view needle, std::size_t limit) const;

private:
    sql::Connection* m_db;
    std::string m_name;
};

}  // namespace perfwatch
