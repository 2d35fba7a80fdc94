#include "collectors/nsight_compute/ncu_csv.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "collectors/readers/csv.hpp"
#include "collectors/nsight_compute/ncu_common.hpp"
#include "collectors/readers/units.hpp"

namespace perfwatch {

namespace {

// Launches of the details page kept open at once while their rows are read.
constexpr std::size_t k_open_launches = 64;

// Finds the header line ("ID","Process ID",...) after any ==PROF== lines and program output.
// Returns its byte offset and 1-based line number.
std::optional<std::pair<std::size_t, std::uint64_t>> find_header(std::string_view text) {
    std::size_t pos = 0;
    std::uint64_t line = 1;
    while (pos < text.size()) {
        const std::string_view rest = text.substr(pos);
        if (rest.starts_with("\"ID\",\"Process ID\"") || rest.starts_with("ID,Process ID,"))
            return std::pair{pos, line};
        const std::size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) break;
        pos = nl + 1;
        ++line;
    }
    return std::nullopt;
}

std::string_view header_line(std::string_view text) {
    auto h = find_header(text);
    if (!h) return {};
    std::string_view rest = text.substr(h->first);
    return rest.substr(0, rest.find('\n'));
}

int column(const std::vector<std::string>& header, std::string_view name) {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

template <typename Field>  // std::string, or std::string_view into the reader's window
std::string_view field(const std::vector<Field>& row, int index) {
    if (index < 0 || static_cast<std::size_t>(index) >= row.size()) return {};
    return row[static_cast<std::size_t>(index)];
}

// "(384, 1, 1)" -> "384x1x1"
std::string dims(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == ',') out.push_back('x');
        else if (c != '(' && c != ')' && c != ' ') out.push_back(c);
    }
    return out;
}

struct Identity {
    int id = -1, process = -1, kernel = -1, kernel_time = -1, context = -1, stream = -1, block = -1, grid = -1,
        device = -1, cc = -1;
    explicit Identity(const std::vector<std::string>& h)
        : id(column(h, "ID")), process(column(h, "Process Name")), kernel(column(h, "Kernel Name")),
          kernel_time(column(h, "Kernel Time")), context(column(h, "Context")), stream(column(h, "Stream")),
          block(column(h, "Block Size")), grid(column(h, "Grid Size")), device(column(h, "Device")),
          cc(column(h, "CC")) {}

    bool is_identity(int index) const {
        return index == id || index == process || index == kernel || index == kernel_time || index == context ||
               index == stream || index == block || index == grid || index == device || index == cc;
    }

    template <typename Row>
    void fill(NcuLaunch& l, const Row& row, RunBatch& batch) const {
        l.id = field(row, id);
        l.kernel = field(row, kernel);
        l.device = field(row, device);
        if (const std::string_view v = field(row, process); !v.empty()) l.attributes["process"] = v;
        if (const std::string_view v = field(row, context); !v.empty()) l.attributes["context"] = v;
        if (const std::string_view v = field(row, stream); !v.empty()) l.attributes["stream"] = v;
        if (const std::string_view v = field(row, cc); !v.empty()) l.attributes["cc"] = v;
        if (const std::string_view v = field(row, block); !v.empty()) l.attributes["block"] = dims(v);
        if (const std::string_view v = field(row, grid); !v.empty()) l.attributes["grid"] = dims(v);
        if (const std::string_view v = field(row, kernel_time); !v.empty()) {
            if (auto iso = ncu_time_to_iso(v)) {
                l.attributes["time"] = *iso;
                if (!batch.captured_at || *iso < *batch.captured_at) batch.captured_at = *iso;
            }
        }
    }
};

Result<RunBatch> csv_error(const std::string& path, const CsvStream& reader) {
    return fail(path, reader.record_line(), reader.error());
}

// Positions `reader` at the header line; an error when there is none.
// Sets `unlocked` when a line before it says ncu ran with unmodified clocks.
Result<std::uint64_t> seek_header(const std::string& path, CsvStream& reader, bool& unlocked) {
    auto found = reader.skip_to_line_starting_with({"\"ID\",\"Process ID\"", "ID,Process ID,"},
                                                   [&](std::string_view line) { unlocked |= says_unlocked_clocks(line); });
    if (!found) return std::unexpected(found.error());
    if (!*found) return fail(path, 0, "no Nsight Compute CSV header (a line starting with \"ID\",\"Process ID\")");
    return reader.line();
}

