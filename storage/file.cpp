#include "storage/file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace perfwatch {

Result<std::string> read_whole_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return fail(path, 0, "is a directory, expected a file");
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(path, 0, fmt::format("cannot open: {}", std::strerror(errno)));
    std::ostringstream buf;
    buf << in.rdbuf();
    if (in.bad()) return fail(path, 0, fmt::format("read error: {}", std::strerror(errno)));
    return std::move(buf).str();
}

}  // namespace perfwatch
