#include "collectors/nsight_systems/nsys_stats.hpp"
#include "collectors/readers/log_prefix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "collectors/readers/csv.hpp"
#include "collectors/nsight_systems/nsys_common.hpp"
#include "collectors/readers/timeline.hpp"
#include "collectors/readers/units.hpp"

namespace perfwatch {

namespace {

enum class Report { kernels, cuda_api, os_runtime, nvtx, memory_time, memory_size, gpu_trace, other };

constexpr std::array<std::pair<std::string_view, Report>, 18> k_report_names{{
    {"cuda_gpu_kern_sum", Report::kernels},
    {"gpukernsum", Report::kernels},
    {"cuda_api_sum", Report::cuda_api},
    {"cudaapisum", Report::cuda_api},
    {"osrt_sum", Report::os_runtime},
    {"osrtsum", Report::os_runtime},
    {"nvtx_sum", Report::nvtx},
    {"nvtxsum", Report::nvtx},
    {"nvtxppsum", Report::nvtx},
    {"nvtx_pushpop_sum", Report::nvtx},
    {"nvtx_startend_sum", Report::nvtx},
    {"cuda_gpu_mem_time_sum", Report::memory_time},
    {"gpumemtimesum", Report::memory_time},
    {"cuda_gpu_mem_size_sum", Report::memory_size},
    {"gpumemsizesum", Report::memory_size},
    {"cuda_gpu_trace", Report::gpu_trace},
    {"gputrace", Report::gpu_trace},
    {"cuda_kern_exec_sum", Report::other},
}};

// Section titles of 2020 and 2021, before reports had ids.
constexpr std::array<std::pair<std::string_view, Report>, 7> k_legacy_titles{{
    {"CUDA API Statistics:", Report::cuda_api},
    {"CUDA Kernel Statistics:", Report::kernels},
    {"CUDA Memory Operation Statistics (by time):", Report::memory_time},
    {"CUDA Memory Operation Statistics (by size", Report::memory_size},
    {"Operating System Runtime API Statistics:", Report::os_runtime},
    {"NVTX Push-Pop Range Statistics:", Report::nvtx},
    {"NVTX Start-End Range Statistics:", Report::nvtx},
}};

Report report_from_id(std::string_view id) {
    for (const auto& [name, report] : k_report_names)
        if (id == name) return report;
    return Report::other;
}

std::string_view report_label(Report r) {
    switch (r) {
        case Report::kernels: return "kernel summary";
        case Report::cuda_api: return "CUDA API summary";
        case Report::os_runtime: return "OS runtime summary";
        case Report::nvtx: return "NVTX range summary";
        case Report::memory_time: return "memory operations by time";
        case Report::memory_size: return "memory operations by size";
        case Report::gpu_trace: return "GPU trace";
        case Report::other: break;
    }
    return "other report";
}

struct Title {
    std::string id;          // as printed: "cuda_gpu_kern_sum", "gpukernsum" or the legacy title
    Report report = Report::other;
    std::string size_unit;   // legacy memory-size titles name it: "(by size in KiB)"
    std::string generation;  // "2020/2021", "2022" or "2023+"
};

// Recognises the line that announces a report: "[6/8] Executing 'cuda_gpu_kern_sum' stats report",
// " ** CUDA GPU Kernel Summary (gpukernsum):", "CUDA Kernel Statistics:", or a CSV run's notice
// "Processing [report1.sqlite] with [/opt/.../cuda_gpu_kern_sum.py]...".
std::optional<Title> parse_title(std::string_view t) {
    Title title;
    if (const auto p = t.find("Executing '"); p != std::string_view::npos) {
        const std::size_t start = p + 11;
        const std::size_t end = t.find("' stats report", start);
        if (end == std::string_view::npos) return std::nullopt;
        title.id = std::string(t.substr(start, end - start));
    } else if (t.starts_with("** ") && t.ends_with("):")) {
        const std::size_t open = t.rfind('(');
        if (open == std::string_view::npos) return std::nullopt;
        title.id = std::string(t.substr(open + 1, t.size() - open - 3));
    } else if ((t.starts_with("Processing [") || t.starts_with("Running [")) && t.find(".py") != std::string_view::npos) {
        const std::size_t py = t.find(".py");
        const std::size_t slash = t.find_last_of("/[", py);
        if (slash == std::string_view::npos) return std::nullopt;
        title.id = std::string(t.substr(slash + 1, py - slash - 1));
    } else {
        for (const auto& [text, report] : k_legacy_titles) {
            if (!t.starts_with(text)) continue;
            title.id = std::string(t);
            title.report = report;
            title.generation = "2020/2021";
            if (report == Report::memory_size) {
                const std::size_t in = t.find(" in ");
                const std::size_t close = t.find(')', in == std::string_view::npos ? 0 : in);
                if (in != std::string_view::npos && close != std::string_view::npos)
                    title.size_unit = std::string(t.substr(in + 4, close - in - 4));
            }
            return title;
        }
        return std::nullopt;
    }
    title.report = report_from_id(title.id);
    // 2023 renamed the reports: gpukernsum -> cuda_gpu_kern_sum.
    title.generation = title.id.find('_') != std::string::npos ? "2023+" : "2022";
    return title;
}

enum class Field {
    time_pct, total, count, mean, median, min, max, std, name, style, grid, block,
    start, duration, grid_x, grid_y, grid_z, block_x, block_y, block_z, registers, static_smem,
    dynamic_smem, bytes, device, stream, ignored
};

constexpr auto k_fields = std::to_array<std::pair<std::string_view, Field>>({
    {"Time", Field::time_pct},       {"Total Time", Field::total},  {"Total", Field::total},
    {"Instances", Field::count},     {"Num Calls", Field::count},   {"Calls", Field::count},
    {"Count", Field::count},         {"Operations", Field::count},  {"Avg", Field::mean},
    {"Average", Field::mean},        {"Med", Field::median},        {"Median", Field::median},
    {"Min", Field::min},             {"Minimum", Field::min},       {"Max", Field::max},
    {"Maximum", Field::max},         {"StdDev", Field::std},        {"Name", Field::name},
    {"Range", Field::name},          {"Operation", Field::name},    {"Style", Field::style},
    {"GridXYZ", Field::grid},        {"BlockXYZ", Field::block},    {"Start", Field::start},
    {"Duration", Field::duration},   {"GrdX", Field::grid_x},       {"GrdY", Field::grid_y},
    {"GrdZ", Field::grid_z},         {"BlkX", Field::block_x},      {"BlkY", Field::block_y},
    {"BlkZ", Field::block_z},        {"Reg/Trd", Field::registers}, {"StcSMem", Field::static_smem},
    {"DymSMem", Field::dynamic_smem}, {"Bytes", Field::bytes},      {"Device", Field::device},
    {"Strm", Field::stream},
});

struct Column {
    std::string header;  // as printed: "Total Time (ns)"
    Field field = Field::ignored;
    std::string unit;    // from the header's "(ns)", or inherited
};

// "Total Time (ns)" -> field total, unit "ns". Unknown headers are kept and ignored.
Column parse_column(std::string_view header) {
    Column c;
    c.header = std::string(header);
    std::string_view base = header;
    if (header.ends_with(")")) {
        const std::size_t open = header.rfind('(');
        if (open != std::string_view::npos) {
            c.unit = std::string(header.substr(open + 1, header.size() - open - 2));
            base = trim(header.substr(0, open));  // "Time(%)" and "Time (%)" alike
        }
    }
    for (const auto& [name, field] : k_fields)
        if (base == name) c.field = field;
    return c;
}

struct Row {
    std::vector<std::string> cells;
    std::uint64_t line = 0;
};

struct Table {
    Title title;
    std::uint64_t line = 0;  // of the header
    bool csv = false;
    std::vector<Column> columns;
    std::vector<Row> rows;

