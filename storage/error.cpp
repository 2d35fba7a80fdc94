#include "storage/error.hpp"

#include <fmt/format.h>

namespace perfwatch {

std::string Error::to_string() const {
    if (line > 0) return fmt::format("{}:{}: {}", file, line, message);
    if (has_offset) return fmt::format("{}: offset {}: {}", file, offset, message);
    if (file.empty()) return message;
    return fmt::format("{}: {}", file, message);
}

}  // namespace perfwatch
