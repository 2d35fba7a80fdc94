#pragma once

#include <string>

#include "core/error.hpp"

namespace perfwatch {

// The bytes of a whole file; an Error naming the file and why (a directory, cannot open, read
// error) otherwise.
Result<std::string> read_whole_file(const std::string& path);

}  // namespace perfwatch
