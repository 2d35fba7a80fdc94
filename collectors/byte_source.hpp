#pragma once

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "storage/error.hpp"

namespace perfwatch {

// Limits on decompressed size, against gzip bombs.
struct InflateLimits {
    std::uint64_t max_output = 64ULL << 30;  // bytes
    double max_ratio = 1000;                 // output / input, checked past 64 MiB of output
};

bool is_gzip(std::string_view data);

// A stream of bytes read in chunks: plain memory or gzip inflated on the fly.
class ByteSource {
public:
    virtual ~ByteSource() = default;
    // Reads up to `n` bytes; 0 at the end. Errors name the problem and the input offset.
    virtual Result<std::size_t> read(char* buffer, std::size_t n) = 0;
};

// Plain bytes, or gzip when `data` starts with the gzip magic.
std::unique_ptr<ByteSource> open_source(const std::string& path, std::string_view data, InflateLimits limits = {});

// The first `max_bytes` of the data, decompressed when it is gzip (for format detection);
// empty when it cannot be inflated.
std::string sniff_prefix(std::string_view data, std::size_t max_bytes);

// The whole content, decompressed when it is gzip (with the limits).
Result<std::string> read_all(const std::string& path, std::string_view data, InflateLimits limits = {});

}  // namespace perfwatch
