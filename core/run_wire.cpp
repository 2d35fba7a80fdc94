#include "core/run_wire.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

namespace perfwatch {

namespace {

constexpr std::string_view k_magic = "PWRUN";
constexpr std::uint8_t k_version = 1;
enum class AnswerTag : std::uint8_t { runs = 1, error = 2 };
constexpr auto k_last_kind = static_cast<std::uint8_t>(EntityKind::op);
constexpr auto k_last_error_kind = static_cast<std::uint8_t>(ErrorKind::reader_died);

static_assert(std::endian::native == std::endian::little, "the wire format is written as the CPU holds it");

class Writer {
public:
    void u8(std::uint8_t v) { m_out.push_back(static_cast<char>(v)); }
    void u64(std::uint64_t v) { raw(&v, sizeof v); }
    void i64(std::int64_t v) { raw(&v, sizeof v); }
    void f64(double v) { raw(&v, sizeof v); }
    void text(std::string_view s) {
        u64(s.size());
        m_out.append(s);
    }
    void magic() {
        m_out.append(k_magic);
        u8(k_version);
    }
    std::string take() { return std::move(m_out); }

private:
    void raw(const void* p, std::size_t n) { m_out.append(static_cast<const char*>(p), n); }
    std::string m_out;
};

// Reads what Writer wrote; the first failure is kept and every later read returns a zero value.
class Reader {
public:
    explicit Reader(std::string_view bytes) : m_bytes(bytes) {}

    bool ok() const { return m_error.empty(); }
    const std::string& error() const { return m_error; }
    std::size_t offset() const { return m_at; }
    bool at_end() const { return m_at == m_bytes.size(); }

    std::uint8_t u8() {
        std::uint8_t v = 0;
        raw(&v, sizeof v);
        return v;
    }
    std::uint64_t u64() {
        std::uint64_t v = 0;
        raw(&v, sizeof v);
        return v;
    }
    std::int64_t i64() {
        std::int64_t v = 0;
        raw(&v, sizeof v);
        return v;
    }
    double f64() {
        double v = 0;
        raw(&v, sizeof v);
        return v;
    }
    std::string text() {
        const std::uint64_t n = u64();
        if (!ok()) return {};
        if (n > left()) return failed(fmt::format("a text of {} bytes where {} remain", n, left())), std::string();
        std::string s(m_bytes.substr(m_at, n));
        m_at += n;
        return s;
    }
    // A count of items each at least `min_bytes` long: never more than the bytes left can hold.
    std::size_t count(std::size_t min_bytes) {
        const std::uint64_t n = u64();
        if (!ok()) return 0;
        if (n > left() / min_bytes) return failed(fmt::format("a count of {} that {} bytes cannot hold", n, left())), 0;
        return static_cast<std::size_t>(n);
    }
    void failed(std::string why) {
        if (m_error.empty()) m_error = std::move(why);
    }

private:
    std::size_t left() const { return m_bytes.size() - m_at; }
    void raw(void* p, std::size_t n) {
        if (!ok()) return;
        if (n > left()) return failed(fmt::format("truncated: {} bytes needed, {} remain", n, left()));
        std::memcpy(p, m_bytes.data() + m_at, n);
        m_at += n;
    }

