#include "collectors/nsight_compute/ncu_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <deque>
#include <map>
#include <optional>

#include "collectors/nsight_compute/ncu_common.hpp"
#include "collectors/readers/csv.hpp"
#include "collectors/readers/units.hpp"
#include "core/text.hpp"

namespace perfwatch {

namespace {

std::size_t indent_of(std::string_view line) {
    std::size_t i = 0;
    while (i < line.size() && line[i] == ' ') ++i;
    return i;
}

// A ruler line: groups of dashes separated by single spaces.
bool is_ruler(std::string_view t) {
    if (t.size() < 3 || t.front() != '-') return false;
    return std::all_of(t.begin(), t.end(), [](char c) { return c == '-' || c == ' '; });
}

std::vector<std::size_t> ruler_starts(std::string_view line) {
    std::vector<std::size_t> starts;
    for (std::size_t i = 0; i < line.size(); ++i)
        if (line[i] == '-' && (i == 0 || line[i - 1] == ' ')) starts.push_back(i);
    return starts;
}

bool parse_uint(std::string_view& s, unsigned long& out) {
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec != std::errc() || ptr == s.data()) return false;
    s.remove_prefix(static_cast<std::size_t>(ptr - s.data()));
    return true;
}

bool consume(std::string_view& s, std::string_view prefix) {
    if (!s.starts_with(prefix)) return false;
    s.remove_prefix(prefix.size());
    return true;
}

struct KernelLine {
    std::string name;
    std::string grid, block, context, stream, device, cc, time;
};

// "NAME (8, 16, 4)x(256, 1, 1), Context 1, Stream 13, Device 0, CC 8.9" (2022+) or
// "NAME, 2022-Jun-03 11:31:08, Context 1, Stream 7" (2019-2021). Names may hold commas and
// parentheses, so the line is read from its end.
std::optional<KernelLine> parse_kernel_line(std::string_view t) {
    const std::size_t pos = t.rfind(", Context ");
    if (pos == std::string_view::npos || pos == 0) return std::nullopt;
    KernelLine k;
    std::string_view rest = t.substr(pos + 10);
    unsigned long n = 0;
    if (!parse_uint(rest, n)) return std::nullopt;
    k.context = std::to_string(n);
    if (!consume(rest, ", Stream ") || !parse_uint(rest, n)) return std::nullopt;
    k.stream = std::to_string(n);
    if (consume(rest, ", Device ")) {
        if (!parse_uint(rest, n)) return std::nullopt;
        k.device = std::to_string(n);
        if (consume(rest, ", CC ")) {
            k.cc = std::string(trim(rest));
            rest = {};
        }
    }
    if (!trim(rest).empty()) return std::nullopt;

    std::string_view name = t.substr(0, pos);
    // ", 2022-Jun-03 11:31:08"
    if (name.size() > 22 && name[name.size() - 22] == ',') {
        if (auto iso = ncu_time_to_iso(name.substr(name.size() - 20))) {
            k.time = *iso;
            name = name.substr(0, name.size() - 22);
        }
    }
    // " (8, 16, 4)x(256, 1, 1)"
    if (name.ends_with(")")) {
        const std::size_t x = name.rfind(")x(");
        if (x != std::string_view::npos) {
            const std::size_t open = name.rfind(" (", x);
            if (open != std::string_view::npos) {
                auto dims = [](std::string_view d) {
                    std::string out;
                    for (char c : d) {
                        if (c == ',') out.push_back('x');
                        else if (c != ' ') out.push_back(c);
                    }
                    return out;
                };
                k.grid = dims(name.substr(open + 2, x - open - 2));
                k.block = dims(name.substr(x + 3, name.size() - x - 4));
                name = name.substr(0, open);
            }
        }
    }
    k.name = std::string(trim(name));
    if (k.name.empty()) return std::nullopt;
    return k;
}

struct SummaryLine {
    std::string name, block, grid;
    double invocations = 0;
};

// The product of a "(256, 1, 1)" launch dimension's numbers; nullopt when it is not one.
std::optional<unsigned long> dims_product(std::string_view d) {
    if (!consume(d, "(") || !d.ends_with(")")) return std::nullopt;
    d.remove_suffix(1);
    unsigned long product = 1;
    while (!d.empty()) {
        unsigned long n = 0;
        d = trim(d);
        if (!parse_uint(d, n)) return std::nullopt;
        product *= n;
        d = trim(d);
        if (!d.empty() && !consume(d, ",")) return std::nullopt;
    }
    return product;
}

// "NAME, Block Size 256, Grid Size 8192, 1 invocations" (2019-2023) or
// "NAME (1, 1, 1)x(256, 1, 1), Device 0, CC 8.9, Invocations 14" (2024+).
std::optional<SummaryLine> parse_summary_line(std::string_view t) {
    if (const std::size_t inv = t.rfind(", Invocations "); inv != std::string_view::npos) {
        std::string_view count = t.substr(inv + 14);
        unsigned long n = 0;
        if (!parse_uint(count, n) || !trim(count).empty()) return std::nullopt;
        std::string_view head = t.substr(0, inv);
        if (const std::size_t cc = head.rfind(", CC "); cc != std::string_view::npos) head = head.substr(0, cc);
        if (const std::size_t dev = head.rfind(", Device "); dev != std::string_view::npos) head = head.substr(0, dev);
        const std::size_t x = head.rfind(")x(");
        const std::size_t open = x == std::string_view::npos ? x : head.rfind(" (", x);
        if (open == std::string_view::npos) return std::nullopt;
        const auto grid = dims_product(head.substr(open + 1, x + 1 - (open + 1)));
        const auto block = dims_product(head.substr(x + 2));
        if (!grid || !block) return std::nullopt;
        SummaryLine s;
        s.name = std::string(trim(head.substr(0, open)));
        s.block = std::to_string(*block);
        s.grid = std::to_string(*grid);
        s.invocations = static_cast<double>(n);
        return s;
    }
    if (!t.ends_with("invocations")) return std::nullopt;
    const std::size_t pos = t.rfind(", Block Size ");
    if (pos == std::string_view::npos) return std::nullopt;
    SummaryLine s;
    s.name = std::string(trim(t.substr(0, pos)));
    std::string_view rest = t.substr(pos + 13);
    unsigned long n = 0;
    if (!parse_uint(rest, n)) return std::nullopt;
    s.block = std::to_string(n);
    if (!consume(rest, ", Grid Size ") || !parse_uint(rest, n)) return std::nullopt;
    s.grid = std::to_string(n);
    if (!consume(rest, ", ") || !parse_uint(rest, n)) return std::nullopt;
    s.invocations = static_cast<double>(n);
    return s;
}

// "OPT   Est. Speedup: 33.33%" / "WRN   This kernel ..." -> type, speedup type and value, text.
bool parse_rule_start(std::string_view t, ToolFinding& f) {
    if (t.size() < 4) return false;
    const std::string_view type = t.substr(0, 3);
    if (type != "OPT" && type != "INF" && type != "WRN" && type != "ERR") return false;
    if (t[3] != ' ') return false;
    f = ToolFinding{};
    f.type = std::string(type);
    std::string_view rest = trim(t.substr(3));
    for (const auto& [prefix, kind] : {std::pair{"Est. Speedup:", "global"}, std::pair{"Est. Global Speedup:", "global"},
                                       std::pair{"Est. Local Speedup:", "local"}}) {
        if (consume(rest, prefix)) {
            rest = trim(rest);
            const std::size_t pct = rest.find('%');
            f.speedup_pct = parse_report_number(rest.substr(0, pct));
            f.speedup_type = kind;
            rest = pct == std::string_view::npos ? std::string_view{} : trim(rest.substr(pct + 1));
            break;
        }
    }
    f.text = std::string(rest);
    return true;
}

struct Table {
    bool open = false;
    bool rows_seen = false;
    bool summary = false;
    std::uint64_t line = 0;
    std::vector<std::size_t> starts;
};

// One launch (or summary group) being read, with where it began.
struct OpenLaunch {
    NcuLaunch launch;
    std::uint64_t line = 0;
    bool has_content = false;  // a metric row or rule result was read
};

// A "==PROF== Profiling \"NAME\" - ID:" line: ncu's launch id of the next result of that kernel.
struct ProfLine {
    std::string name, id;
};

// Reads the text line by line; a launch goes to the entity builder as soon as the next begins, so
// memory holds one launch (summary output: one record per kernel group) whatever the file's size.
class NcuTextParser {
public:
    explicit NcuTextParser(const std::string& path) : m_path(path) {}

