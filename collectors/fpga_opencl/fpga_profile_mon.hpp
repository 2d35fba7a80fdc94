#pragma once

#include "collectors/collector.hpp"

namespace perfwatch {

// Intel FPGA SDK for OpenCL dynamic profiler `profile.mon`: one line per kernel execution (and
// per memory operation when ACL_PROFILE_TIMER=1), legacy and shared-counter layouts.
const Collector& fpga_profile_mon_collector();

}  // namespace perfwatch