// Reads the next record (strings, or views lasting until the next call); false at the end; an
// error naming the line otherwise.
template <typename Field>
Result<bool> next_record(const std::string& path, CsvStream& reader, std::vector<Field>& row) {
    auto status = reader.next(row);
    if (!status) return std::unexpected(status.error());
    if (*status == CsvReader::Status::error) return fail(path, reader.record_line(), reader.error());
    return *status == CsvReader::Status::record;
}

class NcuCsvCollector final : public StreamCollector {
public:
    std::string_view id() const override { return "ncu-csv"; }
    std::string_view description() const override { return "Nsight Compute CSV, details page (ncu --csv)"; }

    bool recognizes(std::string_view head) const override {
        const std::string_view h = header_line(head);
        return h.find("Metric Name") != std::string_view::npos && h.find("Metric Value") != std::string_view::npos;
    }

    Result<RunBatch> collect_stream(const std::string& path, ByteSource& source) const override {
        CsvStream reader(source);
        bool unlocked = false;
        const auto header_line = seek_header(path, reader, unlocked);
        if (!header_line) return std::unexpected(header_line.error());
        std::vector<std::string> header;
        std::vector<std::string_view> row;  // the fields where they lie in the reader's window
        if (auto got = next_record(path, reader, header); !got || !*got)
            return got ? csv_error(path, reader) : std::unexpected(got.error());

        const Identity ident(header);
        const int section = column(header, "Section Name"), metric_name = column(header, "Metric Name"),
                  metric_unit = column(header, "Metric Unit"), metric_value = column(header, "Metric Value"),
                  rule_name = column(header, "Rule Name"), rule_type = column(header, "Rule Type"),
                  rule_text = column(header, "Rule Description"),
                  speedup_type = column(header, "Estimated Speedup Type"),
                  speedup = column(header, "Estimated Speedup");
        if (ident.id < 0 || ident.kernel < 0 || metric_name < 0 || metric_value < 0)
            return fail(path, *header_line,
                        "CSV header lacks one of the columns ID, Kernel Name, Metric Name, Metric Value");

        RunBatch batch;
        batch.format = std::string(id());
        if (unlocked) batch.labels["clocks"] = "unlocked";
        batch.format_detail = rule_name >= 0     ? "details page with rule results (2023+ header)"
                              : ident.block >= 0 ? "details page (2021-2022 header)"
                                                 : "details page (2020 header)";
        // A launch's rows come together; the few most recent launches stay open (rows of
        // neighbouring launches may interleave), older ones go to the builder as they close.
        NcuEntityBuilder builder;
        std::deque<std::pair<std::string, NcuLaunch>> open;
        std::unordered_set<std::string> closed_recently;
        const std::size_t min_fields = static_cast<std::size_t>(metric_value) + 1;
        while (true) {
            auto got = next_record(path, reader, row);
            if (!got) return std::unexpected(got.error());
            if (!*got) break;
            if (row.size() == 1 && trim(row[0]).empty()) continue;  // blank line
            if (row.size() < min_fields)
                return fail(path, reader.record_line(),
                            fmt::format("expected at least {} fields (up to \"Metric Value\"), found {}", min_fields,
                                        row.size()));
            const std::string_view launch_id = field(row, ident.id);
            if (!parse_report_number(launch_id))
                return fail(path, reader.record_line(),
                            fmt::format("expected a numeric launch ID in column 1, found \"{}\"", launch_id));
            // Newest first: a row almost always belongs to the launch being read.
            auto found = std::find_if(open.rbegin(), open.rend(), [&](const auto& o) { return o.first == launch_id; });
            auto it = found == open.rend() ? open.end() : std::prev(found.base());
            if (it == open.end()) {
                if (closed_recently.contains(std::string(launch_id)))
                    return fail(path, reader.record_line(),
                                fmt::format("rows of launch {} appear again after more than {} other launches "
                                            "began; the rows of one launch must stay together",
                                            launch_id, k_open_launches));
                open.emplace_back(std::string(launch_id), NcuLaunch{});
                ident.fill(open.back().second, row, batch);
                it = std::prev(open.end());
                if (open.size() > k_open_launches) {
                    closed_recently.insert(open.front().first);
                    builder.add(std::move(open.front().second));
                    open.pop_front();
                    // IDs closed long ago are forgotten (bounded memory); ncu writes launches in order.
                    if (closed_recently.size() > 4 * k_open_launches) closed_recently.clear();
                }
            }
            NcuLaunch& launch = it->second;
            if (const std::string_view rule = field(row, rule_name); !rule.empty()) {
                ToolFinding f;
                f.rule = rule;
                f.type = field(row, rule_type);
                f.section = field(row, section);
                f.text = field(row, rule_text);
                f.speedup_type = field(row, speedup_type);
                f.speedup_pct = parse_report_number(field(row, speedup));
                launch.findings.push_back(std::move(f));
                continue;
            }
            const std::string_view name = field(row, metric_name);
            if (name.empty()) continue;
            add_ncu_value(launch, name, field(row, metric_unit), field(row, metric_value));
        }
        for (auto& [id, launch] : open) builder.add(std::move(launch));
        if (builder.records() == 0) return fail(path, *header_line, "CSV header found but no kernel rows follow it");
        builder.finish(batch);
        return batch;
    }
};