    int index(Field f) const {
        for (std::size_t i = 0; i < columns.size(); ++i)
            if (columns[i].field == f) return static_cast<int>(i);
        return -1;
    }
    bool has(Field f) const { return index(f) >= 0; }
};

// A header is a row of known column names that starts with the time share, a total or a start
// time and ends with the name of what is measured.
bool is_header(const std::vector<Column>& cols) {
    if (cols.size() < 3) return false;
    const Field first = cols.front().field;
    if (first != Field::time_pct && first != Field::total && first != Field::start) return false;
    return cols.back().field == Field::name;
}

bool is_dash_line(std::string_view line) {
    const std::string_view t = trim(line);
    return !t.empty() && t.find_first_not_of("- ") == std::string_view::npos && t.find("--") != std::string_view::npos;
}

// Column extents of a text table, from its dash line: [start, end) of each run of dashes.
std::vector<std::pair<std::size_t, std::size_t>> dash_extents(std::string_view line) {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    std::size_t i = 0;
    while (i < line.size()) {
        if (line[i] != '-') {
            ++i;
            continue;
        }
        const std::size_t start = i;
        while (i < line.size() && line[i] == '-') ++i;
        out.emplace_back(start, i);
    }
    return out;
}

// Splits a text row by the extents: a cell runs from its column's start to the next column's
// start (numbers are right-aligned, names left-aligned); the last cell takes the rest of the line.
std::vector<std::string> split_text_row(std::string_view line, const std::vector<std::pair<std::size_t, std::size_t>>& ext) {
    std::vector<std::string> cells;
    for (std::size_t i = 0; i < ext.size(); ++i) {
        const std::size_t start = std::min(ext[i].first, line.size());
        const std::size_t end = i + 1 < ext.size() ? std::min(ext[i + 1].first, line.size()) : line.size();
        cells.emplace_back(trim(line.substr(start, end - start)));
    }
    return cells;
}

// The tables of one `nsys profile --stats` or `nsys stats` invocation.
struct Session {
    std::vector<Table> tables;
    std::vector<std::string> skipped;  // SKIPPED lines: reports without data
    std::set<Report> seen;
    std::uint64_t first_line = 0;
    std::string report_file;  // "vector_add_profile_v3.nsys-rep" when the log names it
    std::string gpu;           // "NVIDIA GA100" from `--gpu-metrics-device` output
    std::string tool_version;  // "2022.4.2" from the report scripts' nsight-systems-VERSION path
};

// "GPU 0: General Metrics for NVIDIA GA100 (any frequency)" -> "NVIDIA GA100".
std::string gpu_of_metrics_line(std::string_view t) {
    const auto at = t.find("General Metrics for ");
    if (at == std::string_view::npos) return {};
    std::string_view rest = t.substr(at + 20);
    rest = rest.substr(0, rest.find(" ("));
    return std::string(trim(rest));
}

// ".../nsight-systems-2022.4.2/host-linux-x64/..." -> "2022.4.2".
std::string version_of_path(std::string_view t) {
    const auto at = t.find("nsight-systems-");
    if (at == std::string_view::npos) return {};
    std::size_t end = at + 15;
    while (end < t.size() && (std::isdigit(static_cast<unsigned char>(t[end])) || t[end] == '.')) ++end;
    std::string v(t.substr(at + 15, end - at - 15));
    while (!v.empty() && v.back() == '.') v.pop_back();
    return v;
}

// Reads the tables line by line (a text header is told by the dash line after it, so one line is
// held back); a session goes to `done` when the next begins or the text ends, so memory holds one
// session's tables whatever the file's size.
class TableReader {
public:
    using Done = std::function<Result<void>(Session&&)>;
    TableReader(const std::string& path, Done done) : m_path(path), m_done(std::move(done)) {}

