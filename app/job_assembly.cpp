#include "app/job_assembly.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "collectors/readers/byte_source.hpp"

namespace perfwatch {

std::string rank_list(const std::vector<int>& ranks) {
    std::vector<int> r = ranks;
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
    std::string out;
    for (std::size_t i = 0; i < r.size();) {
        std::size_t j = i;
        while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
        out += (out.empty() ? "" : ", ") + (j > i ? fmt::format("{}-{}", r[i], r[j]) : std::to_string(r[i]));
        i = j + 1;
    }
    return out;
}

Result<std::vector<PendingJob>> pending_jobs(const Db& db) {
    auto unjoined = db.jobs().unjoined();
    if (!unjoined) return std::unexpected(unjoined.error());
    // The k-th waiting run of each rank (in the order they were stored) belongs to the k-th
    // instance of its job: a benchmark writing one trace per window and rank gets one job per window.
    std::vector<PendingJob> out;
    std::map<std::string, std::vector<std::size_t>> instances;  // key -> its instances in `out`
    std::map<std::pair<std::string, int>, std::size_t> seen;    // (key, rank) -> runs so far
    for (const UnjoinedRank& r : *unjoined) {
        auto key = job_key(r.labels);
        if (!key) continue;
        const std::string text = labels_key(key->labels);
        const std::size_t k = seen[{text, key->rank}]++;
        std::vector<std::size_t>& of_key = instances[text];
        while (of_key.size() <= k) {
            out.push_back({text, *key, {}});
            of_key.push_back(out.size() - 1);
        }
        out[of_key[k]].ranks.push_back({key->rank, r.run_id});
    }
    return out;
}

std::vector<Finding> merge_rank_findings(const std::vector<std::pair<int, std::vector<Finding>>>& per_rank) {
    struct Merged {
        Finding best;
        int best_rank = 0;
        std::vector<int> ranks;
    };
    std::map<std::tuple<std::string, EntityKind, std::string>, Merged> merged;
    std::vector<std::tuple<std::string, EntityKind, std::string>> order;
    for (const auto& [rank, findings] : per_rank)
        for (const Finding& f : findings) {
            const auto key = std::make_tuple(f.rule, f.entity_kind, f.entity_name);
            auto [it, fresh] = merged.try_emplace(key, Merged{f, rank, {}});
            if (fresh) order.push_back(key);
            it->second.ranks.push_back(rank);
            if (f.impact.value_or(0) > it->second.best.impact.value_or(0)) {
                it->second.best = f;
                it->second.best_rank = rank;
            }
        }
    std::vector<Finding> out;
    for (const auto& key : order) {
        Merged& m = merged.at(key);
        Finding f = m.best;
        f.message = m.ranks.size() == 1
                        ? fmt::format("on rank {}: {}", m.best_rank, f.message)
                        : fmt::format("on ranks {} (figures of rank {}): {}", rank_list(m.ranks), m.best_rank, f.message);
        out.push_back(std::move(f));
    }
    return out;
}

Result<AssembledJob> assemble_job(Db& db, RunPipeline& pipeline, const PendingJob& pending) {
    std::vector<std::int64_t> ids;
    for (const JobRank& r : pending.ranks) ids.push_back(r.run_id);
    auto runs = db.history().load_runs(ids);
    if (!runs) return std::unexpected(runs.error());
    std::vector<JobMember> members;
    std::vector<std::string> hashes;
    std::vector<std::pair<int, std::vector<Finding>>> per_rank;
    for (const StoredRun& run : *runs) {
        auto it = std::find_if(pending.ranks.begin(), pending.ranks.end(), [&](const JobRank& r) { return r.run_id == run.id; });
        if (it == pending.ranks.end()) continue;
        members.push_back({run.id, it->rank, &run.batch});
        hashes.push_back(fmt::format("{}:{}", it->rank, run.batch.sha256));
        auto findings = db.load_findings(run.id);
        if (!findings) return std::unexpected(findings.error());
        per_rank.emplace_back(it->rank, std::move(*findings));
    }
    RunBatch job = build_job_run(members, pending.job.world_size);
    // The job's content: its ranks' contents, so the same ranks make the same job.
    std::sort(hashes.begin(), hashes.end());
    std::string all = fmt::format("job of {} ranks\n", pending.job.world_size);
    for (const std::string& h : hashes) all += h + "\n";
    job.sha256 = sha256_hex(all);
    AssembledJob out;
    out.rank_findings = merge_rank_findings(per_rank);
    auto step = pipeline.run(job, out.rank_findings);
    if (!step) return std::unexpected(step.error());
    std::vector<JobRank> ranks;
    for (const JobMember& m : members) ranks.push_back({m.rank, m.run_id});
    if (auto added = db.jobs().add(step->stored.run_id, ranks); !added) return std::unexpected(added.error());
    out.step = std::move(*step);
    out.ranks = std::move(ranks);
    return out;
}

}  // namespace perfwatch
