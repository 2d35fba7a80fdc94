#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model.hpp"

namespace perfwatch {

// The label holding a run's rank in its job, and the one a job's own run carries (its world size).
inline constexpr std::string_view k_rank_label = "rank";
inline constexpr std::string_view k_ranks_label = "ranks";

// What makes runs ranks of one job: the same labels except `rank`, and a world size above one
// (the world_size label of distributedInfo). nullopt for a run that is no rank of a job.
struct JobKey {
    std::map<std::string, std::string> labels;  // the run's labels less `rank`
    int world_size = 0;
    int rank = 0;
};
std::optional<JobKey> job_key(const std::map<std::string, std::string>& labels);

// One rank of a job as stored.
struct JobMember {
    std::int64_t run_id = 0;
    int rank = 0;
    const RunBatch* batch = nullptr;
};

// Builds a job's own run from its ranks (at most one member per rank, any order): the labels all
// members share less `rank`, plus `ranks` = the world size; one `rank` entity per member with its
// figures; the job's figures on the run entity; format "job". The content hash is left to the
// caller. Figures (README "Jobs"): collectives are matched across ranks by kernel name and
// occurrence; a rank's arrival at one is its kernel's start on the trace's clock; the ranks that
// arrived earlier wait until the last arrives.
RunBatch build_job_run(const std::vector<JobMember>& members, int world_size);

}  // namespace perfwatch