    Result<void> line(std::string_view raw, std::uint64_t line_no) {
        const std::string_view line = strip_log_prefix(raw);
        if (m_in_rows) {
            auto ended = row(line, line_no);
            if (!ended) return std::unexpected(ended.error());
            if (!*ended) return {};
            // A line that is not a row ends the table and is read as any other line.
        }
        return outside(line, line_no);
    }

    Result<void> finish() {
        if (m_in_rows)
            if (auto r = end_table(); !r) return r;
        if (m_pending && m_pending->report != Report::other)
            m_problems.push_back(
                fmt::format("line {}: '{}' announced but no table follows", m_pending_line, m_pending->id));
        if (m_session.tables.empty() && m_session.skipped.empty() && m_sessions > 0) return {};
        ++m_sessions;
        return m_done(std::move(m_session));
    }

    // Tables announced but not found, over the whole text.
    const std::vector<std::string>& problems() const { return m_problems; }
    std::size_t sessions() const { return m_sessions; }

private:
    // Reads `line` as a row of the open table: false when it was one, true when the table ended
    // before it and the line is still to be read.
    Result<bool> row(std::string_view line, std::uint64_t line_no) {
        const std::string_view t = trim(line);
        if (t.empty() || t.starts_with("```")) {  // rows run to the next blank line
            if (auto r = end_table(); !r) return std::unexpected(r.error());
            return false;
        }
        Row row;
        row.line = line_no;
        if (m_table.csv) {
            CsvReader reader(line, row.line);
            if (reader.next(row.cells) == CsvReader::Status::error)
                return fail(m_path, row.line, fmt::format("malformed CSV row: {}", reader.error()));
            for (std::string& c : row.cells) c = std::string(trim(c));
        } else {
            row.cells = split_text_row(line, m_extents);
        }
        // Every stats table starts its rows with a number: a line that does not is other
        // program output after the table (a job log's next message).
        if (row.cells.empty() || !parse_report_number(trim(row.cells.front()))) {
            if (auto r = end_table(); !r) return std::unexpected(r.error());
            return true;
        }
        if (row.cells.size() != m_table.columns.size())
            return fail(m_path, row.line,
                        fmt::format("expected {} columns as in the header on line {}, found {}",
                                    m_table.columns.size(), m_table.line, row.cells.size()));
        m_table.rows.push_back(std::move(row));
        return false;
    }

    Result<void> outside(std::string_view line, std::uint64_t line_no) {
        const std::string_view t = trim(line);
        std::string previous = std::exchange(m_previous, {});
        if (t.empty()) return {};
        // A text header: the line before, with this dash line under it.
        if (!previous.empty() && is_dash_line(line)) {
            auto extents = dash_extents(line);
            Table table;
            table.line = m_previous_line;
            for (const std::string& h : split_text_row(previous, extents)) table.columns.push_back(parse_column(h));
            if (is_header(table.columns)) {
                m_extents = std::move(extents);
                start_table(std::move(table));
                return {};
            }
        }
        if (std::string gpu = gpu_of_metrics_line(t); !gpu.empty()) {
            m_pending_gpu = std::move(gpu);
            return {};
        }
        if (std::string v = version_of_path(t); !v.empty()) m_version = std::move(v);
        if (auto title = parse_title(t)) {
            // "Processing [...osrtsum.py]..." then " ** OS Runtime Summary (osrtsum):" announce one table.
            if (m_pending && m_pending->report != Report::other && m_pending->report != title->report)
                m_problems.push_back(
                    fmt::format("line {}: '{}' announced but no table follows", m_pending_line, m_pending->id));
            m_pending = std::move(title);
            m_pending_line = line_no;
            return {};
        }
        if (std::string_view f = t.ends_with('"') ? t.substr(0, t.size() - 1) : t;
            f.ends_with(".nsys-rep") || f.ends_with(".qdrep")) {
            // "[1/8] [=====100%] name.nsys-rep" or "Saved report file to ...": names the session's report
            const std::size_t sp = f.find_last_of(" \"/");
            m_report_file = std::string(f.substr(sp == std::string_view::npos ? 0 : sp + 1));
            return {};
        }
        if (t.starts_with("SKIPPED:")) {
            const Report r = m_pending ? m_pending->report : Report::other;
            auto s = session_for(r, line_no);
            if (!s) return std::unexpected(s.error());
            (*s)->skipped.emplace_back(trim(t.substr(8)));
            m_pending.reset();
            return {};
        }
        // A CSV header splits into known columns at commas; any other line may be a text header.
        if (t.find(',') != std::string_view::npos) {
            std::vector<std::string> fields;
            CsvReader reader(t);
            if (reader.next(fields) == CsvReader::Status::record) {
                Table table;
                table.line = line_no;
                for (const std::string& f : fields) table.columns.push_back(parse_column(trim(f)));
                table.csv = is_header(table.columns);
                if (table.csv) {
                    start_table(std::move(table));
                    return {};
                }
            }
        }
        m_previous = std::string(line);
        m_previous_line = line_no;
        return {};
    }

