#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/readers/byte_source.hpp"
#include "collectors/convert.hpp"
#include "collectors/reader_process.hpp"
#include "core/error.hpp"
#include "core/model.hpp"

namespace perfwatch {

// How a collector wants a report file: whole in memory, as a stream of (decompressed) bytes in
// bounded memory, or by path (SQLite databases, opened in place).
enum class CollectorInput { whole, stream, path };

// One report format. A collector recognizes its format from content (never the file name) and
// turns a whole report into a RunBatch, or an Error naming the line or offset at fault.
class Collector {
public:
    virtual ~Collector() = default;
    // Format id stored with the run ("ncu-csv").
    virtual std::string_view id() const = 0;
    virtual std::string_view description() const = 0;
    // True when `head` (the first bytes of the report, up to k_sniff_bytes) is in this format.
    virtual bool recognizes(std::string_view head) const = 0;
    // Parses `content`; `path` is only used in messages and as the run's source (except for
    // CollectorInput::path collectors, which open `path` and ignore `content`).
    virtual Result<RunBatch> collect(const std::string& path, std::string_view content) const = 0;
    // Every run the report holds (a log of several profiling sessions holds one per session);
    // one for most formats. For CollectorInput::whole collectors.
    virtual Result<std::vector<RunBatch>> collect_runs(const std::string& path, std::string_view content) const {
        auto batch = collect(path, content);
        if (!batch) return std::unexpected(batch.error());
        return std::vector<RunBatch>{std::move(*batch)};
    }
    virtual CollectorInput input() const { return CollectorInput::whole; }
    // For CollectorInput::stream: parses the report from `source`, already decompressed.
    virtual Result<RunBatch> collect_stream(const std::string& path, ByteSource& source) const {
        auto content = read_rest(source);
        if (!content) return std::unexpected(content.error());
        return collect(path, *content);
    }
    // For CollectorInput::stream: every run the report holds, as collect_runs.
    virtual Result<std::vector<RunBatch>> collect_stream_runs(const std::string& path, ByteSource& source) const {
        auto batch = collect_stream(path, source);
        if (!batch) return std::unexpected(batch.error());
        return std::vector<RunBatch>{std::move(*batch)};
    }
};

// A collector that reads its report as a stream of bytes (bounded memory whatever its size);
// a report already in memory is streamed too.
class StreamCollector : public Collector {
public:
    CollectorInput input() const final { return CollectorInput::stream; }
    Result<RunBatch> collect(const std::string& path, std::string_view content) const final {
        return collect_stream(path, *open_source(path, content));
    }
    Result<std::vector<RunBatch>> collect_runs(const std::string& path, std::string_view content) const final {
        return collect_stream_runs(path, *open_source(path, content));
    }
    Result<RunBatch> collect_stream(const std::string& path, ByteSource& source) const override = 0;
};

inline constexpr std::size_t k_sniff_bytes = 1 << 20;

// The collectors in detection order: the first that recognizes a report reads it.
std::span<const Collector* const> collectors();

// Detects the format of `content`; nullptr when no collector recognizes it.
const Collector* detect(std::string_view content);

// The id of the collector recognizing the start of the file at `path`; "unrecognized" when none
// does or the file cannot be read.
std::string detect_file_format(const std::string& path);

// Reads a report file, rejects empty, binary and unrecognised input with a clear error,
// parses it and fills source and sha256. Streaming collectors read it in bounded memory; the
// file must not change while it is read (an error says so when it shrank or grew).
Result<RunBatch> collect_file(const std::string& path);

// Like collect_file, but a file whose extension one of `converters` names is first converted by
// that vendor tool (see convert.hpp); the run keeps the binary report's path and SHA-256.
Result<RunBatch> collect_file(const std::string& path, const std::vector<Converter>& converters);

// Every run of the report at `path` (collect_runs): one per session for a log holding several,
// each labelled session=N, with the file's SHA-256 and "#N" as its content hash. Otherwise as
// collect_file. Read as `reader` says (in this process, or in a sandboxed reader process); a
// binary report is converted first, here.
Result<std::vector<RunBatch>> collect_file_runs(const std::string& path, const std::vector<Converter>& converters,
                                                const ReaderOptions& reader = {});

// The same for a report no converter takes, read in this process.
Result<std::vector<RunBatch>> collect_plain_file_runs(const std::string& path);

// Labels the report itself gives, where not set already: `gpu` (the devices' GPU models) and
// `tool_version`. Collectors add their own (Kineto: rank, world_size).
void add_report_labels(RunBatch& batch);

// Same for content already in memory.
Result<RunBatch> collect_content(const std::string& path, std::string_view content);

}  // namespace perfwatch