    Result<RunBatch> run(CsvStream& lines) {
        std::string_view line;
        std::uint64_t line_no = 0;
        while (true) {
            auto got = lines.next_line(line);
            if (!got) return std::unexpected(got.error());
            if (!*got) break;
            line_no = lines.record_line();
            if (auto r = take(line, line_no); !r) return std::unexpected(r.error());
        }
        if (m_table.open && !m_table.summary)
            return fail(m_path, line_no,
                        fmt::format("unexpected end of file: the table of section '{}' opened on line {} is not "
                                    "closed by a ruler line (truncated report?)",
                                    m_section, m_table.line));
        end_rule();
        if (auto r = close_launch(); !r) return std::unexpected(r.error());
        for (OpenLaunch& g : m_groups) {
            if (!g.has_content)
                return fail(m_path, g.line,
                            fmt::format("kernel '{}' has no metric table (truncated report?)", g.launch.kernel));
            m_builder.add(std::move(g.launch));
        }
        if (m_builder.records() == 0) return no_results(line_no);
        RunBatch batch;
        batch.format = m_summary ? "ncu-summary" : "ncu-text";
        if (m_summary)
            batch.format_detail = m_per_gpu ? "--print-summary per-gpu" : "--print-summary per-kernel";
        else if (m_only_cli_metrics)
            batch.format_detail = "--metrics output";
        else
            batch.format_detail = m_header_rows ? "default sections (2022+ layout with header rows)"
                                                : "default sections (2019-2021 layout)";
        batch.captured_at = m_captured_at;
        m_builder.finish(batch);
        if (m_unlocked) batch.labels["clocks"] = "unlocked";
        if (m_errors > 0) {
            Entity& run = batch.entities[batch.run_entity()];
            run.set(Metric{"profiler_errors", static_cast<double>(m_errors), "count", "==ERROR== lines", ""});
            run.attributes["profiler_error"] = to_valid_utf8(m_first_error.substr(0, 300), true);
            batch.notes.push_back(fmt::format("ncu reported {} error(s), the first at line {}: {}", m_errors,
                                              m_first_error_line, run.attributes["profiler_error"]));
        }
        return batch;
    }

private:
    // Why a log holds no result: ncu failed (its ==ERROR== text), profiled no kernel, or only
    // printed its progress while the results went to a report file (-o).
    Result<RunBatch> no_results(std::uint64_t lines) const {
        if (m_errors > 0) {
            std::string why = fmt::format("failed profile: ncu reported {} error(s), the first at line {}: ==ERROR== {}",
                                          m_errors, m_first_error_line, to_valid_utf8(m_first_error.substr(0, 300), true));
            if (m_first_error.find("ERR_NVGPUCTRPERM") != std::string::npos)
                why += " (the user had no permission to access the GPU performance counters)";
            return fail(m_path, m_first_error_line, why + "; no kernel was measured");
        }
        if (m_no_kernels) return fail(m_path, lines, "ncu profiled no kernel (==WARNING== No kernels were profiled.)");
        if (m_progress_lines > 0) {
            std::string where = m_report_file.empty()
                                    ? std::string("a report file (ncu -o)")
                                    : fmt::format("the report file {}", to_valid_utf8(m_report_file.substr(0, 300), true));
            return fail(m_path, lines,
                        fmt::format("progress-only ncu log: {} launch(es) listed by ==PROF== Profiling lines, but their "
                                    "metrics went to {}; convert it with `ncu --import FILE.ncu-rep --csv --page raw > "
                                    "FILE.csv` (or let perfwatch convert .ncu-rep files, see Converters) and read that",
                                    m_progress_lines, where));
        }
        return fail(m_path, 0, "no kernel results found (expected lines like \"  NAME (grid)x(block), Context "
                               "N, Stream N\" followed by section tables)");
    }

