#include "collectors/fpga_opencl/fpga_profile_mon.hpp"

#include <fmt/format.h>

#include <charconv>
#include <optional>

#include "collectors/readers/csv.hpp"
#include "collectors/readers/timeline.hpp"
#include "collectors/readers/units.hpp"

namespace perfwatch {

namespace {

// The fields of `line` into `out` (its capacity reused from line to line).
void split_commas(std::string_view line, std::vector<std::string_view>& out) {
    out.clear();
    std::size_t pos = 0;
    while (true) {
        const std::size_t c = line.find(',', pos);
        out.push_back(line.substr(pos, c == std::string_view::npos ? std::string_view::npos : c - pos));
        if (c == std::string_view::npos) return;
        pos = c + 1;
    }
}

std::vector<std::string_view> split_commas(std::string_view line) {
    std::vector<std::string_view> out;
    split_commas(line, out);
    return out;
}

std::optional<long long> integer(std::string_view s) {
    long long v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
    return v;
}

// What integer() accepts, without the value: an optional minus and 1 to 19 digits.
bool is_integer(std::string_view s) {
    const std::string_view digits = s.starts_with('-') ? s.substr(1) : s;
    if (digits.empty() || digits.size() > 18) return integer(s).has_value();
    for (const char c : digits)
        if (c < '0' || c > '9') return false;
    return true;
}

enum class Layout { unknown, legacy, shared };

// Which layouts a kernel line fits: legacy "d,q,name,start,end,N,c1..cN" has 6+N fields,
// the newer "d,q,name,start,end,shared,N,c1..cN" has 7+N.
bool fits_legacy(const std::vector<std::string_view>& f) {
    if (f.size() < 6) return false;
    auto n = integer(f[5]);
    return n && *n >= 0 && f.size() == 6 + static_cast<std::size_t>(*n);
}
bool fits_shared(const std::vector<std::string_view>& f) {
    if (f.size() < 7) return false;
    auto shared = integer(f[5]);
    auto n = integer(f[6]);
    return shared && *shared >= -1 && *shared <= 3 && n && *n >= 0 && f.size() == 7 + static_cast<std::size_t>(*n);
}

// Runtime operations other than kernels are written with a leading dot (".mem_transfer_read").
TimelineEvent::Kind op_kind(std::string_view name) {
    if (!name.starts_with('.')) return TimelineEvent::Kind::kernel;
    if (name == ".reprogram") return TimelineEvent::Kind::other;
    return TimelineEvent::Kind::memory;
}

bool plausible_line(std::string_view line) {
    // A profile line starts with an integer: another report's line (a JSON trace is often one
    // line of megabytes) is not split.
    if (!integer(line.substr(0, line.find(',')))) return false;
    const auto f = split_commas(line);
    if (f.size() < 5 || !integer(f[1]) || trim(f[2]).empty() || !integer(f[3]) || !integer(f[4]))
        return false;
    if (op_kind(f[2]) != TimelineEvent::Kind::kernel) return f.size() <= 6;
    return fits_legacy(f) || fits_shared(f);
}

class ProfileMonCollector final : public StreamCollector {
public:
    std::string_view id() const override { return "fpga-profile-mon"; }
    std::string_view description() const override {
        return "Intel FPGA OpenCL dynamic profiler profile.mon (legacy and shared-counter layouts, memory "
               "operation lines)";
    }

    // The first line must be a profile line; later lines are checked (with their line number)
    // when the file is read.
    bool recognizes(std::string_view head) const override {
        LineReader lines(head);
        std::string_view line;
        while (lines.next(line))
            if (!trim(line).empty()) return plausible_line(line);
        return false;
    }

