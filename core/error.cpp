#include "core/error.hpp"

#include <fmt/format.h>

namespace perfwatch {

std::string_view to_string(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::report: return "report";
        case ErrorKind::database: return "database";
        case ErrorKind::internal: return "internal";
        case ErrorKind::reader_died: return "reader died";
    }
    return "internal";
}

std::string Error::to_string() const {
    if (line > 0) return fmt::format("{}:{}: {}", file, line, message);
    if (has_offset) return fmt::format("{}: offset {}: {}", file, offset, message);
    if (file.empty()) return message;
    return fmt::format("{}: {}", file, message);
}

}  // namespace perfwatch
