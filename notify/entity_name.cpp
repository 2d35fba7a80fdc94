#include "notify/entity_name.hpp"

namespace perfwatch {

std::pair<std::string, std::string> shown_entity(std::string_view kind, std::string_view name, std::string_view source) {
    if (kind != "run" || source.empty()) return {std::string(kind), std::string(name)};
    const std::size_t slash = source.find_last_of('/');
    return {"report", std::string(slash == std::string_view::npos ? source : source.substr(slash + 1))};
}

}  // namespace perfwatch
