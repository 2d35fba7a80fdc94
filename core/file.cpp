#include "core/file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace perfwatch {

Result<std::string> read_whole_file(const std::string& path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (std::filesystem::is_directory(status)) return fail(path, 0, "is a directory, expected a file");
    // A FIFO would block the reader until some writer appears; devices and sockets are no files.
    if (!ec && !std::filesystem::is_regular_file(status))
        return fail(path, 0, "is not a regular file (a FIFO, socket or device), expected a file");
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(path, 0, fmt::format("cannot open: {}", std::strerror(errno)));
    std::ostringstream buf;
    buf << in.rdbuf();
    if (in.bad()) return fail(path, 0, fmt::format("read error: {}", std::strerror(errno)));
    return std::move(buf).str();
}

}  // namespace perfwatch
