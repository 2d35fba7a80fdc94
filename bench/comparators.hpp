#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace perfwatch::bench {

// Detectors from outside perfwatch, run on the same generated series for comparison. Each takes
// one kernel's per-run levels (median per launch), oldest first.

// A median t-test: run r's level against the `window` runs before it (mean, standard deviation,
// Student t prediction interval), alerting when the one-sided p-value is under `p`. True per run
// where it alerts (higher).
std::vector<bool> median_t_test(const std::vector<double>& levels, std::size_t window = 10, double p = 0.001);

// A Perfherder-style detector (Mozilla's Treeherder: Welch t of a back window against a fore
// window; an alert where t >= `threshold` is a local maximum, once the fore window is complete;
// one alert per shift). Per run, the index
// of the shift an alert raised at that run names; nullopt where none.
std::vector<std::optional<std::size_t>> perfherder(const std::vector<double>& levels, std::size_t back = 12,
                                                   std::size_t fore = 12, double threshold = 7);

}  // namespace perfwatch::bench
