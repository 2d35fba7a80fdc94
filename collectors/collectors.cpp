#include <fmt/format.h>

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <set>

#include "collectors/fpga_opencl/clintercept.hpp"
#include "collectors/collector.hpp"

#include "collectors/reader_process.hpp"
#include "collectors/readers/byte_source.hpp"
#include "collectors/readers/text_encoding.hpp"
#include "collectors/fpga_opencl/fpga_profile_mon.hpp"
#include "collectors/pytorch/kineto.hpp"
#include "collectors/nsight_compute/ncu_csv.hpp"
#include "collectors/nsight_compute/ncu_text.hpp"
#include "collectors/nsight_systems/nsys_sqlite.hpp"
#include "collectors/nsight_systems/nsys_stats.hpp"
#include "collectors/amd/rocprof.hpp"
#include "collectors/amd/rocprof_pmc.hpp"
#include "collectors/amd/rocprof_trace_text.hpp"
#include "collectors/launch_shape.hpp"
#include "collectors/sanitize.hpp"

namespace perfwatch {

namespace {

// Detection order: the most specific signatures first.
// The generic Chrome trace reader comes last: it accepts any trace-event JSON.
const std::array<const Collector*, 19>& collector_table() {
    static const std::array<const Collector*, 19> k_collectors{
        &rocprof_sqlite_collector(),
        &nsys_sqlite_collector(),
        &rocprof_stats_collector(),
        &rocprof_trace_csv_collector(),
        &rocprof_pmc_collector(),
        &rocprof_kernel_top_collector(),
        &rocprof_counter_collection_collector(),
        &rocprof_api_trace_csv_collector(),
        &rocprof_text_trace_collector(),
        &ncu_csv_collector(),
        &ncu_raw_csv_collector(),
        &ncu_text_collector(),
        &nsys_stats_collector(),
        &fpga_profile_mon_collector(),
        &clintercept_report_collector(),
        &clintercept_trace_collector(),
        &kineto_collector(),
        &rocprof_json_collector(),
        &chrome_trace_collector(),
    };
    return k_collectors;
}

}  // namespace

std::span<const Collector* const> collectors() { return collector_table(); }

const Collector* detect(std::string_view content) {
    // Compressed reports are recognised by what they decompress to; UTF-16 ones by their UTF-8
    // text; plain ones by their bytes.
    const std::string_view start = content.substr(0, std::min(content.size(), k_sniff_bytes));
    const TextEncoding encoding = is_gzip(content) ? TextEncoding::plain : text_encoding(start);
    const std::string inflated = is_gzip(content) ? sniff_prefix(content, k_sniff_bytes)
                                 : encoding != TextEncoding::plain ? to_utf8(start, encoding)
                                                                   : std::string();
    const std::string_view head = is_gzip(content) || encoding != TextEncoding::plain ? std::string_view(inflated) : start;
    for (const Collector* c : collectors())
        if (c->recognizes(head)) return c;
    return nullptr;
}

void add_report_labels(RunBatch& batch) {
    std::set<std::string> gpus;
    for (const Entity& e : batch.entities)
        if (e.kind == EntityKind::device)
            if (auto it = e.attributes.find("gpu"); it != e.attributes.end() && !it->second.empty()) gpus.insert(it->second);
    std::string gpu;
    for (const std::string& g : gpus) gpu += (gpu.empty() ? "" : " + ") + g;
    if (!gpu.empty()) batch.labels.emplace("gpu", gpu);
    if (!batch.tool_version.empty()) batch.labels.emplace("tool_version", batch.tool_version);
}

namespace {

// What a profiler writes beside its reports that is no report itself: set aside, not failed.
std::optional<std::string_view> context_file(std::string_view head) {
    const std::string_view first = head.substr(0, head.find('\n'));
    if (first.find("workload_name") != std::string_view::npos &&
        (first.find("gpu_arch") != std::string_view::npos || first.find("gpu_soc") != std::string_view::npos))
        return "a rocprof-compute sysinfo.csv: context read with the pmc_perf.csv beside it, not a report";
    if (first.starts_with("Device,HBMBw") || first.starts_with("device,HBMBw"))
        return "a rocprof-compute roofline.csv (measured peaks): context, not a report";
    if (first.starts_with("\"Node_Id\",\"Logical_Node_Id\",\"Agent_Type\"") || first.starts_with("Node_Id,Logical_Node_Id,Agent_Type"))
        return "a rocprof agent_info.csv: context read with the counter collection beside it, not a report";
    if (first.starts_with("pmc:") || first.starts_with("pmc :"))
        return "a rocprof input file (pmc: counters to collect), not a report";
    return std::nullopt;
}

// Why no collector takes `head` (the start of a report, raw): empty, binary, corrupt gzip,
// a profiler's context file, or simply unknown. `whole` inflates the rest of a gzip report to
// report its own error.
Error unrecognised(const std::string& path, std::string_view head, const std::function<Result<void>()>& inflate_all) {
    if (head.empty()) return fail(path, 0, "file is empty (expected a profiler report)").error();
    if (const auto what = context_file(head)) {
        Error e = fail(path, 0, fmt::format("set aside: {}", *what)).error();
        e.skipped = true;
        return e;
    }
    if (is_gzip(head)) {
        if (auto whole = inflate_all(); !whole) return whole.error();
        return fail(path, 0, "gzip-compressed, but what it holds is in no format perfwatch reads "
                             "(see `perfwatch formats`)")
            .error();
    }
    const std::string_view start = head.substr(0, std::min(head.size(), k_sniff_bytes));
    if (const auto nul = start.find('\0'); nul != std::string_view::npos)
        return fail_at_offset(path, nul, "binary data (NUL byte) in no format perfwatch reads (see `perfwatch formats`)")
            .error();
    Error e = fail(path, 0, "unrecognised report format (see `perfwatch formats`)").error();
    e.detail = "expected one of:";
    for (const Collector* k : collectors()) e.detail += fmt::format("\n  {}: {}", k->id(), k->description());
    return e;
}

void finish_batch(RunBatch& batch, const std::string& path, std::string sha256) {
    batch.source = path;
    batch.sha256 = std::move(sha256);
    add_report_labels(batch);
    add_launch_shape(batch);
    sanitize_batch(batch);
    for (Entity& e : batch.entities) e.shrink_to_fit();
}

}  // namespace

Result<RunBatch> collect_content(const std::string& path, std::string_view content) {
    const Collector* c = content.empty() ? nullptr : detect(content);
    if (c == nullptr)
        return std::unexpected(unrecognised(path, content, [&]() -> Result<void> {
            if (auto whole = read_all(path, content); !whole) return std::unexpected(whole.error());
            return {};
        }));
    const TextEncoding encoding = is_gzip(content) ? TextEncoding::plain : text_encoding(content);
    const std::string text = encoding != TextEncoding::plain ? to_utf8(content, encoding) : std::string();
    auto batch = c->collect(path, encoding != TextEncoding::plain ? std::string_view(text) : content);
    if (!batch) return batch;
    finish_batch(*batch, path, sha256_hex(content));
    return batch;
}

std::string detect_file_format(const std::string& path) {
    auto file = FileSource::open(path);
    if (!file) return "unrecognized";
    const auto head = (*file)->head(k_sniff_bytes);
    const Collector* c = !head || head->empty() ? nullptr : detect(*head);
    return c != nullptr ? std::string(c->id()) : std::string("unrecognized");
}

namespace {

// collect_file's reading; `runs` set: every run of a whole-input report (collect_runs).
Result<RunBatch> collect_file_impl(const std::string& path, std::vector<RunBatch>* runs);

}  // namespace

Result<RunBatch> collect_file(const std::string& path) { return collect_file_impl(path, nullptr); }

Result<std::vector<RunBatch>> collect_plain_file_runs(const std::string& path) {
    std::vector<RunBatch> runs;
    auto batch = collect_file_impl(path, &runs);
    if (!batch) return std::unexpected(batch.error());
    if (runs.empty()) runs.push_back(std::move(*batch));
    return runs;
}

Result<std::vector<RunBatch>> collect_file_runs(const std::string& path, const std::vector<Converter>& converters,
                                                const ReaderOptions& reader) {
    const Converter* converter = converter_for(converters, path);
    if (converter == nullptr) return read_runs(path, reader);
    auto sha = sha256_file(path);  // also refuses a directory or a missing file
    if (!sha) return std::unexpected(sha.error());
    auto converted = convert_report(*converter, path);
    if (!converted) return std::unexpected(converted.error());
    auto runs = read_runs(converted->path(), reader);
    if (!runs) {
        Error e = runs.error();
        e.message = fmt::format("{} (reading what `{}` produced from {})", e.message, describe_command(*converter, path), path);
        e.file = path;
        return std::unexpected(std::move(e));
    }
    for (RunBatch& batch : *runs) {
        batch.source = path;
        batch.sha256 = *sha;
        batch.notes.push_back(fmt::format("converted from {} by `{}`", converter->extension, describe_command(*converter, path)));
    }
    return runs;
}

namespace {

// Compressed reports from this size on are inflated on a thread of their own; plain ones from
// the second size on are read there (the read calls' copies leave the parser's thread).
constexpr std::uint64_t k_inflate_beside_bytes = 1 << 20;
constexpr std::uint64_t k_read_beside_bytes = 8 << 20;

Result<RunBatch> collect_file_impl(const std::string& path, std::vector<RunBatch>* runs) {
    auto file = FileSource::open(path);
    if (!file) return std::unexpected(file.error());
    FileSource& raw = **file;
    auto head = raw.head(k_sniff_bytes);
    if (!head) return std::unexpected(head.error());
    // Text in another encoding than UTF-8 (UTF-16 from Windows shells, a UTF-8 BOM) is read as UTF-8.
    const TextEncoding encoding = is_gzip(*head) ? TextEncoding::plain : text_encoding(*head);
    const Collector* c = head->empty() ? nullptr : detect(*head);
    if (c == nullptr)
        return std::unexpected(unrecognised(path, encoding != TextEncoding::plain ? to_utf8(*head, encoding) : *head,
                                            [&]() -> Result<void> {
            auto inflated = gunzip(path, raw);
            constexpr std::size_t k_size = 1 << 20;
            const auto sink = std::make_unique_for_overwrite<char[]>(k_size);
            while (true) {
                auto got = inflated->read(sink.get(), k_size);
                if (!got) return std::unexpected(got.error());
                if (*got == 0) return {};
            }
        }));
    Result<RunBatch> batch;
    // Every run of the report: one is returned alone (the usual case, not copied); several go to
    // `runs` and the last is returned.
    const auto take_runs = [&](Result<std::vector<RunBatch>> all) {
        if (!all) {
            batch = std::unexpected(all.error());
        } else if (all->empty()) {
            batch = fail(path, 0, "the report holds no run");
        } else if (all->size() == 1) {
            batch = std::move(all->front());
        } else {
            *runs = std::move(*all);
            batch = runs->back();
        }
    };
    switch (c->input()) {
    case CollectorInput::stream: {
        // A large report is read (and a compressed one inflated) on a thread beside its parser.
        // The read-ahead thread hashes what it reads too.
        std::unique_ptr<ByteSource> ahead;
        if (is_gzip(*head) && raw.size_at_open() >= k_inflate_beside_bytes) {
            raw.hash_where_read();
            ahead = read_ahead(gunzip(path, raw));
        } else if (is_gzip(*head)) {
            ahead = gunzip(path, raw);
        } else if (raw.size_at_open() >= k_read_beside_bytes) {
            raw.hash_where_read();
            ahead = read_ahead(borrow(raw));
        }
        ByteSource& bytes = ahead ? *ahead : raw;
        const auto text = encoding != TextEncoding::plain ? to_utf8(bytes, encoding) : nullptr;
        ByteSource& source = text ? *text : bytes;
        if (runs != nullptr) take_runs(c->collect_stream_runs(path, source));
        else batch = c->collect_stream(path, source);
        break;
    }
    case CollectorInput::path:
        batch = c->collect(path, {});
        break;
    case CollectorInput::whole: {
        const auto text = encoding != TextEncoding::plain ? to_utf8(raw, encoding) : nullptr;
        auto content = read_rest(text ? *text : static_cast<ByteSource&>(raw));
        if (!content) return std::unexpected(content.error());
        if (runs != nullptr) take_runs(c->collect_runs(path, *content));
        else batch = c->collect(path, *content);
        break;
    }
    }
    if (!batch) return batch;
    if (encoding == TextEncoding::utf16le || encoding == TextEncoding::utf16be || encoding == TextEncoding::cr_lines) {
        const std::string note = encoding == TextEncoding::cr_lines
                                     ? std::string("the report's lines end in a bare CR, read as lines")
                                     : fmt::format("the report is {} text, read as UTF-8", encoding_name(encoding));
        batch->notes.push_back(note);
        if (runs != nullptr)
            for (RunBatch& r : *runs) r.notes.push_back(note);
    }
    // Hashes what the collector did not read and checks the file did not change meanwhile.
    auto sha = raw.finish_sha256();
    if (!sha) return std::unexpected(sha.error());
    if (runs != nullptr)
        for (std::size_t i = 0; i < runs->size(); ++i) finish_batch((*runs)[i], path, fmt::format("{}#{}", *sha, i + 1));
    finish_batch(*batch, path, std::move(*sha));
    return batch;
}

}  // namespace

Result<RunBatch> collect_file(const std::string& path, const std::vector<Converter>& converters) {
    if (converter_for(converters, path) == nullptr) return collect_file(path);
    auto runs = collect_file_runs(path, converters, {});
    if (!runs) return std::unexpected(runs.error());
    return std::move(runs->back());
}

}  // namespace perfwatch