    void start_table(Table table) {
        m_table = std::move(table);
        m_in_rows = true;
    }

    // What the table is: the title that announced it, or what its columns say.
    Result<void> end_table() {
        m_in_rows = false;
        Table table = std::move(m_table);
        m_table = Table{};
        if (m_pending) table.title = *m_pending;
        if (table.title.report == Report::other && !m_pending) {
            const int count_idx = table.index(Field::count);
            const bool named_calls =
                count_idx >= 0 && table.columns[static_cast<std::size_t>(count_idx)].header == "Num Calls";
            if (table.has(Field::start) && table.has(Field::duration)) table.title.report = Report::gpu_trace;
            else if (table.columns.back().header == "Range") table.title.report = Report::nvtx;
            else if (table.columns.back().header == "Operation")
                table.title.report = table.has(Field::time_pct) ? Report::memory_time : Report::memory_size;
            else if (named_calls) {
                std::size_t cuda = 0;
                for (const Row& r : table.rows)
                    if (r.cells.back().starts_with("cu")) ++cuda;
                table.title.report = cuda == table.rows.size() ? Report::cuda_api : Report::os_runtime;
            } else if (table.has(Field::count)) {
                table.title.report = Report::kernels;
            }
            table.title.id = std::string(report_label(table.title.report));
        }
        m_pending.reset();
        auto s = session_for(table.title.report, table.line);
        if (!s) return std::unexpected(s.error());
        (*s)->tables.push_back(std::move(table));
        return {};
    }

    // The session a table or SKIPPED line of report `r` belongs to: a report seen already in this
    // one begins the next (the session so far is handed over).
    Result<Session*> session_for(Report r, std::uint64_t line_no) {
        if (r != Report::other && m_session.seen.contains(r)) {
            ++m_sessions;
            if (auto d = m_done(std::exchange(m_session, Session{})); !d) return std::unexpected(d.error());
        }
        Session& s = m_session;
        if (s.first_line == 0) s.first_line = line_no;
        if (s.report_file.empty()) s.report_file = m_report_file;
        if (s.gpu.empty() && !m_pending_gpu.empty()) s.gpu = std::exchange(m_pending_gpu, {});
        if (s.tool_version.empty()) s.tool_version = m_version;
        s.seen.insert(r);
        return &s;
    }

    const std::string& m_path;
    Done m_done;
    Session m_session;
    std::size_t m_sessions = 0;  // handed over
    std::vector<std::string> m_problems;
    std::optional<Title> m_pending;
    std::uint64_t m_pending_line = 0;
    std::string m_report_file, m_pending_gpu, m_version;
    std::string m_previous;  // the line before, when it may be a text table's header
    std::uint64_t m_previous_line = 0;
    bool m_in_rows = false;
    Table m_table;
    std::vector<std::pair<std::size_t, std::size_t>> m_extents;  // of the open text table
};

// Numbers of one row, converted to base units from the column's unit.
class RowReader {
public:
    RowReader(const std::string& path, const Table& table, const Row& row) : m_path(path), m_table(table), m_row(row) {}

    // The value of `f` in base units; nullopt when the column is absent or the cell holds no
    // number ("", "-", "nan"). A cell that is neither is an error.
    Result<std::optional<double>> value(Field f, std::string_view inherited_unit = {}) const {
        const int idx = m_table.index(f);
        if (idx < 0) return std::optional<double>();
        const Column& col = m_table.columns[static_cast<std::size_t>(idx)];
        const std::string& cell = m_row.cells[static_cast<std::size_t>(idx)];
        if (cell.empty() || cell == "-" || cell == "nan" || cell == "-nan" || cell == "N/A")
            return std::optional<double>();
        const auto v = parse_report_number(european() ? european_number(cell) : cell);
        if (!v)
            return fail(m_path, m_row.line,
                        fmt::format("expected a number in column \"{}\", found \"{}\"", col.header, cell));
        const std::string_view unit = col.unit.empty() ? inherited_unit : std::string_view(col.unit);
        return std::optional<double>(to_base_unit(*v, unit).value);
    }

    // A row nsys printed in a European locale ("27,0" percent, "25.369.833" ns, "1.934" calls):
    // its Time (%) cell (a trace's Start (sec) cell: "0,000000") has a decimal comma and no
    // point, which no other locale writes.
    bool european() const {
        int idx = m_table.index(Field::time_pct);
        if (idx < 0) idx = m_table.index(Field::start);
        if (idx < 0) return false;
        const std::string& pct = m_row.cells[static_cast<std::size_t>(idx)];
        return pct.find(',') != std::string::npos && pct.find('.') == std::string::npos;
    }

    // "25.369.833,0" as "25369833.0".
    static std::string european_number(std::string_view cell) {
        std::string out;
        for (char c : cell) {
            if (c == '.') continue;
            out.push_back(c == ',' ? '.' : c);
        }
        return out;
    }

    Result<double> required(Field f, std::string_view inherited_unit = {}) const {
        auto v = value(f, inherited_unit);
        if (!v) return std::unexpected(v.error());
        if (!*v) {
            const int idx = m_table.index(f);
            return fail(m_path, m_row.line,
                        fmt::format("expected a number in column \"{}\"",
                                    idx < 0 ? "?" : m_table.columns[static_cast<std::size_t>(idx)].header));
        }
        return **v;
    }

