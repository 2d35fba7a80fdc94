#include "collectors/nsight_systems/nsys_common.hpp"

#include <array>
#include <regex>
#include <utility>

namespace perfwatch {

bool is_sync_call(std::string_view name) {
    static const std::regex k_sync(R"(^(cuda|cu)(Device|Stream|Event|Ctx)Synchronize|^cudaStreamWaitEvent|^cudaMemcpy(_v\d+)?$|^cudaMemcpy2D(_v\d+)?$|^cudaMemset(_v\d+)?$|^cuMemcpy[HD]to[HD](_v\d+)?$)");
    return std::regex_search(name.begin(), name.end(), k_sync);
}

std::string api_name(const std::string& name) {
    const std::size_t v = name.rfind("_v");
    if (v != std::string::npos && v + 2 < name.size() &&
        name.find_first_not_of("0123456789", v + 2) == std::string::npos)
        return name.substr(0, v);
    return name;
}

// CUDA_MEMCPY_KIND values (ENUM_CUDA_MEMCPY_OPER in exports from 2022.4 on; older exports have
// no ENUM tables but the same values).
std::string_view copy_kind_name(long long kind) {
    static constexpr std::array<std::string_view, 14> k_names{
        "Unknown",        "HtoD",         "DtoH",         "HtoA",         "AtoH",
        "AtoA",           "AtoD",         "DtoA",         "DtoD",         "HtoH",
        "PtoP",           "Unified HtoD", "Unified DtoH", "Unified DtoD"};
    return kind >= 0 && kind < static_cast<long long>(k_names.size()) ? k_names[static_cast<std::size_t>(kind)]
                                                                        : "Unknown";
}

std::string memory_operation_direction(std::string_view name) {
    constexpr std::string_view k_memcpy = "[CUDA memcpy ";
    if (name.starts_with("[CUDA memset")) return "memset";
    if (!name.starts_with(k_memcpy) || !name.ends_with("]")) return {};
    std::string_view dir = name.substr(k_memcpy.size(), name.size() - k_memcpy.size() - 1);
    std::string prefix;
    if (dir.starts_with("Unified ")) {
        prefix = "Unified ";
        dir.remove_prefix(8);
    }
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 7> k_long{{
        {"Host-to-Device", "HtoD"},
        {"Device-to-Host", "DtoH"},
        {"Device-to-Device", "DtoD"},
        {"Host-to-Host", "HtoH"},
        {"Peer-to-Peer", "PtoP"},
        {"Host-to-Array", "HtoA"},
        {"Array-to-Host", "AtoH"},
    }};
    for (const auto& [long_name, short_name] : k_long)
        if (dir == long_name) return prefix + std::string(short_name);
    return prefix + std::string(dir);
}

std::string memory_operation_name(std::string_view name) {
    const std::string dir = memory_operation_direction(name);
    if (dir.empty()) return std::string(name);
    return dir == "memset" ? "[CUDA memset]" : "[CUDA memcpy " + dir + "]";
}

}  // namespace perfwatch
