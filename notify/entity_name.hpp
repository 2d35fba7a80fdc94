#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace perfwatch {

// How a finding's entity is named for people, as (kind, name): a kernel stays ("kernel", "gemm");
// a run-level finding names its report by file name ("report", "bert.json") instead of the run
// entity ("run", "run"), which says nothing. `source` is the run's report path.
std::pair<std::string, std::string> shown_entity(std::string_view kind, std::string_view name, std::string_view source);

}  // namespace perfwatch
