#include "collectors/byte_source.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

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

private:
    std::string_view m_data;
    std::size_t m_pos = 0;
};

class GzipSource final : public ByteSource {
public:
    GzipSource(std::string path, std::string_view data, InflateLimits limits)
        : m_path(std::move(path)), m_data(data), m_limits(limits) {
        m_ok = inflateInit2(&m_z, 15 + 32) == Z_OK;  // gzip or zlib header, detected
        m_z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
        m_z.avail_in = 0;
    }
    ~GzipSource() override { inflateEnd(&m_z); }

    Result<std::size_t> read(char* buffer, std::size_t n) override {
        if (!m_ok) return fail(m_path, 0, "cannot initialise gzip decompression");
        if (m_done || n == 0) return std::size_t{0};
        m_z.next_out = reinterpret_cast<Bytef*>(buffer);
        m_z.avail_out = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
        while (m_z.avail_out > 0) {
            if (m_z.avail_in == 0 && m_consumed < m_data.size()) {
                const std::size_t chunk = std::min<std::size_t>(m_data.size() - m_consumed, 1u << 20);
                m_z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(m_data.data() + m_consumed));
                m_z.avail_in = static_cast<uInt>(chunk);
                m_consumed += chunk;
            }
            const int rc = inflate(&m_z, Z_NO_FLUSH);
            if (rc == Z_STREAM_END) {
                // Concatenated gzip members continue; otherwise this is the end.
                if (m_z.avail_in == 0 && m_consumed >= m_data.size()) {
                    m_done = true;
                    break;
                }
                inflateReset(&m_z);
                continue;
            }
            if (rc == Z_BUF_ERROR && m_z.avail_in == 0 && m_consumed >= m_data.size())
                return fail_at_offset(m_path, m_data.size(),
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
        const double in = static_cast<double>(std::max<std::size_t>(m_consumed - m_z.avail_in, 1));
        if (m_out > (64u << 20) && static_cast<double>(m_out) / in > m_limits.max_ratio)
            return fail(m_path, 0, fmt::format("decompression ratio above {:.0f}:1: refusing (gzip bomb?)",
                                               m_limits.max_ratio));
        return produced;
    }

private:
    std::string m_path;
    std::string_view m_data;
    InflateLimits m_limits;
    z_stream m_z{};
    bool m_ok = false;
    bool m_done = false;
    std::size_t m_consumed = 0;
    std::uint64_t m_out = 0;
};

}  // namespace

bool is_gzip(std::string_view data) {
    return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f && static_cast<unsigned char>(data[1]) == 0x8b;
}

std::unique_ptr<ByteSource> open_source(const std::string& path, std::string_view data, InflateLimits limits) {
    if (is_gzip(data)) return std::make_unique<GzipSource>(path, data, limits);
    return std::make_unique<MemorySource>(data);
}

std::string sniff_prefix(std::string_view data, std::size_t max_bytes) {
    if (!is_gzip(data)) return std::string(data.substr(0, std::min(data.size(), max_bytes)));
    GzipSource src("", data, InflateLimits{});
    std::string out(max_bytes, '\0');
    std::size_t filled = 0;
    while (filled < max_bytes) {
        auto r = src.read(out.data() + filled, max_bytes - filled);
        if (!r || *r == 0) break;
        filled += *r;
    }
    out.resize(filled);
    return out;
}

Result<std::string> read_all(const std::string& path, std::string_view data, InflateLimits limits) {
    if (!is_gzip(data)) return std::string(data);
    GzipSource src(path, data, limits);
    std::string out;
    std::string chunk(1 << 20, '\0');
    while (true) {
        auto r = src.read(chunk.data(), chunk.size());
        if (!r) return std::unexpected(r.error());
        if (*r == 0) break;
        out.append(chunk.data(), *r);
    }
    return out;
}

}  // namespace perfwatch
