#pragma once

#include "collectors/collector.hpp"

namespace perfwatch {

// Nsight Systems SQLite export (`nsys export --type sqlite`, also written by `nsys stats`),
// schemas 2021 to 2025, read with read-only SQL on the export's own tables.
const Collector& nsys_sqlite_collector();

}  // namespace perfwatch
