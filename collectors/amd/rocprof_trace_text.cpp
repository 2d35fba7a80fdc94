#include "collectors/amd/rocprof_trace_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "collectors/readers/csv.hpp"
#include "collectors/readers/timeline.hpp"
#include "collectors/readers/units.hpp"

namespace perfwatch {

namespace {

struct TextRecord {
    double begin = 0, end = 0;
    std::string_view first, second;  // dev-id:queue-id or pid:tid
    std::string_view rest;
};

// "123:456 7:8 rest" -> its parts; nullopt when the line is not such a record.
std::optional<TextRecord> parse_record(std::string_view line) {
    auto take_pair = [&](std::string_view& s, std::string_view& a, std::string_view& b) {
        const auto sp = s.find(' ');
        if (sp == std::string_view::npos) return false;
        const std::string_view pair = s.substr(0, sp);
        const auto colon = pair.find(':');
        if (colon == std::string_view::npos || colon == 0 || colon + 1 >= pair.size()) return false;
        a = pair.substr(0, colon);
        b = pair.substr(colon + 1);
        s = s.substr(sp + 1);
        return true;
    };
    auto digits = [](std::string_view s) {
        return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    };
    TextRecord r;
    std::string_view s = line, b, e;
    if (!take_pair(s, b, e) || !digits(b) || !digits(e)) return std::nullopt;
    if (!take_pair(s, r.first, r.second) || !digits(r.first) || !digits(r.second) || s.empty()) return std::nullopt;
    r.begin = parse_report_number(b).value_or(0);
    r.end = parse_report_number(e).value_or(0);
    r.rest = s;
    return r;
}

// "hipMalloc(ptr=..., size=4096)" -> "hipMalloc"; empty when `rest` is no API call.
std::string_view api_function(std::string_view rest) {
    const auto paren = rest.find('(');
    if (paren == std::string_view::npos || paren == 0) return {};
    const std::string_view f = rest.substr(0, paren);
    if (!std::all_of(f.begin(), f.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
        return {};
    if (!f.starts_with("hip") && !f.starts_with("hsa_") && !f.starts_with("__hip") && !f.starts_with("kfd") &&
        !f.starts_with("roctx"))
        return {};
    return f;
}

// API calls and ranges aggregated per name.
struct Aggregates {
    std::map<std::string, std::vector<double>> calls, ranges;

    void finish(RunBatch& batch) {
        const std::size_t run = batch.run_entity();
        double api_calls = 0, sync_calls = 0, sync_time = 0;
        for (auto& [name, durations] : calls) {
            Entity e;
            e.kind = EntityKind::api_call;
            e.name = name;
            e.parent = static_cast<std::int64_t>(run);
            const DurationStats s = duration_stats(std::move(durations));
            set_duration_metrics(e, s, "count");
            api_calls += s.count;
            if (is_hip_sync_call(name)) {
                e.attributes["synchronizing"] = "true";
                sync_calls += s.count;
                sync_time += s.total;
            }
            batch.entities.push_back(std::move(e));
        }
        for (auto& [name, durations] : ranges) {
            Entity e;
            e.kind = EntityKind::nvtx_range;
            e.name = name;
            e.parent = static_cast<std::int64_t>(run);
            set_duration_metrics(e, duration_stats(std::move(durations)), "count");
            e.attributes["domain"] = "roctx";
            batch.entities.push_back(std::move(e));
        }
        if (!calls.empty()) {
            Entity& r = batch.entities[run];
            r.set(plain("api_calls", api_calls, "count"));
            r.set(plain("sync_api_calls", sync_calls, "count"));
            r.set(plain("sync_api_time", sync_time, "ns"));
        }
    }
};

class TextTraceCollector final : public Collector {
public:
    std::string_view id() const override { return "rocprof-text-trace"; }
    std::string_view description() const override {
        return "rocprof v1 raw traces: hcc_ops_trace.txt (kernels and copies) and hip_api_trace.txt/hsa_api_trace.txt "
               "(API calls)";
    }
    bool recognizes(std::string_view head) const override {
        LineReader lines(head);
        std::string_view line;
        int seen = 0;
        while (seen < 3 && lines.next(line)) {
            if (trim(line).empty()) continue;
            if (!parse_record(line)) return false;
            ++seen;
        }
        return seen > 0;
    }
    Result<RunBatch> collect(const std::string& path, std::string_view content) const override {
        LineReader lines(content);
        std::string_view line;
        std::uint64_t line_no = 0;
        TimelineBuilder timeline(TimelineOptions{false, true});
        Aggregates api;
        std::size_t ops = 0, barriers = 0;
        while (lines.next(line)) {
            ++line_no;
            if (trim(line).empty()) continue;
            const auto r = parse_record(line);
            if (!r) return fail(path, line_no, "expected \"BeginNs:EndNs id:id name\" (a rocprof v1 trace record)");
            if (r->end < r->begin) return fail(path, line_no, "EndNs before BeginNs");
            if (const std::string_view f = api_function(r->rest); !f.empty()) {
                api.calls[std::string(f)].push_back(r->end - r->begin);
                continue;
            }
            // An operation: "Name:correlation-id" on device dev-id, queue queue-id.
            std::string_view name = r->rest;
            if (const auto colon = name.rfind(':'); colon != std::string_view::npos && colon + 1 < name.size() &&
                std::all_of(name.begin() + static_cast<std::ptrdiff_t>(colon) + 1, name.end(),
                            [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
                name = name.substr(0, colon);
            name = trim(name);
            if (name.find("Marker") != std::string_view::npos) {
                ++barriers;
                continue;
            }
            const bool copy = name.find("Memcpy") != std::string_view::npos || name.find("Copy") != std::string_view::npos ||
                              name.find("Fill") != std::string_view::npos;
            TimelineEvent ev;
            ev.kind = copy ? TimelineEvent::Kind::memory : TimelineEvent::Kind::kernel;
            ev.name = std::string(name);
            ev.device = copy ? std::string() : fmt::format("device {}", r->first);
            ev.queue = std::string(r->second);
            ev.start_ns = r->begin;
            ev.end_ns = r->end;
            timeline.add(std::move(ev));
            ++ops;
        }
        RunBatch batch;
        batch.format = std::string(id());
        batch.format_detail = ops > 0 ? "hcc_ops_trace" : "API trace";
        if (ops > 0) timeline.finish(batch);
        api.finish(batch);
        if (barriers > 0) batch.notes.push_back(fmt::format("{} barrier packets are not counted as kernels", barriers));
        if (ops == 0) batch.notes.push_back("API calls only: no kernel timings");
        return batch;
    }
};

class ApiTraceCsvCollector final : public Collector {
    // rocprofv2's file plugin: this header, a blank line, then rows of DOMAIN,"function", a
    // launch call's "kernel name" (a field the header does not name), begin, end, correlation ID.
    static constexpr std::string_view k_v2_header = "Domain,Function,Start_Timestamp,End_Timestamp,Correlation_ID";

public:
    std::string_view id() const override { return "rocprof-api-trace-csv"; }
    std::string_view description() const override {
        return "rocprofv3 *_hip_api_trace.csv, *_hsa_api_trace.csv, *_marker_api_trace.csv (API calls, roctx ranges) "
               "and rocprofv2 hip_api_trace.csv, hsa_api_trace.csv (file plugin)";
    }
    bool recognizes(std::string_view head) const override {
        std::string_view first = head.substr(0, head.find('\n'));
        if (first.ends_with('\r')) first.remove_suffix(1);
        return (first.starts_with("\"Domain\",\"Function\",") && first.find("\"Start_Timestamp\"") != std::string_view::npos) ||
               first == k_v2_header;
    }
    Result<RunBatch> collect(const std::string& path, std::string_view content) const override {
        CsvReader reader(content);
        std::vector<std::string> header, row;
        if (reader.next(header) != CsvReader::Status::record) return fail(path, 1, "no header row");
        for (std::string& h : header) std::erase(h, '\r');
        auto col = [&](std::string_view n) { return column_index(header, {n}); };
        const bool v2 = fmt::format("{}", fmt::join(header, ",")) == k_v2_header;
        const int c_domain = col("Domain"), c_function = col("Function"), c_start = col("Start_Timestamp"),
                  c_end = col("End_Timestamp");
        if (c_domain < 0 || c_function < 0 || c_start < 0 || c_end < 0)
            return fail(path, 1, "header lacks Domain, Function, Start_Timestamp or End_Timestamp");
        Aggregates api;
        std::map<std::string, std::size_t> domains;
        while (true) {
            const auto status = reader.next(row);
            if (status == CsvReader::Status::end) break;
            if (status == CsvReader::Status::error) return fail(path, reader.record_line(), reader.error());
            if (row.size() == 1 && trim(row[0]).empty()) continue;
            // A v2 launch call names its kernel in a field of its own: the times are counted from the end.
            const std::size_t extra = v2 && row.size() == header.size() + 1 ? 1 : 0;
            if (row.size() != header.size() + extra)
                return fail(path, reader.record_line(),
                            fmt::format("expected {} fields as in the header, found {}", header.size(), row.size()));
            for (std::string& f : row) std::erase(f, '\r');
            const auto s = parse_report_number(row[static_cast<std::size_t>(c_start) + extra]);
            const auto e = parse_report_number(row[static_cast<std::size_t>(c_end) + extra]);
            if (!s || !e || *e < *s)
                return fail(path, reader.record_line(), "expected Start_Timestamp <= End_Timestamp (ns)");
            const std::string& domain = row[static_cast<std::size_t>(c_domain)];
            ++domains[domain];
            const std::string& function = row[static_cast<std::size_t>(c_function)];
            if (domain == "MARKER_CORE_RANGE_API") api.ranges[function].push_back(*e - *s);
            else if (!domain.starts_with("MARKER_")) api.calls[function].push_back(*e - *s);
        }
        RunBatch batch;
        batch.format = std::string(id());
        std::string names;
        for (const auto& [d, n] : domains) names += fmt::format("{}{} {}", names.empty() ? "" : ", ", n, d);
        batch.format_detail = names.empty() ? "no records" : names;
        batch.run_entity();
        api.finish(batch);
        batch.notes.push_back("API trace only: no kernel timings");
        return batch;
    }
};

}  // namespace

bool is_hip_sync_call(std::string_view name) {
    for (std::string_view s : {"hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipStreamWaitEvent",
                               "hipMemcpy", "hipMemcpy2D", "hipMemset", "hipMemcpyDtoH", "hipMemcpyHtoD", "hipMemcpyDtoD",
                               "hipCtxSynchronize"})
        if (name == s) return true;
    return false;
}

const Collector& rocprof_text_trace_collector() {
    static const TextTraceCollector c;
    return c;
}

const Collector& rocprof_api_trace_csv_collector() {
    static const ApiTraceCsvCollector c;
    return c;
}

}  // namespace perfwatch