    const std::string& text(Field f) const {
        static const std::string k_empty;
        const int idx = m_table.index(f);
        return idx < 0 ? k_empty : m_row.cells[static_cast<std::size_t>(idx)];
    }

private:
    const std::string& m_path;
    const Table& m_table;
    const Row& m_row;
};

// Per-name statistics from one or more summary rows (2022.4+ splits a kernel's rows by grid and block).
struct Summary {
    double count = 0, total = 0, min = 0, max = 0, sum_sq = 0;  // sum_sq: sum of n * (std^2 + mean^2)
    std::optional<double> median, std;
    bool has_std = true;
    std::size_t rows = 0;
    std::set<std::string> configs;  // "grid 256x1x1 block 128x1x1"
    std::string style;
    int order = 0;
};

// A name nsys cut short ("at::native::vectorized_elementwise_kernel<4, at::nati…").
bool truncated_name(std::string_view name) {
    return name.find("\xE2\x80\xA6") != std::string_view::npos || name.ends_with("...");
}

// The rows of a summary table by name; rows of one name are merged (one per launch
// configuration), except names nsys truncated: distinct kernels may share the cut, so each such row
// stays its own entity, named with "#N" after the first (`kept_apart` counts them).
Result<std::map<std::string, Summary>> summarize(const std::string& path, const Table& table,
                                                 std::size_t& kept_apart) {
    const bool memory = table.title.report == Report::memory_time || table.title.report == Report::memory_size;
    std::map<std::string, Summary> out;
    int order = 0;
    // 2020 prints "Average" with no unit: the time columns share the total's unit.
    const int total_idx = table.index(Field::total);
    std::string unit = total_idx < 0 ? "" : table.columns[static_cast<std::size_t>(total_idx)].unit;
    if (table.title.report == Report::memory_size && !table.title.size_unit.empty()) unit = table.title.size_unit;
    for (const Row& row : table.rows) {
        const RowReader r(path, table, row);
        auto count = r.required(Field::count);
        if (!count) return std::unexpected(count.error());
        auto total = r.required(Field::total, unit);
        if (!total) return std::unexpected(total.error());
        auto mn = r.value(Field::min, unit), mx = r.value(Field::max, unit), med = r.value(Field::median, unit),
             sd = r.value(Field::std, unit), mean = r.value(Field::mean, unit);
        for (const auto* v : {&mn, &mx, &med, &sd, &mean})
            if (!*v) return std::unexpected(v->error());
        std::string name = r.text(Field::name);
        if (name.empty()) return fail(path, row.line, "expected a name in the last column");
        if (memory) name = memory_operation_name(name);
        if (truncated_name(name) && out.contains(name)) {
            std::size_t n = 2;
            while (out.contains(fmt::format("{} #{}", name, n))) ++n;
            name = fmt::format("{} #{}", name, n);
            ++kept_apart;
        }
        Summary& s = out[name];
        const std::optional<double> mean_value = *mean;
        const double m = mean_value ? *mean_value : (*count > 0 ? *total / *count : 0);
        if (s.rows == 0) {
            s.order = order++;
            s.min = mn->value_or(0);
            s.max = mx->value_or(0);
        } else {
            if (*mn) s.min = std::min(s.min, **mn);
            if (*mx) s.max = std::max(s.max, **mx);
        }
        s.count += *count;
        s.total += *total;
        if (*sd) s.sum_sq += *count * (**sd * **sd + m * m);
        else s.has_std = false;
        s.median = s.rows == 0 ? *med : std::nullopt;
        s.std = *sd;
        ++s.rows;
        if (!r.text(Field::grid).empty() || !r.text(Field::block).empty())
            s.configs.insert(fmt::format("grid {} block {}", r.text(Field::grid), r.text(Field::block)));
        if (s.style.empty()) s.style = r.text(Field::style);
    }
    for (auto& [name, s] : out) {
        if (s.rows > 1) {
            // Pooled spread of the merged rows (population form).
            const double mean = s.count > 0 ? s.total / s.count : 0;
            s.std = s.has_std && s.count > 0 ? std::optional<double>(std::sqrt(std::max(0.0, s.sum_sq / s.count - mean * mean)))
                                             : std::nullopt;
        }
    }
    return out;
}

// "  256    1    1" -> "256x1x1"
std::string xyz(std::string_view text) {
    std::string out;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && text[i] == ' ') ++i;
        const std::size_t start = i;
        while (i < text.size() && text[i] != ' ') ++i;
        if (i > start) out += (out.empty() ? "" : "x") + std::string(text.substr(start, i - start));
    }
    return out;
}

void set_summary_metrics(Entity& e, const Summary& s, std::string_view count_name, const Table& table) {
    auto tool = [&](Field f) {
        const int idx = table.index(f);
        return idx < 0 ? std::string() : table.columns[static_cast<std::size_t>(idx)].header;
    };
    e.set(plain(std::string(count_name), s.count, "count", tool(Field::count)));
    e.set(plain("duration_total", s.total, "ns", tool(Field::total)));
    if (s.count > 0) {
        e.set(plain("duration_mean", s.total / s.count, "ns", tool(Field::mean)));
        if (count_name == "launches") e.set(plain("duration", s.total / s.count, "ns", tool(Field::mean)));
    }
    if (table.has(Field::min)) e.set(plain("duration_min", s.min, "ns", tool(Field::min)));
    if (table.has(Field::max)) e.set(plain("duration_max", s.max, "ns", tool(Field::max)));
    if (s.median) e.set(plain("duration_median", *s.median, "ns", tool(Field::median)));
    if (s.std) e.set(plain("duration_std", *s.std, "ns", tool(Field::std)));
}

