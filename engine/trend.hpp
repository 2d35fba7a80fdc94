#pragma once

#include <optional>

#include "core/model.hpp"
#include "core/trend.hpp"
#include "storage/db.hpp"

namespace perfwatch {

// The trend of a regression finding's metric over the comparable runs before `run` (at most 30),
// then `run`, as the pipeline judged it: each run's level, and the band and first bad run stored
// with the regression (the finding's own comparison where no regression was followed, as in check
// --baseline). nullopt when the finding carries no comparison or there are fewer than two points.
Result<std::optional<Trend>> trend_for(const Db& db, const StoredRun& run, const Finding& finding);

}  // namespace perfwatch
