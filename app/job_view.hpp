#pragma once

#include <string>

#include "core/model.hpp"

namespace perfwatch {

// The job view of a job's own run (format "job"): its figures, then one row per rank (step,
// computation, communication, exposed communication, wait in collectives, last arrivals, idle
// categories). Plain text, for `check` and `job show`.
std::string format_job_text(const StoredRun& job);

}  // namespace perfwatch