    std::string_view m_bytes;
    std::size_t m_at = 0;
    std::string m_error;
};

void write_entity(Writer& w, const Entity& e) {
    w.u8(static_cast<std::uint8_t>(e.kind));
    w.text(e.name);
    w.i64(e.parent);
    w.u64(e.metrics.size());
    for (const Metric& m : e.metrics) {
        w.text(m.name());
        w.text(m.unit());
        w.text(m.tool_name());
        w.text(m.tool_unit());
        w.f64(m.value);
    }
    w.u64(e.attributes.size());
    for (const auto& [k, v] : e.attributes) {
        w.text(k);
        w.text(v);
    }
    w.u64(e.tool_findings.size());
    for (const ToolFinding& f : e.tool_findings) {
        w.text(f.rule);
        w.text(f.type);
        w.text(f.section);
        w.text(f.text);
        w.text(f.speedup_type);
        w.u8(f.speedup_pct ? 1 : 0);
        w.f64(f.speedup_pct.value_or(0));
    }
    w.u64(e.samples.size());
    for (const auto& [k, values] : e.samples) {
        w.text(k);
        w.u64(values.size());
        for (double v : values) w.f64(v);
    }
}

void write_batch(Writer& w, const RunBatch& b) {
    w.text(b.source);
    w.text(b.sha256);
    w.text(b.format);
    w.text(b.format_detail);
    w.text(b.tool_version);
    w.u8(b.captured_at ? 1 : 0);
    w.text(b.captured_at.value_or(""));
    w.u64(b.labels.size());
    for (const auto& [k, v] : b.labels) {
        w.text(k);
        w.text(v);
    }
    w.u64(b.notes.size());
    for (const std::string& n : b.notes) w.text(n);
    w.u64(b.entities.size());
    for (const Entity& e : b.entities) write_entity(w, e);
}

bool flag(Reader& r) {
    const std::uint8_t v = r.u8();
    if (v > 1) r.failed(fmt::format("a flag of {}", v));
    return v == 1;
}

// The smallest encoded sizes, which bound every count against the bytes left.
constexpr std::size_t k_text_min = 8, k_metric_min = 4 * k_text_min + 8, k_entity_min = 1 + k_text_min + 8 + 4 * 8;

Entity read_entity(Reader& r) {
    Entity e;
    const std::uint8_t kind = r.u8();
    if (kind > k_last_kind) r.failed(fmt::format("an entity kind of {}", kind));
    e.kind = static_cast<EntityKind>(kind);
    e.name = r.text();
    e.parent = r.i64();
    const std::size_t metrics = r.count(k_metric_min);
    e.metrics.reserve(metrics);
    for (std::size_t i = 0; i < metrics && r.ok(); ++i) {
        std::string name = r.text(), unit = r.text(), tool_name = r.text(), tool_unit = r.text();
        const double value = r.f64();
        e.metrics.emplace_back(Symbol(name), value, Symbol(unit), Symbol(tool_name), Symbol(tool_unit));
    }
    // Metric names are unique within an entity (storage relies on it).
    std::vector<std::string_view> names;
    names.reserve(e.metrics.size());
    for (const Metric& m : e.metrics) names.push_back(m.name().view());
    std::sort(names.begin(), names.end());
    if (auto twice = std::adjacent_find(names.begin(), names.end()); twice != names.end())
        r.failed(fmt::format("metric '{}' twice in one entity", *twice));
    const std::size_t attributes = r.count(2 * k_text_min);
    for (std::size_t i = 0; i < attributes && r.ok(); ++i) {
        std::string k = r.text();
        std::string v = r.text();
        e.attributes[k] = std::move(v);
    }
    const std::size_t findings = r.count(5 * k_text_min + 9);
    for (std::size_t i = 0; i < findings && r.ok(); ++i) {
        ToolFinding f;
        f.rule = Symbol(r.text());
        f.type = Symbol(r.text());
        f.section = Symbol(r.text());
        f.text = r.text();
        f.speedup_type = Symbol(r.text());
        const bool has = flag(r);
        const double pct = r.f64();
        if (has) f.speedup_pct = pct;
        e.tool_findings.push_back(std::move(f));
    }
    const std::size_t samples = r.count(2 * 8);
    for (std::size_t i = 0; i < samples && r.ok(); ++i) {
        std::string k = r.text();
        const std::size_t n = r.count(8);
        std::vector<double> values;
        values.reserve(n);
        for (std::size_t j = 0; j < n && r.ok(); ++j) values.push_back(r.f64());
        e.samples[k] = std::move(values);
    }
    return e;
}

RunBatch read_batch(Reader& r) {
    RunBatch b;
    b.source = r.text();
    b.sha256 = r.text();
    b.format = r.text();
    b.format_detail = r.text();
    b.tool_version = r.text();
    const bool has_captured = flag(r);
    std::string captured = r.text();
    if (has_captured) b.captured_at = std::move(captured);
    const std::size_t labels = r.count(2 * k_text_min);
    for (std::size_t i = 0; i < labels && r.ok(); ++i) {
        std::string k = r.text();
        b.labels[k] = r.text();
    }
    const std::size_t notes = r.count(k_text_min);
    for (std::size_t i = 0; i < notes && r.ok(); ++i) b.notes.push_back(r.text());
    const std::size_t entities = r.count(k_entity_min);
    for (std::size_t i = 0; i < entities && r.ok(); ++i) b.entities.push_back(read_entity(r));
    if (!r.ok()) return b;
    // Parents point at an earlier or later entity of the same run, or nowhere.
    for (const Entity& e : b.entities)
        if (e.parent < -1 || e.parent >= static_cast<std::int64_t>(b.entities.size()))
            r.failed(fmt::format("entity '{}' has parent {} of {} entities", e.name, e.parent, b.entities.size()));
    if (std::count_if(b.entities.begin(), b.entities.end(), [](const Entity& e) { return e.kind == EntityKind::run; }) > 1)
        r.failed("a run with more than one run entity");
    return b;
}

}  // namespace

std::string encode_runs(const std::vector<RunBatch>& runs) {
    Writer w;
    w.magic();
    w.u8(static_cast<std::uint8_t>(AnswerTag::runs));
    w.u64(runs.size());
    for (const RunBatch& b : runs) write_batch(w, b);
    return w.take();
}

std::string encode_error(const Error& error) {
    Writer w;
    w.magic();
    w.u8(static_cast<std::uint8_t>(AnswerTag::error));
    w.text(error.file);
    w.u64(error.line);
    w.u64(error.offset);
    w.u8(error.has_offset ? 1 : 0);
    w.text(error.message);
    w.u8(error.skipped ? 1 : 0);
    w.u8(static_cast<std::uint8_t>(error.kind));
    w.text(error.detail);
    return w.take();
}

Result<WireAnswer> decode_answer(std::string_view bytes) {
    const auto refused = [&](const Reader& r) {
        return fail_at_offset("reader answer", r.offset(), fmt::format("malformed reader answer: {}", r.error()));
    };
    Reader r(bytes);
    if (!bytes.starts_with(k_magic)) {
        r.failed("it does not start with the answer's magic");
        return refused(r);
    }
    for (std::size_t i = 0; i < k_magic.size(); ++i) r.u8();
    if (const std::uint8_t version = r.u8(); version != k_version) r.failed(fmt::format("version {}", version));
    WireAnswer answer;
    const std::uint8_t tag = r.u8();
    if (tag == static_cast<std::uint8_t>(AnswerTag::runs)) {
        const std::size_t runs = r.count(5 * k_text_min + 1 + k_text_min + 3 * 8);
        for (std::size_t i = 0; i < runs && r.ok(); ++i) answer.runs.push_back(read_batch(r));
    } else if (tag == static_cast<std::uint8_t>(AnswerTag::error)) {
        Error e;
        e.file = r.text();
        e.line = r.u64();
        e.offset = r.u64();
        e.has_offset = flag(r);
        e.message = r.text();
        e.skipped = flag(r);
        const std::uint8_t kind = r.u8();
        if (kind > k_last_error_kind) r.failed(fmt::format("an error kind of {}", kind));
        e.kind = static_cast<ErrorKind>(kind);
        e.detail = r.text();
        answer.refused = std::move(e);
    } else if (r.ok()) {
        r.failed(fmt::format("an answer tag of {}", tag));
    }
    if (r.ok() && !r.at_end()) r.failed(fmt::format("{} bytes after the answer", bytes.size() - r.offset()));
    if (!r.ok()) return refused(r);
    return answer;
}

}  // namespace perfwatch
