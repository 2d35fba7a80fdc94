#include "collectors/readers/text_encoding.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace perfwatch {

namespace {

constexpr std::size_t k_sniff_units = 64;  // UTF-16 code units looked at without a BOM

// UTF-16 without a BOM: the first code units are printable ASCII or line ends, NUL in the high
// byte (`high` is 1 for little-endian, 0 for big-endian).
bool looks_utf16(std::string_view head, std::size_t high) {
    const std::size_t units = std::min(head.size() / 2, k_sniff_units);
    if (units < 4) return false;
    for (std::size_t i = 0; i < units; ++i) {
        const auto hi = static_cast<unsigned char>(head[2 * i + high]);
        const auto lo = static_cast<unsigned char>(head[2 * i + 1 - high]);
        if (hi != 0 || lo == 0 || lo > 0x7e || (lo < 0x20 && lo != '\n' && lo != '\r' && lo != '\t')) return false;
    }
    return true;
}

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
        out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
}

constexpr std::uint32_t k_replacement = 0xfffd;

// Decodes UTF-16 code units into UTF-8, keeping a high surrogate that waits for its pair.
class Utf16Decoder {
public:
    explicit Utf16Decoder(bool big_endian) : m_big_endian(big_endian) {}

    // Decodes the whole code units of `data`; returns how many bytes it used (even).
    std::size_t decode(std::string_view data, std::string& out) {
        const std::size_t whole = data.size() & ~std::size_t{1};
        for (std::size_t i = 0; i < whole; i += 2) {
            const auto a = static_cast<unsigned char>(data[i]), b = static_cast<unsigned char>(data[i + 1]);
            const std::uint32_t unit = m_big_endian ? (std::uint32_t{a} << 8 | b) : (std::uint32_t{b} << 8 | a);
            if (m_high != 0) {
                if (unit >= 0xdc00 && unit <= 0xdfff) {
                    append_utf8(out, 0x10000 + ((m_high - 0xd800) << 10) + (unit - 0xdc00));
                    m_high = 0;
                    continue;
                }
                append_utf8(out, k_replacement);
                m_high = 0;
            }
            if (unit >= 0xd800 && unit <= 0xdbff) m_high = unit;
            else if (unit >= 0xdc00 && unit <= 0xdfff) append_utf8(out, k_replacement);
            else append_utf8(out, unit);
        }
        return whole;
    }
    // At the end: a surrogate left alone becomes U+FFFD.
    void finish(std::string& out) {
        if (m_high != 0) append_utf8(out, k_replacement);
        m_high = 0;
    }

private:
    bool m_big_endian;
    std::uint32_t m_high = 0;
};

std::size_t bom_size(TextEncoding encoding, std::string_view head) {
    switch (encoding) {
    case TextEncoding::utf8_bom: return 3;
    case TextEncoding::utf16le: return head.starts_with("\xff\xfe") ? 2 : 0;
    case TextEncoding::utf16be: return head.starts_with("\xfe\xff") ? 2 : 0;
    case TextEncoding::plain:
    case TextEncoding::cr_lines: return 0;
    }
    return 0;
}

// The first `count` bytes of `data` into `out`, each bare CR as LF (a CR before an LF dropped, the
// LF kept; `data` may hold one byte past `count` to tell).
void cr_to_lf(std::string_view data, std::size_t count, std::string& out) {
    out.reserve(out.size() + count);
    for (std::size_t i = 0; i < count; ++i) {
        if (data[i] != '\r') out.push_back(data[i]);
        else if (i + 1 >= data.size() || data[i + 1] != '\n') out.push_back('\n');
    }
}

class Utf8Source final : public ByteSource {
public:
    Utf8Source(ByteSource& inner, TextEncoding encoding)
        : m_inner(inner), m_encoding(encoding), m_decoder(encoding == TextEncoding::utf16be), m_in(k_chunk) {}

    Result<std::size_t> read(char* buffer, std::size_t n) override {
        while (m_out_pos == m_out.size()) {
            if (m_done) return std::size_t{0};
            if (auto r = refill(); !r) return std::unexpected(r.error());
        }
        const std::size_t take = std::min(n, m_out.size() - m_out_pos);
        std::memcpy(buffer, m_out.data() + m_out_pos, take);
        m_out_pos += take;
        return take;
    }
    std::uint64_t size_hint() const override { return m_inner.size_hint(); }

private:
    static constexpr std::size_t k_chunk = 1 << 16;