class NcuRawCsvCollector final : public StreamCollector {
public:
    std::string_view id() const override { return "ncu-raw-csv"; }
    std::string_view description() const override {
        return "Nsight Compute CSV, raw page (ncu --page raw --csv)";
    }

    bool recognizes(std::string_view head) const override {
        const std::string_view h = header_line(head);
        return !h.empty() && h.find("Metric Name") == std::string_view::npos && h.find("__") != std::string_view::npos;
    }

    Result<RunBatch> collect_stream(const std::string& path, ByteSource& source) const override {
        CsvStream reader(source);
        bool unlocked = false;
        const auto header_line = seek_header(path, reader, unlocked);
        if (!header_line) return std::unexpected(header_line.error());
        std::vector<std::string> header, units, row;
        if (auto got = next_record(path, reader, header); !got || !*got)
            return got ? csv_error(path, reader) : std::unexpected(got.error());
        const Identity ident(header);
        if (ident.id < 0 || ident.kernel < 0)
            return fail(path, *header_line, "CSV header lacks the ID or Kernel Name column");

        RunBatch batch;
        batch.format = std::string(id());
        if (unlocked) batch.labels["clocks"] = "unlocked";
        batch.format_detail = "raw page";
        NcuEntityBuilder builder;
        bool have_units = false;
        while (true) {
            auto got = next_record(path, reader, row);
            if (!got) return std::unexpected(got.error());
            if (!*got) break;
            if (row.size() == 1 && trim(row[0]).empty()) continue;
            if (row.size() != header.size())
                return fail(path, reader.record_line(),
                            fmt::format("expected {} fields as in the header, found {}", header.size(), row.size()));
            if (!have_units && field(row, ident.id).empty()) {  // the units row follows the header
                units = row;
                have_units = true;
                continue;
            }
            if (!parse_report_number(field(row, ident.id)))
                return fail(path, reader.record_line(),
                            fmt::format("expected a numeric launch ID, found \"{}\"", field(row, ident.id)));
            NcuLaunch launch;
            ident.fill(launch, row, batch);
            for (std::size_t c = 0; c < header.size(); ++c) {
                if (ident.is_identity(static_cast<int>(c)) || header[c] == "Process ID" || header[c] == "Host Name")
                    continue;
                add_ncu_value(launch, header[c], have_units ? units[c] : std::string(), row[c]);
            }
            builder.add(std::move(launch));
        }
        if (builder.records() == 0) return fail(path, *header_line, "CSV header found but no launch rows follow it");
        builder.finish(batch);
        return batch;
    }
};

}  // namespace

const Collector& ncu_csv_collector() {
    static const NcuCsvCollector k_instance;
    return k_instance;
}

const Collector& ncu_raw_csv_collector() {
    static const NcuRawCsvCollector k_instance;
    return k_instance;
}

}  // namespace perfwatch
