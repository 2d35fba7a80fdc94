#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "app/run_pipeline.hpp"
#include "engine/job.hpp"
#include "storage/db.hpp"

namespace perfwatch {

// The rank runs of one job instance that are in no job yet: at most one run per rank, the
// oldest first (a rank stored again belongs to the next instance).
struct PendingJob {
    std::string key;  // the job's labels as text, one "key=value" per line
    JobKey job;
    std::vector<JobRank> ranks;
    bool complete() const { return static_cast<int>(ranks.size()) >= job.world_size; }
};

// The jobs whose ranks wait in `db`, each once.
Result<std::vector<PendingJob>> pending_jobs(const Db& db);

// What assembling a job gave: its own run through the pipeline, and its ranks.
struct AssembledJob {
    RunStepResult step;
    std::vector<JobRank> ranks;
    std::vector<Finding> rank_findings;  // the ranks' own findings, each said once for the job
};

// Builds the job of `pending` from its stored ranks (engine/job), stores and evaluates it through
// `pipeline` (its alert messages carry the ranks' findings, merged), and records its members.
Result<AssembledJob> assemble_job(Db& db, RunPipeline& pipeline, const PendingJob& pending);

// The ranks' findings, one per rule and entity: the most important instance, its message saying
// on which ranks it was found and whose figures it gives ("on ranks 0-3, 5 (figures of rank 2): ...").
std::vector<Finding> merge_rank_findings(const std::vector<std::pair<int, std::vector<Finding>>>& per_rank);

// "0-3, 5": a sorted list of ranks with runs collapsed.
std::string rank_list(const std::vector<int>& ranks);

}  // namespace perfwatch