    Result<void> refill() {
        m_out.clear();
        m_out_pos = 0;
        auto got = m_inner.read(m_in.data() + m_kept, m_in.size() - m_kept);
        if (!got) return std::unexpected(got.error());
        std::size_t have = m_kept + *got;
        std::string_view data(m_in.data(), have);
        if (m_first) {
            // The BOM is read once the first bytes are in (a read may return fewer).
            if (have < 3 && *got != 0) {
                m_kept = have;
                return {};
            }
            m_first = false;
            data.remove_prefix(std::min(data.size(), bom_size(m_encoding, data)));
        }
        if (m_encoding == TextEncoding::utf8_bom) {
            m_out.assign(data);
            m_kept = 0;
        } else if (m_encoding == TextEncoding::cr_lines) {
            // A CR last may be a CRLF's start: kept for the next read, unless the input ended.
            const std::size_t end = *got != 0 && !data.empty() && data.back() == '\r' ? data.size() - 1 : data.size();
            cr_to_lf(data.substr(0, end + (end < data.size() ? 1 : 0)), end, m_out);
            m_kept = data.size() - end;
            if (m_kept > 0) std::memmove(m_in.data(), data.data() + end, m_kept);
        } else {
            const std::size_t used = m_decoder.decode(data, m_out);
            m_kept = data.size() - used;
            if (m_kept > 0) std::memmove(m_in.data(), data.data() + used, m_kept);
        }
        if (*got == 0) {
            if (m_kept > 0) append_utf8(m_out, k_replacement);  // a lone last byte
            m_kept = 0;
            m_decoder.finish(m_out);
            m_done = true;
        }
        return {};
    }

    ByteSource& m_inner;
    TextEncoding m_encoding;
    Utf16Decoder m_decoder;
    std::vector<char> m_in;
    std::size_t m_kept = 0;  // bytes of m_in carried to the next read (an odd byte, the BOM's start)
    std::string m_out;
    std::size_t m_out_pos = 0;
    bool m_first = true;
    bool m_done = false;
};

}  // namespace

TextEncoding text_encoding(std::string_view head) {
    if (head.starts_with("\xef\xbb\xbf")) return TextEncoding::utf8_bom;
    if (head.starts_with("\xff\xfe")) return TextEncoding::utf16le;
    if (head.starts_with("\xfe\xff")) return TextEncoding::utf16be;
    if (looks_utf16(head, 1)) return TextEncoding::utf16le;
    if (looks_utf16(head, 0)) return TextEncoding::utf16be;
    if (head.find('\r') != std::string_view::npos && head.find('\n') == std::string_view::npos &&
        head.find('\0') == std::string_view::npos)
        return TextEncoding::cr_lines;
    return TextEncoding::plain;
}

std::string_view encoding_name(TextEncoding encoding) {
    switch (encoding) {
    case TextEncoding::plain: return "UTF-8";
    case TextEncoding::utf8_bom: return "UTF-8 with BOM";
    case TextEncoding::utf16le: return "UTF-16LE";
    case TextEncoding::utf16be: return "UTF-16BE";
    case TextEncoding::cr_lines: return "UTF-8 with bare CR line ends";
    }
    return "UTF-8";
}

std::unique_ptr<ByteSource> to_utf8(ByteSource& inner, TextEncoding encoding) {
    return std::make_unique<Utf8Source>(inner, encoding);
}

std::string to_utf8(std::string_view text, TextEncoding encoding) {
    text.remove_prefix(std::min(text.size(), bom_size(encoding, text)));
    if (encoding == TextEncoding::plain || encoding == TextEncoding::utf8_bom) return std::string(text);
    if (encoding == TextEncoding::cr_lines) {
        std::string out;
        cr_to_lf(text, text.size(), out);
        return out;
    }
    std::string out;
    out.reserve(text.size() / 2 + 16);
    Utf16Decoder decoder(encoding == TextEncoding::utf16be);
    decoder.decode(text, out);
    return out;
}

}  // namespace perfwatch
