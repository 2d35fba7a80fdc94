#pragma once

#include <string_view>

namespace perfwatch {

// The communication library a kernel name belongs to ("NCCL", "RCCL", "HCCL", "NVSHMEM",
// "DeepEP", "NVLS multimem", "custom all-reduce"); empty for every other kernel. NCCL is
// recognised across versions (ncclKernel_*, ncclDevKernel_*, per-op names such as
// ncclAllReduceRingLLKernel), RCCL as rccl* or its NCCL-named kernels on AMD.
std::string_view comm_library(std::string_view kernel_name);

// True when `kernel_name` is a communication (collective or point-to-point) kernel.
inline bool is_comm_kernel(std::string_view kernel_name) { return !comm_library(kernel_name).empty(); }

}  // namespace perfwatch
