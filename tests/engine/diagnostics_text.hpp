#pragma once

#include <string>
#include <vector>

#include "engine/rules.hpp"

namespace perfwatch {

// All diagnostics as printed, one per line, for test failure messages.
inline std::string all(const std::vector<Diagnostic>& ds) {
    std::string out;
    for (const Diagnostic& d : ds) out += d.to_string() + "\n";
    return out;
}

}  // namespace perfwatch