    OpenLaunch* current() {
        if (m_group >= 0) return &m_groups[static_cast<std::size_t>(m_group)];
        return m_open ? &*m_open : nullptr;
    }

    Result<void> take(std::string_view line, std::uint64_t line_no) {
        const std::string_view t = trim(line);
        const std::size_t indent = indent_of(line);

        if (line.starts_with("==")) {  // ==PROF== / ==WARNING== / ==ERROR== lines
            end_rule();
            m_unlocked |= says_unlocked_clocks(line);
            if (line.starts_with("==ERROR==")) {
                if (m_errors == 0) {
                    m_first_error = std::string(trim(line.substr(9)));
                    m_first_error_line = line_no;
                }
                ++m_errors;
            }
            remember_prof_id(line);
            if (line.starts_with("==PROF== Profiling \"")) ++m_progress_lines;
            if (line.starts_with("==PROF== Report: ")) m_report_file = std::string(trim(line.substr(17)));
            if (line.starts_with("==WARNING== No kernels were profiled")) m_no_kernels = true;
            return {};
        }
        if (t.empty()) {
            end_rule();
            if (m_table.open && m_table.summary) m_table = Table{};
            return {};
        }
        if (is_ruler(t)) {
            if (m_rule_active && t.starts_with("----- ")) {  // separator between two rule results
                end_rule();
                return {};
            }
            end_rule();
            if (m_table.open && m_table.rows_seen) {
                m_table = Table{};
                return {};
            }
            // A metric table has two or more dash groups and belongs to a launch: a ruler
            // elsewhere is the program's own output (a banner, its own results table).
            if (current() == nullptr || ruler_starts(line).size() < 2) return {};
            const bool summary = m_pending_summary_header;
            if (m_table.line == 0) m_table.line = line_no;
            m_table.open = true;
            m_table.rows_seen = false;
            m_table.summary = summary;
            m_table.starts = ruler_starts(line);
            m_pending_summary_header = false;
            return {};
        }
        if (t.starts_with("Metric Name") && t.find("Metric Unit") != std::string_view::npos) {
            m_header_rows = true;
            if (t.find("Average") != std::string_view::npos) m_pending_summary_header = true;
            if (m_table.open) m_table.line = line_no;
            return {};
        }
        if (m_table.open) return table_row(line, t, indent, line_no);

        if (t.starts_with("Section: ")) {
            end_rule();
            m_section = std::string(t.substr(9));
            if (m_section != "Command line profiler metrics") m_only_cli_metrics = false;
            m_table = Table{};
            m_table.line = line_no;
            return {};
        }
        ToolFinding f;
        if (parse_rule_start(t, f)) {
            end_rule();
            if (current() == nullptr) return fail(m_path, line_no, "rule result before any kernel line");
            f.section = m_section;
            m_rule = std::move(f);
            m_rule_active = true;
            m_rule_indent = indent;
            return {};
        }
        if (m_rule_active && indent > m_rule_indent) {
            if (!m_rule.text.empty()) m_rule.text.push_back(' ');
            m_rule.text.append(t);
            return {};
        }
        end_rule();
        if (auto k = parse_kernel_line(t)) return start_launch(std::move(*k), line_no);
        if (auto s = parse_summary_line(t)) {
            start_summary(std::move(*s), line_no);
            return {};
        }
        if (t.starts_with("Device ") && take_device_line(t)) return {};
        if (t.starts_with("[") && t.find("]") != std::string_view::npos && t.find('@') != std::string_view::npos) {
            const std::string_view proc = trim(t.substr(t.find(']') + 1));
            m_process = std::string(proc.substr(0, proc.rfind('@')));
            return {};
        }
        return {};  // program output or notes around the report
    }

