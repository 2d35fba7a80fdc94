#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/history.hpp"
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
};

// Every run of the history grouped into its series (the default baseline spec), from one read of
// the run index: for browsing, never for judging (rules may match on fewer labels).
class SeriesIndex {
public:
    explicit SeriesIndex(const std::vector<RunIndexRow>& rows, const BaselineSpec& spec = {});

    const std::vector<SeriesEntry>& series() const { return m_series; }
    const SeriesEntry* find(std::string_view key) const;
    const SeriesEntry* of_run(std::int64_t run) const;
    // The run's position in its series; npos when unknown.
    std::size_t position(std::int64_t run) const;

private:
    std::vector<SeriesEntry> m_series;  // by key
    std::unordered_map<std::int64_t, std::pair<std::size_t, std::size_t>> m_runs;  // run -> series, position
};

// Labels from core's labels_key() text.
Labels parse_labels_key(std::string_view text);

// "bert on NVIDIA H100, main, batch=8": a series key for people.
std::string series_title(std::string_view key);

// The environment labels, those naming the machine's software and clocks rather than a build.
bool is_environment_label(std::string_view key);

}  // namespace perfwatch
