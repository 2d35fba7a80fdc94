#include "collectors/readers/byte_source.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "collectors/readers/bounded_queue.hpp"

namespace perfwatch {

namespace {

class MemorySource final : public ByteSource {
public:
    explicit MemorySource(std::string_view data) : m_data(data) {}
    Result<std::size_t> read(char* buffer, std::size_t n) override {
        const std::size_t k = std::min(n, m_data.size() - m_pos);
        std::memcpy(buffer, m_data.data() + m_pos, k);
        m_pos += k;
        return k;
    }
    std::uint64_t size_hint() const override { return m_data.size(); }

private:
    std::string_view m_data;
    std::size_t m_pos = 0;
};

class GzipSource final : public ByteSource {
public:
    GzipSource(std::string path, ByteSource& in, InflateLimits limits, std::unique_ptr<ByteSource> owned = nullptr)
        : m_path(std::move(path)), m_owned(std::move(owned)), m_in(in), m_limits(limits) {
        m_ok = inflateInit2(&m_z, 15 + 32) == Z_OK;  // gzip or zlib header, detected
    }
    ~GzipSource() override { inflateEnd(&m_z); }
    std::uint64_t size_hint() const override { return m_in.size_hint(); }

    Result<std::size_t> read(char* buffer, std::size_t n) override {
        if (!m_ok) return fail(m_path, 0, "cannot initialise gzip decompression");
        if (m_done || n == 0) return std::size_t{0};
        m_z.next_out = reinterpret_cast<Bytef*>(buffer);
        m_z.avail_out = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
        while (m_z.avail_out > 0) {
            if (m_z.avail_in == 0 && !m_input_end) {
                auto got = m_in.read(m_input.data(), m_input.size());
                if (!got) return std::unexpected(got.error());
                if (*got == 0) m_input_end = true;
                m_z.next_in = reinterpret_cast<Bytef*>(m_input.data());
                m_z.avail_in = static_cast<uInt>(*got);
                m_consumed += *got;
            }
            const int rc = inflate(&m_z, Z_NO_FLUSH);
            if (rc == Z_STREAM_END) {
                // Concatenated gzip members continue; otherwise this is the end.
                if (m_z.avail_in == 0 && !more_input()) {
                    m_done = true;
                    break;
                }
                inflateReset(&m_z);
                continue;
            }
            if (rc == Z_BUF_ERROR && m_z.avail_in == 0 && m_input_end)
                return fail_at_offset(m_path, m_consumed,
                                      "truncated gzip stream: the compressed data ends before the end of the stream");
            if (rc != Z_OK && rc != Z_BUF_ERROR)
                return fail_at_offset(m_path, m_consumed - m_z.avail_in,
                                      fmt::format("corrupt gzip data ({})", m_z.msg ? m_z.msg : "inflate error"));
        }
        const std::size_t produced = n - m_z.avail_out;
        m_out += produced;
        if (m_out > m_limits.max_output)
            return fail(m_path, 0, fmt::format("decompressed size exceeds {} bytes: refusing (gzip bomb?)",
                                               m_limits.max_output));
        const double in = static_cast<double>(std::max<std::uint64_t>(m_consumed - m_z.avail_in, 1));
        if (m_out > (64u << 20) && static_cast<double>(m_out) / in > m_limits.max_ratio)
            return fail(m_path, 0, fmt::format("decompression ratio above {:.0f}:1: refusing (gzip bomb?)",
                                               m_limits.max_ratio));
        return produced;
    }

private:
    // After a member ends with no buffered input: is there another member?
    bool more_input() {
        if (m_input_end) return false;
        auto got = m_in.read(m_input.data(), m_input.size());
        if (!got || *got == 0) {
            m_input_end = true;
            return false;
        }
        m_z.next_in = reinterpret_cast<Bytef*>(m_input.data());
        m_z.avail_in = static_cast<uInt>(*got);
        m_consumed += *got;
        return true;
    }

    std::string m_path;
    std::unique_ptr<ByteSource> m_owned;
    ByteSource& m_in;
    InflateLimits m_limits;
    std::vector<char> m_input = std::vector<char>(1 << 18);
    z_stream m_z{};
    bool m_ok = false;
    bool m_done = false;
    bool m_input_end = false;
    std::uint64_t m_consumed = 0;
    std::uint64_t m_out = 0;
};

std::string hex(const unsigned char* digest, unsigned int len) {
    static constexpr char k_digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(len * 2);
    for (unsigned int i = 0; i < len; ++i) {
        out += k_digits[digest[i] >> 4];
        out += k_digits[digest[i] & 15];
    }
    return out;
}

}  // namespace

using ChunkQueue = BoundedQueue<std::vector<char>>;

// SHA-256 of the bytes handed out. For a large file the hashing runs on a thread of its own beside
// the parsing, started by the first bytes: each chunk read is copied to a queue of at most four
// chunks (bounded memory) that the thread hashes in order; a small file is hashed as it is read.
class FileSource::Hash {
public:
    explicit Hash(bool beside) : m_beside(beside) { EVP_DigestInit_ex(m_ctx.get(), EVP_sha256(), nullptr); }
    ~Hash() { stop(); }