    bool take_device_line(std::string_view t) {
        std::string_view rest = t.substr(7);
        unsigned long n = 0;
        if (!parse_uint(rest, n) || !trim(rest).empty()) return false;
        m_device = std::to_string(n);
        m_per_gpu = true;
        return true;
    }

    Result<void> table_row(std::string_view line, std::string_view t, std::size_t indent, std::uint64_t line_no) {
        OpenLaunch* open = current();
        if (open == nullptr) return fail(m_path, line_no, "metric row before any kernel line");
        const auto& starts = m_table.starts;
        if (starts.size() < 2)
            return fail(m_path, line_no, "metric table without columns (expected a ruler of dash groups)");
        // 2019-2021 rows sit two columns right of their ruler: shift the boundaries with them.
        const std::size_t shift = indent > starts.front() ? indent - starts.front() : 0;
        auto slice = [&](std::size_t i) -> std::string_view {
            const std::size_t b = starts[i] + shift;
            const std::size_t e = i + 1 < starts.size() ? starts[i + 1] + shift : line.size();
            if (b >= line.size()) return {};
            return trim(line.substr(b, e > b ? e - b : 0));
        };
        const std::string_view name = trim(line.substr(0, std::min(line.size(), starts[1] + shift)));
        const std::string_view unit = starts.size() >= 3 ? slice(1) : std::string_view{};
        const std::string_view value = slice(starts.size() - 1);
        if (name.empty()) return fail(m_path, line_no, fmt::format("expected a metric row, found \"{}\"", t));
        add_ncu_value(open->launch, name, unit, value);
        open->has_content = true;
        m_table.rows_seen = true;
        return {};
    }

