#pragma once

#include <string>
#include <string_view>

namespace perfwatch {

// True for CUDA calls that block the host until the device, a stream or an event is done
// (cudaDeviceSynchronize, cudaStreamSynchronize, synchronous cudaMemcpy/cudaMemset, ...).
bool is_sync_call(std::string_view name);

// The API name without nsys's version suffix: "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
std::string api_name(const std::string& name);

// CUDA_MEMCPY_KIND as nsys names it: 1 -> "HtoD", 2 -> "DtoH", 8 -> "DtoD", 10 -> "PtoP".
std::string_view copy_kind_name(long long kind);

// The short direction of a memory operation named as nsys stats prints it, in either spelling:
// "[CUDA memcpy Host-to-Device]" and "[CUDA memcpy HtoD]" -> "HtoD"; "[CUDA memset]" -> "memset";
// empty when the name is not a CUDA memory operation.
std::string memory_operation_direction(std::string_view name);

// The name perfwatch stores for a memory operation, the same whichever spelling the report used:
// "[CUDA memcpy Host-to-Device]" -> "[CUDA memcpy HtoD]"; "[CUDA memset]"; other names unchanged.
std::string memory_operation_name(std::string_view name);

}  // namespace perfwatch
