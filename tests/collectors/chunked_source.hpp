#pragma once

#include <algorithm>
#include <cstring>
#include <string_view>

#include "collectors/readers/byte_source.hpp"

namespace perfwatch::test {

// Bytes of `data` handed out at most `chunk` at a time (a reader must not care where reads end).
class ChunkedSource final : public ByteSource {
public:
    ChunkedSource(std::string_view data, std::size_t chunk) : m_data(data), m_chunk(chunk) {}
    Result<std::size_t> read(char* buffer, std::size_t n) override {
        const std::size_t k = std::min({n, m_chunk, m_data.size() - m_pos});
        std::memcpy(buffer, m_data.data() + m_pos, k);
        m_pos += k;
        return k;
    }

private:
    std::string_view m_data;
    std::size_t m_chunk, m_pos = 0;
};

}  // namespace perfwatch::test
