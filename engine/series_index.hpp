#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/history.hpp"
#include "storage/db.hpp"
#include "storage/browse.hpp"

namespace perfwatch {

// One run of a series: what a list or a chart says about it without loading it.
struct SeriesRun {
    std::int64_t id = 0;
    std::string commit;
    std::string ingested_at;
    std::string environment;  // its environment labels ("driver=550.54 tool_version=2024.1"), for annotating changes
};

// A series: the runs of one benchmark, configuration, GPU and branch (series_key()), oldest first.
struct SeriesEntry {
    std::string key;
    Labels labels;  // the configuration labels, gpu and branch
    std::string format;
    std::vector<SeriesRun> runs;

    // The index of its first run stored at or after run `run` (runs.size() when none).
    std::size_t position_from(std::int64_t run) const;
};

// Every run of the history grouped into its series (the default baseline spec), from reads of
// the run index: for browsing, never for judging (rules may match on fewer labels).
class SeriesIndex {
public:
    explicit SeriesIndex(const BaselineSpec& spec = {}) : m_spec(spec) {}
    explicit SeriesIndex(const std::vector<RunIndexRow>& rows, const BaselineSpec& spec = {});

    // Adds runs stored after every run already here (ids ascending).
    void add(const std::vector<RunIndexRow>& rows);

    // Every series, by key.
    std::vector<const SeriesEntry*> series() const;
    const SeriesEntry* find(std::string_view key) const;
    const SeriesEntry* of_run(std::int64_t run) const;
    // The run's position in its series; npos when unknown.
    std::size_t position(std::int64_t run) const;
    std::size_t runs() const { return m_runs.size(); }
    std::int64_t newest_run() const { return m_newest; }

private:
    BaselineSpec m_spec;
    std::map<std::string, SeriesEntry, std::less<>> m_series;
    std::unordered_map<std::int64_t, std::pair<const SeriesEntry*, std::size_t>> m_runs;  // run -> series, position
    std::int64_t m_newest = 0;
};

// Where a bisection of a regression starts and ends: the newest run of its series before its first
// bad run (the last good), the first bad run, their commits ("" when unlabelled) and the
// regression metric's value at each where the run has it.
struct BisectEnds {
    std::optional<std::int64_t> last_good_run;
    std::string last_good_commit;
    std::optional<double> last_good_value;
    std::int64_t first_bad_run = 0;
    std::string first_bad_commit;
    std::optional<double> first_bad_value;
};

// The bisection ends of each of `regressions` (in their order), from `index` and one statement
// per entity and metric among them.
Result<std::vector<BisectEnds>> bisect_ends(const Db& db, const SeriesIndex& index,
                                            const std::vector<const RegressionState*>& regressions);

// Labels from core's labels_key() text.
Labels parse_labels_key(std::string_view text);

// "bert on NVIDIA H100, main, batch=8": a series key for people.
std::string series_title(std::string_view key);

// The environment labels, those naming the machine's software and clocks rather than a build.
bool is_environment_label(std::string_view key);

}  // namespace perfwatch