    // From now on the bytes are hashed as they are read (before the first bytes: no thread is made).
    void where_read() {
        if (!m_thread.joinable()) m_beside = false;
    }

    void update(const char* data, std::size_t n) {
        if (n == 0) return;
        if (!m_beside) {
            EVP_DigestUpdate(m_ctx.get(), data, n);
            return;
        }
        if (!m_thread.joinable()) m_thread = std::thread([this] {
            pthread_setname_np(pthread_self(), "pw-sha256");
            while (auto chunk = m_queue.pop()) {
                EVP_DigestUpdate(m_ctx.get(), chunk->data(), chunk->size());
                m_queue.recycle(std::move(*chunk));
            }
        });
        std::vector<char> chunk = m_queue.spare();
        chunk.assign(data, data + n);
        m_queue.push(std::move(chunk));
    }

    std::string hex_digest() {
        stop();
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        EVP_DigestFinal_ex(m_ctx.get(), digest, &len);
        return hex(digest, len);
    }

private:
    // Hashes what is queued and ends the thread.
    void stop() {
        if (!m_thread.joinable()) return;
        m_queue.close();
        m_thread.join();
    }

    bool m_beside;
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> m_ctx{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
    ChunkQueue m_queue{4};
    std::thread m_thread;
};

FileSource::FileSource(std::string path, int fd, std::uint64_t size)
    : m_path(std::move(path)), m_fd(fd), m_size(size), m_hash(std::make_unique<Hash>(size >= k_hash_beside_bytes)) {}

FileSource::~FileSource() {
    m_hash.reset();
    ::close(m_fd);
}

void FileSource::hash_where_read() { m_hash->where_read(); }

Result<std::unique_ptr<FileSource>> FileSource::open(const std::string& path) {
    // Non-blocking: opening a FIFO for reading would otherwise wait for a writer.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return fail(path, 0, fmt::format("cannot open: {}", std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        return fail(path, 0, fmt::format("cannot stat: {}", std::strerror(err)));
    }
    if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        return fail(path, 0, "is a directory, expected a file");
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return fail(path, 0, "is not a regular file (a FIFO, socket or device), expected a report file");
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return std::unique_ptr<FileSource>(new FileSource(path, fd, static_cast<std::uint64_t>(st.st_size)));
}

Result<std::size_t> FileSource::read(char* buffer, std::size_t n) {
    ssize_t got;
    do {
        got = ::read(m_fd, buffer, n);
    } while (got < 0 && errno == EINTR);
    if (got < 0) return fail_at_offset(m_path, m_offset, fmt::format("read error: {}", std::strerror(errno)));
    const auto k = static_cast<std::size_t>(got);
    if (k == 0 && n > 0 && m_offset != m_size) {
        return fail_at_offset(
            m_path, m_offset,
            m_offset < m_size
                ? fmt::format("the file shrank from {} to {} bytes while being read (truncated or replaced by "
                              "another process?)",
                              m_size, m_offset)
                : fmt::format("the file grew from {} to {} bytes while being read (still being written?)", m_size,
                              m_offset));
    }
    m_hash->update(buffer, k);
    m_offset += k;
    return k;
}

Result<std::string> FileSource::head(std::size_t n) const {
    std::string out;
    std::optional<Error> error;
    // Not zeroed first (a reader process forked per report pays a page fault for each page it writes).
    out.resize_and_overwrite(n, [&](char* data, std::size_t size) {
        std::size_t filled = 0;
        while (filled < size) {
            const ssize_t got = ::pread(m_fd, data + filled, size - filled, static_cast<off_t>(filled));
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) {
                error = fail(m_path, 0, fmt::format("read error: {}", std::strerror(errno))).error();
                break;
            }
            if (got == 0) break;
            filled += static_cast<std::size_t>(got);
        }
        return filled;
    });
    if (error) return std::unexpected(std::move(*error));
    return out;
}

Result<std::string> FileSource::finish_sha256() {
    // Not zeroed: a reader process forked per report pays a page fault for each page it writes.
    constexpr std::size_t k_size = 1 << 20;
    const auto buf = std::make_unique_for_overwrite<char[]>(k_size);
    while (true) {
        auto got = read(buf.get(), k_size);
        if (!got) return std::unexpected(got.error());
        if (*got == 0) break;
    }
    return m_hash->hex_digest();
}

std::string sha256_hex(std::string_view data) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
    return hex(digest, len);
}

Result<std::string> sha256_file(const std::string& path) {
    auto file = FileSource::open(path);
    if (!file) return std::unexpected(file.error());
    return (*file)->finish_sha256();
}

