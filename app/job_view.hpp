#pragma once

#include <string>
#include <vector>

#include "core/model.hpp"

namespace perfwatch {

// A job's ranks as text cells, one row per `rank` entity of its run: name, run id, step,
// computation, communication, exposed communication, wait in collectives, last arrivals and the
// three idle categories ("-" where a figure is missing). The text view and the HTML report show it.
struct JobRankTable {
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
};
JobRankTable job_rank_table(const RunBatch& job);

// The job view of a job's own run (format "job"): its figures, then the rank table. Plain text,
// for `check` and `job show`.
std::string format_job_text(const StoredRun& job);

}  // namespace perfwatch
