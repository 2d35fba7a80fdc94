#pragma once

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace perfwatch {

// Limits on decompressed size, against gzip bombs.
struct InflateLimits {
    std::uint64_t max_output = 64ULL << 30;  // bytes
    double max_ratio = 1000;                 // output / input, checked past 64 MiB of output
};

bool is_gzip(std::string_view data);

// A stream of bytes read in chunks: memory, a file, or gzip inflated on the fly.
class ByteSource {
public:
    virtual ~ByteSource() = default;
    // Reads up to `n` bytes; 0 at the end. Errors name the problem and the input offset.
    virtual Result<std::size_t> read(char* buffer, std::size_t n) = 0;
    // About how many bytes the source holds, at least (a compressed source: its input's size);
    // 0 when it cannot tell. For choosing how to read it, never for correctness.
    virtual std::uint64_t size_hint() const { return 0; }
};

// A report file read from the start with read(2), in the caller's chunks, never whole. It hashes
// every byte it hands out (SHA-256; a large file on a thread beside the reader) and, at the end,
// fails when the file shrank or grew while it was read (truncated or still being written by
// another process). A file deleted while being read is read to its end: the open descriptor keeps
// its content.
class FileSource final : public ByteSource {
public:
    // Opens `path` for reading: errors for a missing, unreadable or non-regular file.
    static Result<std::unique_ptr<FileSource>> open(const std::string& path);
    ~FileSource() override;

    Result<std::size_t> read(char* buffer, std::size_t n) override;
    std::uint64_t size_hint() const override { return m_size; }
    // Up to `n` bytes from the start of the file, without moving the read position.
    Result<std::string> head(std::size_t n) const;
    // Reads what was not read yet and returns the lower-case hex SHA-256 of the whole file.
    Result<std::string> finish_sha256();
    std::uint64_t size_at_open() const { return m_size; }
    // Hashes on the thread that reads, whatever the size: for a file read on a helper thread
    // already (read_ahead), where a hashing thread would only take the other core's time and a
    // copy of each chunk. Call before the first read.
    void hash_where_read();

    // Files from this size on are hashed on a thread beside the reader.
    static constexpr std::uint64_t k_hash_beside_bytes = 8 << 20;

private:
    FileSource(std::string path, int fd, std::uint64_t size);

    std::string m_path;
    int m_fd;
    std::uint64_t m_size;
    std::uint64_t m_offset = 0;
    class Hash;
    std::unique_ptr<Hash> m_hash;
};

// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

// Lower-case hex SHA-256 of a file's bytes, read in chunks (a FileSource read to its end).
Result<std::string> sha256_file(const std::string& path);

// Decompresses gzip (or zlib) read from `compressed`, with the limits. `compressed` must outlive it.
std::unique_ptr<ByteSource> gunzip(const std::string& path, ByteSource& compressed, InflateLimits limits = {});

// `inner` read ahead on a thread of its own (a few 1 MB chunks), so that what it does (reading, inflating)
// runs beside what its reader does. Errors come back where they happened in the stream. The
// thread stops when the result is destroyed; `inner`'s own input must outlive it.
std::unique_ptr<ByteSource> read_ahead(std::unique_ptr<ByteSource> inner);

// A source that reads from `inner` without owning it (`inner` must outlive it).
std::unique_ptr<ByteSource> borrow(ByteSource& inner);

// Plain bytes, or gzip when `data` starts with the gzip magic.
std::unique_ptr<ByteSource> open_source(const std::string& path, std::string_view data, InflateLimits limits = {});

// The first `max_bytes` of the data, decompressed when it is gzip (for format detection);
// empty when it cannot be inflated.
std::string sniff_prefix(std::string_view data, std::size_t max_bytes);

// Everything `source` still holds.
Result<std::string> read_rest(ByteSource& source);

// The whole content, decompressed when it is gzip (with the limits).
Result<std::string> read_all(const std::string& path, std::string_view data, InflateLimits limits = {});

}  // namespace perfwatch