    // The launch read so far goes to the builder, with ncu's launch id where a "==PROF== Profiling"
    // line named its kernel (a profile that failed has such a line and no result: it is passed over).
    Result<void> close_launch() {
        if (!m_open) return {};
        OpenLaunch& o = *m_open;
        if (!o.has_content)
            return fail(m_path, o.line,
                        fmt::format("kernel '{}' has no metric table (truncated report?)", o.launch.kernel));
        const std::string& kernel = o.launch.kernel;
        auto named = std::find_if(m_prof.begin(), m_prof.end(), [&](const ProfLine& p) {
            return kernel.starts_with(p.name) &&
                   (kernel.size() == p.name.size() || std::string_view("(< ").find(kernel[p.name.size()]) != std::string_view::npos);
        });
        if (named == m_prof.end() && !m_prof.empty()) named = m_prof.begin();  // a name printed otherwise: in order
        if (named != m_prof.end()) {
            o.launch.id = named->id;
            m_prof.erase(m_prof.begin(), named + 1);
        } else {
            o.launch.id = std::to_string(m_launches);
        }
        ++m_launches;
        m_builder.add(std::move(o.launch));
        m_open.reset();
        return {};
    }

    Result<void> start_launch(KernelLine k, std::uint64_t line_no) {
        if (auto r = close_launch(); !r) return r;
        m_table = Table{};
        m_group = -1;
        OpenLaunch o;
        o.line = line_no;
        NcuLaunch& l = o.launch;
        l.kernel = std::move(k.name);
        l.device = k.device.empty() ? std::string("0") : k.device;
        if (!k.grid.empty()) l.attributes["grid"] = k.grid;
        if (!k.block.empty()) l.attributes["block"] = k.block;
        if (!k.cc.empty()) l.attributes["cc"] = k.cc;
        l.attributes["context"] = k.context;
        l.attributes["stream"] = k.stream;
        if (!m_process.empty()) l.attributes["process"] = m_process;
        if (!k.time.empty()) {
            l.attributes["time"] = k.time;
            if (!m_captured_at || k.time < *m_captured_at) m_captured_at = k.time;
        }
        m_open = std::move(o);
        m_section.clear();
        return {};
    }

    // Summary output repeats the kernel line above every section: one record per kernel group.
    void start_summary(SummaryLine s, std::uint64_t line_no) {
        m_table = Table{};
        m_summary = true;
        m_only_cli_metrics = false;
        const std::string key = m_device + '\n' + s.name + '\n' + s.block + '\n' + s.grid;
        if (auto it = m_group_of.find(key); it != m_group_of.end()) {
            m_group = static_cast<long>(it->second);
            return;
        }
        OpenLaunch o;
        o.line = line_no;
        NcuLaunch& l = o.launch;
        l.kernel = s.name;
        l.is_summary = true;
        l.invocations = s.invocations;
        l.device = m_device.empty() ? std::string("0") : m_device;
        add_ncu_value(l, "Block Size", "", s.block);
        add_ncu_value(l, "Grid Size", "", s.grid);
        if (!m_process.empty()) l.attributes["process"] = m_process;
        m_groups.push_back(std::move(o));
        m_group = static_cast<long>(m_groups.size()) - 1;
        m_group_of[key] = m_groups.size() - 1;
    }

