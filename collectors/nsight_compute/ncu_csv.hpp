#pragma once

#include "collectors/collector.hpp"

namespace perfwatch {

// `ncu --csv` details page: one row per metric or rule result, any header generation.
const Collector& ncu_csv_collector();

// `ncu --page raw --csv`: one column per raw metric, a units row, one row per launch.
const Collector& ncu_raw_csv_collector();

}  // namespace perfwatch