std::vector<std::pair<std::string, Summary>> in_report_order(std::map<std::string, Summary> m) {
    std::vector<std::pair<std::string, Summary>> out(std::make_move_iterator(m.begin()), std::make_move_iterator(m.end()));
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second.order < b.second.order; });
    return out;
}

// Feeds the GPU trace's kernels and memory operations to a timeline.
Result<void> feed_gpu_trace(const std::string& path, const Table& table, TimelineBuilder& timeline) {
    const int start_idx = table.index(Field::start);
    if (start_idx < 0)
        return fail(path, table.line, "the GPU trace table has no Start column");
    const std::string time_unit = table.columns[static_cast<std::size_t>(start_idx)].unit;
    for (const Row& row : table.rows) {
        const RowReader r(path, table, row);
        auto start = r.required(Field::start, time_unit);
        if (!start) return std::unexpected(start.error());
        auto dur = r.required(Field::duration, time_unit);
        if (!dur) return std::unexpected(dur.error());
        TimelineEvent ev;
        ev.kind = memory_operation_direction(r.text(Field::name)).empty() ? TimelineEvent::Kind::kernel
                                                                           : TimelineEvent::Kind::memory;
        ev.name = memory_operation_name(r.text(Field::name));
        ev.device = r.text(Field::device);
        ev.queue = r.text(Field::stream);
        ev.start_ns = *start;
        ev.end_ns = *start + *dur;
        if (ev.kind == TimelineEvent::Kind::kernel && !r.text(Field::grid_x).empty()) {
            ev.attributes["grid"] = fmt::format("{}x{}x{}", r.text(Field::grid_x), r.text(Field::grid_y), r.text(Field::grid_z));
            ev.attributes["block"] =
                fmt::format("{}x{}x{}", r.text(Field::block_x), r.text(Field::block_y), r.text(Field::block_z));
        }
        timeline.add(std::move(ev));
    }
    return {};
}

class NsysStatsCollector final : public StreamCollector {
public:
    std::string_view id() const override { return "nsys-stats"; }
    std::string_view description() const override {
        return "nsys stats output, text or --format csv, 2020-2025 report names, alone or inside a log";
    }

    bool recognizes(std::string_view head) const override {
        LineReader lines(head);
        std::string_view line, previous;
        bool titled = false;
        while (lines.next(line)) {
            line = strip_log_prefix(line);
            const std::string_view t = trim(line);
            if (auto title = parse_title(t); title && title->report != Report::other) titled = true;
            if (t.starts_with("SKIPPED:") && t.find("does not contain") != std::string_view::npos) return true;
            if (is_dash_line(line) && !previous.empty()) {
                std::vector<Column> cols;
                for (const std::string& h : split_text_row(previous, dash_extents(line))) cols.push_back(parse_column(h));
                if (is_header(cols)) return true;
            }
            // A gputrace CSV written without its title (nsys stats --format csv --output FILE).
            const bool gputrace = (t.starts_with("\"Start (") || t.starts_with("Start (")) &&
                                  t.find("CorrId") != std::string_view::npos;
            if ((titled || gputrace || t.starts_with("\"Time (%)\"") || t.starts_with("Time (%),") ||
                 t.starts_with("Time(%),")) &&
                t.find(',') != std::string_view::npos) {
                std::vector<std::string> fields;
                CsvReader reader(t);
                if (reader.next(fields) == CsvReader::Status::record) {
                    std::vector<Column> cols;
                    for (const std::string& f : fields) cols.push_back(parse_column(trim(f)));
                    if (is_header(cols)) return true;
                }
            }
            previous = line;
        }
        return false;
    }

    // One batch: the last session, with a note when the file holds more (collect_runs gives each).
    // Only the last session's tables are kept, and only its run is built (and only its errors count).
    Result<RunBatch> collect_stream(const std::string& path, ByteSource& source) const override {
        std::optional<Session> last;
        auto read = read_sessions(path, source, [&](Session&& session) -> Result<void> {
            last = std::move(session);
            return {};
        });
        if (!read) return std::unexpected(read.error());
        if (!last) return no_table(path);
        auto batch = session_batch(path, *last);
        if (!batch) return std::unexpected(batch.error());
        add_problems(*batch, *last, *read);
        if (read->sessions > 1)
            batch->notes.insert(batch->notes.begin(),
                                fmt::format("the file holds {} nsys stats sessions; read the last one{}, from line {}",
                                            read->sessions,
                                            last->report_file.empty() ? "" : " (" + last->report_file + ")",
                                            last->first_line));
        return batch;
    }

