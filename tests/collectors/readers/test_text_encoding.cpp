#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>

#include "collectors/collector.hpp"
#include "collectors/readers/text_encoding.hpp"
#include "tests/collectors/ncu_helpers.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

// Hands out its bytes in pieces of 1 to 5 bytes, so that code units and the BOM are cut.
class PieceSource final : public ByteSource {
public:
    explicit PieceSource(std::string data) : m_data(std::move(data)) {}
    Result<std::size_t> read(char* buffer, std::size_t n) override {
        const std::size_t take = std::min({n, m_data.size() - m_pos, m_next});
        std::memcpy(buffer, m_data.data() + m_pos, take);
        m_pos += take;
        m_next = m_next % 5 + 1;
        return take;
    }

private:
    std::string m_data;
    std::size_t m_pos = 0, m_next = 1;
};

std::string drain(ByteSource& s) {
    std::string out;
    char buf[3];
    while (true) {
        auto got = s.read(buf, sizeof buf);
        EXPECT_TRUE(got.has_value());
        if (!got || *got == 0) return out;
        out.append(buf, *got);
    }
}

// UTF-16 code units of `units` in either byte order.
std::string utf16(std::initializer_list<unsigned> units, bool big_endian) {
    std::string out;
    for (unsigned u : units) {
        const char hi = static_cast<char>(u >> 8), lo = static_cast<char>(u & 0xff);
        out += big_endian ? std::string{hi, lo} : std::string{lo, hi};
    }
    return out;
}

// Entity by entity and metric by metric, the same run.
void expect_same_run(const RunBatch& a, const RunBatch& b) {
    EXPECT_EQ(a.format, b.format);
    ASSERT_EQ(a.entities.size(), b.entities.size());
    for (std::size_t i = 0; i < a.entities.size(); ++i) {
        const Entity &x = a.entities[i], &y = b.entities[i];
        EXPECT_EQ(x.kind, y.kind);
        EXPECT_EQ(x.name, y.name);
        ASSERT_EQ(x.metrics.size(), y.metrics.size()) << x.name;
        for (const Metric& m : x.metrics) {
            const std::string name(m.name().view());
            EXPECT_EQ(x.value(name), y.value(name)) << x.name << " " << name;
        }
    }
}

}  // namespace

TEST(TextEncoding, ByteOrderMarksAndBomlessUtf16AreTold) {
    EXPECT_EQ(text_encoding("\xef\xbb\xbf" "ID,Kernel"), TextEncoding::utf8_bom);
    EXPECT_EQ(text_encoding(std::string("\xff\xfe=\0=\0", 6)), TextEncoding::utf16le);
    EXPECT_EQ(text_encoding(std::string("\xfe\xff\0=\0=", 6)), TextEncoding::utf16be);
    EXPECT_EQ(text_encoding(utf16({'=', '=', 'P', 'R', 'O', 'F'}, false)), TextEncoding::utf16le);
    EXPECT_EQ(text_encoding(utf16({'=', '=', 'P', 'R', 'O', 'F'}, true)), TextEncoding::utf16be);
    EXPECT_EQ(text_encoding("==PROF== Connected"), TextEncoding::plain);
    EXPECT_EQ(text_encoding(std::string("SQLite format 3\0", 16)), TextEncoding::plain);
}

// Streamed in pieces of 1 to 5 bytes: the BOM and code units cut across reads, a surrogate pair
// (U+1F680) whole, a lone high surrogate and an odd last byte each U+FFFD.
TEST(TextEncoding, Utf16IsStreamedAsUtf8AcrossCutCodeUnits) {
    for (const bool be : {false, true}) {
        const std::string bom = be ? "\xfe\xff" : "\xff\xfe";
        PieceSource whole(bom + utf16({'a', 0xd83d, 0xde80, 'b', 0xe9, '\r', '\n'}, be));
        EXPECT_EQ(drain(*to_utf8(whole, be ? TextEncoding::utf16be : TextEncoding::utf16le)),
                  "a\xf0\x9f\x9a\x80" "b\xc3\xa9\r\n");
        PieceSource broken(bom + utf16({'x', 0xd83d, 'y'}, be) + "z");
        EXPECT_EQ(drain(*to_utf8(broken, be ? TextEncoding::utf16be : TextEncoding::utf16le)),
                  "x\xef\xbf\xbdy\xef\xbf\xbd");
    }
    PieceSource bom8("\xef\xbb\xbfID,Kernel\n");
    EXPECT_EQ(drain(*to_utf8(bom8, TextEncoding::utf8_bom)), "ID,Kernel\n");
}