namespace {

// `inner` read on a thread of its own into a queue of a few chunks; read() hands them out in
// order. The first error `inner` gives comes back at its place in the stream.
class ReadAheadSource final : public ByteSource {
public:
    explicit ReadAheadSource(std::unique_ptr<ByteSource> inner) : m_inner(std::move(inner)) {
        m_thread = std::thread([this] {
            pthread_setname_np(pthread_self(), "pw-read-ahead");
            produce();
        });
    }
    ~ReadAheadSource() override {
        m_queue.close();
        m_thread.join();
    }

    Result<std::size_t> read(char* buffer, std::size_t n) override {
        if (n == 0) return std::size_t{0};
        while (m_taken == m_current.size()) {
            if (!m_current.empty()) m_queue.recycle(std::move(m_current));
            m_taken = 0;
            auto next = m_queue.pop();
            if (!next) {
                m_current.clear();
                // Written before the queue closed, which pop() saw.
                if (m_error) return std::unexpected(*m_error);
                return std::size_t{0};
            }
            m_current = std::move(*next);
        }
        const std::size_t k = std::min(n, m_current.size() - m_taken);
        std::memcpy(buffer, m_current.data() + m_taken, k);
        m_taken += k;
        return k;
    }

    std::uint64_t size_hint() const override { return m_inner->size_hint(); }

private:
    static constexpr std::size_t k_chunk = 1 << 20;

    void produce() {
        while (true) {
            std::vector<char> chunk = m_queue.spare();
            chunk.resize(k_chunk);
            auto got = m_inner->read(chunk.data(), chunk.size());
            if (!got || *got == 0) {
                if (!got) m_error = got.error();
                m_queue.close();
                return;
            }
            chunk.resize(*got);
            if (!m_queue.push(std::move(chunk))) return;  // closed: the reader is gone
        }
    }

    std::unique_ptr<ByteSource> m_inner;
    ChunkQueue m_queue{4};
    std::vector<char> m_current;  // the chunk being handed out (reader side only)
    std::size_t m_taken = 0;
    std::optional<Error> m_error;  // set by the thread before it closes the queue
    std::thread m_thread;
};

}  // namespace

std::unique_ptr<ByteSource> read_ahead(std::unique_ptr<ByteSource> inner) {
    return std::make_unique<ReadAheadSource>(std::move(inner));
}

namespace {

class BorrowedSource final : public ByteSource {
public:
    explicit BorrowedSource(ByteSource& inner) : m_inner(inner) {}
    Result<std::size_t> read(char* buffer, std::size_t n) override { return m_inner.read(buffer, n); }
    std::uint64_t size_hint() const override { return m_inner.size_hint(); }

private:
    ByteSource& m_inner;
};

}  // namespace

std::unique_ptr<ByteSource> borrow(ByteSource& inner) { return std::make_unique<BorrowedSource>(inner); }

bool is_gzip(std::string_view data) {
    return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f && static_cast<unsigned char>(data[1]) == 0x8b;
}

std::unique_ptr<ByteSource> gunzip(const std::string& path, ByteSource& compressed, InflateLimits limits) {
    return std::make_unique<GzipSource>(path, compressed, limits);
}

std::unique_ptr<ByteSource> open_source(const std::string& path, std::string_view data, InflateLimits limits) {
    auto memory = std::make_unique<MemorySource>(data);
    if (!is_gzip(data)) return memory;
    ByteSource& in = *memory;
    return std::make_unique<GzipSource>(path, in, limits, std::move(memory));
}

std::string sniff_prefix(std::string_view data, std::size_t max_bytes) {
    if (!is_gzip(data)) return std::string(data.substr(0, std::min(data.size(), max_bytes)));
    auto src = open_source("", data);
    std::string out;
    // (Not zeroed first: only what is read in is kept.)
    out.resize_and_overwrite(max_bytes, [&](char* buf, std::size_t size) {
        std::size_t filled = 0;
        while (filled < size) {
            auto r = src->read(buf + filled, size - filled);
            if (!r || *r == 0) break;
            filled += *r;
        }
        return filled;
    });
    return out;
}

Result<std::string> read_rest(ByteSource& source) {
    std::string out;
    std::size_t filled = 0;
    while (true) {
        if (out.size() - filled < (1 << 20))
            out.resize_and_overwrite(std::max<std::size_t>(out.size() * 2, filled + (1 << 20)),
                                     [](char*, std::size_t n) { return n; });  // grown, not zeroed
        auto r = source.read(out.data() + filled, out.size() - filled);
        if (!r) return std::unexpected(r.error());
        if (*r == 0) break;
        filled += *r;
    }
    out.resize(filled);
    return out;
}

Result<std::string> read_all(const std::string& path, std::string_view data, InflateLimits limits) {
    if (!is_gzip(data)) return std::string(data);
    return read_rest(*open_source(path, data, limits));
}

}  // namespace perfwatch