    // One run per session (a log of several `nsys stats` invocations), each labelled session=N;
    // each is built as the next session begins.
    Result<std::vector<RunBatch>> collect_stream_runs(const std::string& path, ByteSource& source) const override {
        struct Built {
            RunBatch batch;
            std::size_t problems_at;
            std::uint64_t first_line;
            std::string report_file;
        };
        std::vector<Built> runs;
        auto read = read_sessions(path, source, [&](Session&& session) -> Result<void> {
            auto batch = session_batch(path, session);
            if (!batch) return std::unexpected(batch.error());
            runs.push_back(Built{std::move(*batch), session.skipped.size(), session.first_line, session.report_file});
            return {};
        });
        if (!read) return std::unexpected(read.error());
        if (runs.empty()) return no_table(path);
        std::vector<RunBatch> out;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            RunBatch& batch = runs[i].batch;
            insert_problems(batch, runs[i].problems_at, *read);
            if (runs.size() > 1) {
                batch.labels["session"] = std::to_string(i + 1);
                batch.notes.insert(batch.notes.begin(),
                                   fmt::format("session {} of {} in this file{}, from line {}", i + 1, runs.size(),
                                               runs[i].report_file.empty() ? "" : " (" + runs[i].report_file + ")",
                                               runs[i].first_line));
            }
            out.push_back(std::move(batch));
        }
        return out;
    }