// ncu output captured by Windows PowerShell (`>` writes UTF-16LE with a BOM, CRLF; a PowerShell
// error record for ncu's stderr before the first kernel) reads as its UTF-8 twin: the same 3
// launches (counted here from the twin's kernel lines), kernels and metrics. The same text as
// UTF-16BE, as UTF-8 with a BOM and as UTF-16LE without one reads the same too.
TEST(TextEncoding, AUtf16LeLogEqualsItsUtf8Twin) {
    const std::string twin_path = fixture("ncu/powershell_utf8.txt");
    const std::string twin_text = read_file(twin_path);
    double launches = 0;
    std::istringstream in(twin_text);
    for (std::string line; std::getline(in, line);) launches += line.find(", Context ") != std::string::npos;
    ASSERT_EQ(launches, 3);

    const RunBatch twin = collect_ok(twin_path);
    EXPECT_EQ(twin.entities[0].value("launches").value_or(-1), launches);
    const RunBatch le = collect_ok(fixture("ncu/powershell_utf16le.txt"));
    expect_same_run(twin, le);
    EXPECT_NE(std::find(le.notes.begin(), le.notes.end(), "the report is UTF-16LE text, read as UTF-8"), le.notes.end());

    // The other encodings, written from the twin (ASCII and a few non-ASCII characters).
    const std::string le_bytes = read_file(fixture("ncu/powershell_utf16le.txt"));
    std::string be_bytes = "\xfe\xff";
    for (std::size_t i = 2; i + 1 < le_bytes.size(); i += 2) be_bytes += std::string{le_bytes[i + 1], le_bytes[i]};
    TempDir dir;
    write_file(dir.file("be.txt"), be_bytes);
    write_file(dir.file("bom8.txt"), "\xef\xbb\xbf" + twin_text);
    write_file(dir.file("le_no_bom.txt"), le_bytes.substr(2));
    for (const char* name : {"be.txt", "bom8.txt", "le_no_bom.txt"}) {
        SCOPED_TRACE(name);
        expect_same_run(twin, collect_ok(dir.file(name)));
    }
}

// Text whose lines end in a bare CR (an old Mac file, a terminal's progress output saved whole)
// reads as lines: streamed in cut pieces, a CRLF stays one line end; an ncu log written so reads
// as its LF twin, with a note. A head with an LF, or binary data, is not such text.
TEST(TextEncoding, BareCrLinesReadAsLines) {
    EXPECT_EQ(text_encoding("x\ry\r"), TextEncoding::cr_lines);
    EXPECT_EQ(text_encoding("x\r\ny\r"), TextEncoding::plain);
    EXPECT_EQ(text_encoding(std::string("SQLite format 3\0\r", 18)), TextEncoding::plain);
    PieceSource cr("a\rb\r\nc\r\rd\r");
    EXPECT_EQ(drain(*to_utf8(cr, TextEncoding::cr_lines)), "a\nb\nc\n\nd\n");
    EXPECT_EQ(to_utf8("a\rb\r\nc\r", TextEncoding::cr_lines), "a\nb\nc\n");

    const std::string twin_path = fixture("ncu/metrics_output.txt");
    std::string text = read_file(twin_path);
    ASSERT_EQ(text.find('\r'), std::string::npos);
    std::replace(text.begin(), text.end(), '\n', '\r');
    TempDir dir;
    write_file(dir.file("cr.txt"), text);
    const RunBatch twin = collect_ok(twin_path);
    const RunBatch cr_run = collect_ok(dir.file("cr.txt"));
    expect_same_run(twin, cr_run);
    EXPECT_NE(std::find(cr_run.notes.begin(), cr_run.notes.end(), "the report's lines end in a bare CR, read as lines"),
              cr_run.notes.end());
}

}  // namespace perfwatch::test