    // Lines stream into a TimelineBuilder: memory does not grow with the number of executions.
    Result<RunBatch> collect_stream(const std::string& path, ByteSource& source) const override {
        TimelineBuilder timeline;
        Layout layout = Layout::unknown;
        std::size_t kernel_lines = 0, memory_lines = 0;
        CsvStream lines(source);
        std::string_view line;
        std::vector<std::string_view> f;
        long long last_device = 0;
        std::string device_name;
        while (true) {
            auto got = lines.next_line(line);
            if (!got) return std::unexpected(got.error());
            if (!*got) break;
            const std::uint64_t line_no = lines.record_line();
            if (trim(line).empty()) continue;
            split_commas(line, f);
            if (f.size() < 5)
                return fail(path, line_no,
                            fmt::format("expected at least 5 comma-separated fields "
                                        "(device,queue,name,start_ns,end_ns,...), found {}",
                                        f.size()));
            const auto device = integer(f[0]), queue = integer(f[1]);
            const auto start = integer(f[3]), end = integer(f[4]);
            if (!device || !queue) return fail(path, line_no, "expected integer device and command queue ids in fields 1 and 2");
            if (!start || !end || *start < 0 || *end < 0)
                return fail(path, line_no, "expected integer start and end timestamps (ns) in fields 4 and 5");
            TimelineEvent ev;
            ev.name = std::string(trim(f[2]));
            ev.kind = op_kind(ev.name);
            if (*device != last_device || device_name.empty()) {
                last_device = *device;
                device_name = fmt::format("device {}", *device);
            }
            ev.device = device_name;
            ev.queue = std::to_string(*queue);
            ev.start_ns = static_cast<double>(*start);
            ev.end_ns = *end == 0 ? -1 : static_cast<double>(*end);  // 0: read back mid-run, no end
            if (ev.kind == TimelineEvent::Kind::kernel) {
                const bool legacy = fits_legacy(f), shared = fits_shared(f);
                if (!legacy && !shared)
                    return fail(path, line_no,
                                fmt::format("kernel line has {} fields: expected 6+N (device,queue,name,start,end,N,"
                                            "counters) or 7+N (with the shared-counter field), N being the "
                                            "counter count",
                                            f.size()));
                Layout this_line = legacy && shared ? layout : (legacy ? Layout::legacy : Layout::shared);
                if (this_line == Layout::unknown) this_line = Layout::shared;
                if (layout == Layout::unknown) layout = this_line;
                if (this_line != layout && !(legacy && shared))
                    return fail(path, line_no,
                                fmt::format("line is in the {} layout but earlier lines are in the {} layout",
                                            this_line == Layout::legacy ? "legacy" : "shared-counter",
                                            layout == Layout::legacy ? "legacy" : "shared-counter"));
                const std::size_t first_counter = layout == Layout::legacy ? 6 : 7;
                if (layout == Layout::shared) ev.attributes["shared_counter"] = std::string(f[5]);
                for (std::size_t i = first_counter; i < f.size(); ++i)
                    if (!is_integer(f[i]))
                        return fail(path, line_no, fmt::format("counter {} is not an integer: \"{}\"",
                                                               i - first_counter + 1, f[i]));
                // The counters as the line writes them (its fields joined by commas are its text).
                const std::size_t from = first_counter < f.size()
                                             ? static_cast<std::size_t>(f[first_counter].data() - line.data())
                                             : line.size();
                ev.attributes["counters"] = std::string(line.substr(from));
                ++kernel_lines;
            } else {
                ++memory_lines;
            }
            timeline.add(std::move(ev));
        }
        if (kernel_lines + memory_lines == 0) return fail(path, 0, "no profile lines");
        RunBatch batch;
        batch.format = std::string(id());
        batch.format_detail = layout == Layout::legacy ? "legacy layout (no shared-counter field)"
                              : layout == Layout::shared ? "layout with shared-counter field"
                                                         : "memory operation lines only";
        batch.notes.push_back(fmt::format("{} kernel executions, {} memory operations; counters are kept raw "
                                          "(their meaning is in the matching .aocx)",
                                          kernel_lines, memory_lines));
        timeline.finish(batch);
        return batch;
    }
};

}  // namespace

const Collector& fpga_profile_mon_collector() {
    static const ProfileMonCollector k_instance;
    return k_instance;
}

}  // namespace perfwatch