private:
    struct Read {
        std::size_t sessions = 0;
        std::vector<std::string> problems;
    };

    // Reads the text; each session with tables or SKIPPED lines goes to `take` as soon as the next
    // session begins.
    Result<Read> read_sessions(const std::string& path, ByteSource& source,
                               const std::function<Result<void>(Session&&)>& take) const {
        TableReader reader(path, [&](Session&& session) -> Result<void> {
            if (session.tables.empty() && session.skipped.empty()) return {};
            return take(std::move(session));
        });
        CsvStream lines(source);
        std::string_view line;
        while (true) {
            auto got = lines.next_line(line);
            if (!got) return std::unexpected(got.error());
            if (!*got) break;
            if (auto r = reader.line(line, lines.record_line()); !r) return std::unexpected(r.error());
        }
        if (auto r = reader.finish(); !r) return std::unexpected(r.error());
        return Read{reader.sessions(), reader.problems()};
    }

    // The problems of the whole text go after the session's SKIPPED notes.
    static void insert_problems(RunBatch& batch, std::size_t at, const Read& read) {
        const auto it = batch.notes.begin() + static_cast<std::ptrdiff_t>(std::min(at, batch.notes.size()));
        batch.notes.insert(it, read.problems.begin(), read.problems.end());
    }
    static void add_problems(RunBatch& batch, const Session& session, const Read& read) {
        insert_problems(batch, session.skipped.size(), read);
    }

    static std::unexpected<Error> no_table(const std::string& path) {
        return fail(path, 0, "no nsys stats table found (expected a header such as \"Time (%)  Total Time (ns)  "
                             "Instances ...\" followed by a dash line, or its CSV form)");
    }

    Result<RunBatch> session_batch(const std::string& path, const Session& session) const {
        RunBatch batch;
        batch.format = std::string(id());
        batch.tool_version = session.tool_version;
        std::set<std::string> generations;
        bool csv = false;
        for (const Table& t : session.tables) {
            if (!t.title.generation.empty()) generations.insert(t.title.generation);
            csv = csv || t.csv;
        }
        batch.format_detail = fmt::format("{}{}", csv ? "CSV" : "text",
                                          generations.empty() ? "" : fmt::format(", {} report names", *generations.begin()));
        for (const std::string& s : session.skipped) batch.notes.push_back("SKIPPED: " + s);

        const std::size_t run_index = batch.run_entity();
        const bool has_trace = std::any_of(session.tables.begin(), session.tables.end(),
                                           [](const Table& t) { return t.title.report == Report::gpu_trace; });
        std::map<std::string, double> memory_bytes;
        std::vector<std::size_t> memory_entities;
        double gpu_time = 0, launches = 0, kernels = 0, api_calls = 0, sync_calls = 0, sync_time = 0;
        bool have_kernels = false, have_api = false;
        TimelineBuilder timeline;

        for (const Table& table : session.tables) {
            const Report report = table.title.report;
            if (report == Report::other) {
                batch.notes.push_back(fmt::format("table '{}' (line {}) is not read", table.title.id, table.line));
                continue;
            }
            if (report == Report::gpu_trace) {
                if (auto ok = feed_gpu_trace(path, table, timeline); !ok) return std::unexpected(ok.error());
                continue;
            }
            if (has_trace && (report == Report::kernels || report == Report::memory_time)) continue;
            std::size_t kept_apart = 0;
            auto rows = summarize(path, table, kept_apart);
            if (kept_apart > 0)
                batch.notes.push_back(fmt::format("{} row(s) of {} whose names nsys truncated share a name with an "
                                                  "earlier row: kept apart as \"NAME #N\" (they may be different "
                                                  "kernels)",
                                                  kept_apart, table.title.id));
            if (!rows) return std::unexpected(rows.error());
            for (auto& [name, s] : in_report_order(std::move(*rows))) {
                if (report == Report::memory_size) {
                    memory_bytes[name] += s.total;
                    continue;
                }
                Entity e;
                e.name = name;
                e.parent = static_cast<std::int64_t>(run_index);
                switch (report) {
                    case Report::kernels:
                        e.kind = EntityKind::kernel;
                        set_summary_metrics(e, s, "launches", table);
                        if (s.configs.size() == 1) {
                            const std::string& c = *s.configs.begin();
                            const std::size_t b = c.find(" block ");
                            e.attributes["grid"] = xyz(c.substr(5, b - 5));
                            e.attributes["block"] = xyz(c.substr(b + 7));
                        } else if (s.configs.size() > 1) {
                            e.attributes["launch_configs"] = std::to_string(s.configs.size());
                        }
                        if (truncated_name(name) || truncated_name(name.substr(0, name.rfind(" #"))))
                            e.attributes["truncated_name"] = "true";
                        gpu_time += s.total;
                        launches += s.count;
                        ++kernels;
                        have_kernels = true;
                        break;
                    case Report::cuda_api:
                    case Report::os_runtime: {
                        e.kind = EntityKind::api_call;
                        e.name = report == Report::cuda_api ? api_name(name) : name;
                        if (e.name != name) e.attributes["tool_name"] = name;
                        set_summary_metrics(e, s, "count", table);
                        if (report == Report::os_runtime) {
                            e.attributes["domain"] = "os_runtime";
                            break;
                        }
                        have_api = true;
                        api_calls += s.count;
                        if (is_sync_call(name)) {
                            e.attributes["synchronizing"] = "true";
                            sync_calls += s.count;
                            sync_time += s.total;
                        }
                        break;
                    }
                    case Report::nvtx:
                        e.kind = EntityKind::nvtx_range;
                        set_summary_metrics(e, s, "count", table);
                        if (!s.style.empty()) e.attributes["style"] = s.style;
                        break;
                    case Report::memory_time:
                        e.kind = EntityKind::memcpy;
                        set_summary_metrics(e, s, "count", table);
                        if (const std::string dir = memory_operation_direction(name); !dir.empty())
                            e.attributes["direction"] = dir;
                        memory_entities.push_back(batch.entities.size());
                        break;
                    default: break;
                }
                batch.entities.push_back(std::move(e));
            }
        }
        if (has_trace) {
            timeline.finish(batch);
            for (std::size_t i = 0; i < batch.entities.size(); ++i) {
                Entity& e = batch.entities[i];
                if (e.kind != EntityKind::memcpy) continue;
                if (const std::string dir = memory_operation_direction(e.name); !dir.empty())
                    e.attributes["direction"] = dir;
                memory_entities.push_back(i);
            }
        }

        // Sizes join the memory operations by name; an operation only sized still becomes an entity.
        // Unified-memory migrations ("[CUDA memcpy Unified Host-to-Device]") are the driver's, not
        // copies the program issued: their bytes and time are um_bytes and um_migration_time.
        const auto unified = [](const std::string& name) { return name.find("Unified") != std::string::npos; };
        double memcpy_bytes = 0, um_bytes = 0;
        for (const auto& [name, bytes] : memory_bytes) {
            (unified(name) ? um_bytes : memcpy_bytes) += bytes;
            auto it = std::find_if(memory_entities.begin(), memory_entities.end(),
                                   [&](std::size_t i) { return batch.entities[i].name == name; });
            Entity* e = nullptr;
            if (it == memory_entities.end()) {
                Entity fresh;
                fresh.kind = EntityKind::memcpy;
                fresh.name = name;
                fresh.parent = static_cast<std::int64_t>(run_index);
                if (const std::string dir = memory_operation_direction(name); !dir.empty())
                    fresh.attributes["direction"] = dir;
                batch.entities.push_back(std::move(fresh));
                e = &batch.entities.back();
            } else {
                e = &batch.entities[*it];
            }
            e->set(plain("bytes", bytes, "byte"));
            if (auto t = e->value("duration_total"); t && *t > 0) e->set(plain("bandwidth", bytes * 1e9 / *t, "byte/s"));
        }

        Entity& run = batch.entities[run_index];
        if (have_kernels) {
            run.set(plain("gpu_time", gpu_time, "ns"));
            run.set(plain("launches", launches, "count"));
            run.set(plain("kernels", kernels, "count"));
        } else if (!has_trace) {
            batch.notes.push_back("no kernel summary in this output: no kernel timings");
        }
        if (have_api) {
            run.set(plain("api_calls", api_calls, "count"));
            run.set(plain("sync_api_calls", sync_calls, "count"));
            run.set(plain("sync_api_time", sync_time, "ns"));
        }
        if (!memory_bytes.empty()) run.set(plain("memcpy_bytes", memcpy_bytes, "byte"));
        if (um_bytes > 0) run.set(plain("um_bytes", um_bytes, "byte"));
        double um_time = 0;
        for (const Entity& e : batch.entities)
            if (e.kind == EntityKind::memcpy && unified(e.name)) um_time += e.value("duration_total").value_or(0);
        if (um_time > 0) run.set(plain("um_migration_time", um_time, "ns"));
        // Summary tables alone give each copy kind's total time; a trace's timeline already summed them.
        if (!run.value("memory_time")) {
            double memory_time = 0;
            bool timed = false;
            for (const Entity& e : batch.entities)
                if (e.kind == EntityKind::memcpy)
                    if (const auto t = e.value("duration_total")) {
                        memory_time += *t;
                        timed = true;
                    }
            if (timed) batch.entities[run_index].set(plain("memory_time", memory_time, "ns"));
        }
        if (!session.gpu.empty()) {
            bool named = false;
            for (Entity& e : batch.entities)
                if (e.kind == EntityKind::device) {
                    e.attributes["gpu"] = session.gpu;
                    named = true;
                }
            if (!named) {
                Entity device;
                device.kind = EntityKind::device;
                device.name = "GPU 0";
                device.parent = static_cast<std::int64_t>(run_index);
                device.attributes["gpu"] = session.gpu;
                batch.entities.push_back(std::move(device));
            }
        }
        return batch;
    }
};

}  // namespace

const Collector& nsys_stats_collector() {
    static const NsysStatsCollector k_instance;
    return k_instance;
}

}  // namespace perfwatch
