#include "collectors/readers/comm_kernels.hpp"

#include <array>
#include <utility>

namespace perfwatch {

namespace {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// (library, marker): the first marker found in a name names its library. Markers are specific
// enough not to match computation kernels ("allreduce" alone would match fused epilogues).
constexpr auto k_markers = std::to_array<std::pair<std::string_view, std::string_view>>({
    {"RCCL", "rccl"},
    {"NCCL", "ncclKernel"},
    {"NCCL", "ncclDevKernel"},
    {"NCCL", "ncclDevFunc"},
    {"HCCL", "hccl"},
    {"DeepEP", "deep_ep::"},
    {"DeepEP", "deep_ep_"},
    {"NVSHMEM", "nvshmem"},
    {"NVLS multimem", "multimem_all_reduce"},
    {"NVLS multimem", "multimem_all_gather"},
    {"NVLS multimem", "multimem_reduce_scatter"},
    {"custom all-reduce", "cross_device_reduce"},        // vLLM / SGLang custom all-reduce
    {"custom all-reduce", "oneShotAllReduceKernel"},     // TensorRT-LLM
    {"custom all-reduce", "twoShotAllReduceKernel"},
    {"custom all-reduce", "allreduce_fusion_kernel"},
    {"custom all-reduce", "lamport_all_reduce"},
    {"custom all-reduce", "quickreduce"},                // ROCm quick all-reduce
});

}  // namespace

std::string_view comm_library(std::string_view name) {
    // NCCL's per-op kernels (ncclAllReduceRingLLKernel, ncclSendRecvKernel...) and its device
    // functions all start with "nccl".
    if (name.starts_with("nccl")) return "NCCL";
    for (const auto& [library, marker] : k_markers)
        if (contains(name, marker)) return library;
    return {};
}

}  // namespace perfwatch