    void remember_prof_id(std::string_view line) {
        // ==PROF== Profiling "NAME" - 3: 0%....50%....100% - 9 passes
        if (!line.starts_with("==PROF== Profiling \"")) return;
        const std::size_t dash = line.find("\" - ");
        if (dash == std::string_view::npos) return;
        std::string_view rest = line.substr(dash + 4);
        unsigned long id = 0;
        if (!parse_uint(rest, id) || !rest.starts_with(":")) return;
        // Names are bounded by the results that consume them; a log of profiles never printed keeps
        // the most recent.
        if (m_prof.size() >= k_max_pending_prof) m_prof.erase(m_prof.begin());
        m_prof.push_back(ProfLine{std::string(line.substr(20, dash - 20)), std::to_string(id)});
    }

    void end_rule() {
        if (!m_rule_active) return;
        m_rule_active = false;
        if (OpenLaunch* open = current()) {
            open->launch.findings.push_back(std::move(m_rule));
            open->has_content = true;
        }
        m_rule = ToolFinding{};
    }

    static constexpr std::size_t k_max_pending_prof = 4096;

    const std::string& m_path;
    NcuEntityBuilder m_builder;
    std::optional<OpenLaunch> m_open;       // the launch being read (default sections, --metrics)
    std::vector<OpenLaunch> m_groups;       // summary groups, all open to the end
    std::map<std::string, std::size_t> m_group_of;
    long m_group = -1;                      // the summary group being read; -1: m_open
    std::size_t m_launches = 0;             // launches closed
    std::deque<ProfLine> m_prof;            // ==PROF== Profiling lines not yet matched to a result
    Table m_table;
    bool m_pending_summary_header = false;
    bool m_header_rows = false;
    bool m_summary = false;
    bool m_per_gpu = false;
    bool m_only_cli_metrics = true;
    std::string m_section;
    std::string m_device;
    std::string m_process;
    std::optional<std::string> m_captured_at;
    std::size_t m_errors = 0;  // ==ERROR== lines
    std::size_t m_progress_lines = 0;  // ==PROF== Profiling lines
    std::string m_report_file;         // ==PROF== Report: PATH
    bool m_no_kernels = false;         // ==WARNING== No kernels were profiled.
    std::uint64_t m_first_error_line = 0;
    bool m_unlocked = false;  // ncu said it left the GPU clocks unmodified
    std::string m_first_error;
    ToolFinding m_rule;
    bool m_rule_active = false;
    std::size_t m_rule_indent = 0;
};

class NcuTextCollector final : public StreamCollector {
public:
    std::string_view id() const override { return "ncu-text"; }
    std::string_view description() const override {
        return "Nsight Compute text output: default sections, --metrics, --print-summary";
    }

    // A kernel (or summary group) line under ncu's "[pid] process@host" line or above a
    // "Section:" table.
    // A log of only ncu's own lines (==PROF== progress, ==ERROR==) is one too: it is read to say
    // why it holds no result.
    bool recognizes(std::string_view head) const override {
        const bool sections = head.find("Section: ") != std::string_view::npos;
        bool process = false;
        LineReader lines(head);
        std::string_view line;
        while (lines.next(line)) {
            const std::string_view t = trim(line);
            if (line.starts_with("==PROF== Connected to process") || line.starts_with("==PROF== Profiling \"") ||
                line.starts_with("==ERROR== ") || line.starts_with("==WARNING== No kernels were profiled"))
                return true;
            if (t.starts_with("[") && t.find("] ") != std::string_view::npos && t.find('@') != std::string_view::npos)
                process = true;
            else if ((sections || process) && (parse_kernel_line(t) || parse_summary_line(t)))
                return true;
        }
        return false;
    }

    Result<RunBatch> collect_stream(const std::string& path, ByteSource& source) const override {
        CsvStream lines(source);
        return NcuTextParser(path).run(lines);
    }
};

}  // namespace

const Collector& ncu_text_collector() {
    static const NcuTextCollector k_instance;
    return k_instance;
}

}  // namespace perfwatch
