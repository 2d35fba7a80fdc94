#include <openssl/evp.h>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <fstream>
#include <memory>

#include "collectors/clintercept.hpp"
#include "collectors/collector.hpp"
#include "collectors/byte_source.hpp"
#include "collectors/fpga_profile_mon.hpp"
#include "collectors/kineto.hpp"
#include "collectors/ncu_csv.hpp"
#include "collectors/ncu_text.hpp"
#include "collectors/nsys_sqlite.hpp"
#include "collectors/nsys_stats.hpp"
#include "collectors/rocprof.hpp"
#include "storage/file.hpp"

namespace perfwatch {

namespace {

// Detection order: the most specific signatures first.
// The generic Chrome trace reader comes last: it accepts any trace-event JSON.
const std::array<const Collector*, 14>& collector_table() {
    static const std::array<const Collector*, 14> k_collectors{
        &rocprof_sqlite_collector(),
        &nsys_sqlite_collector(),
        &rocprof_stats_collector(),
        &rocprof_trace_csv_collector(),
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
    // Compressed reports are recognised by what they decompress to; plain ones by their bytes.
    const std::string inflated = is_gzip(content) ? sniff_prefix(content, k_sniff_bytes) : std::string();
    const std::string_view head =
        is_gzip(content) ? std::string_view(inflated) : content.substr(0, std::min(content.size(), k_sniff_bytes));
    for (const Collector* c : collectors())
        if (c->recognizes(head)) return c;
    return nullptr;
}

namespace {

std::string hex(const unsigned char* digest, unsigned int len) {
    std::string out;
    out.reserve(len * 2);
    for (unsigned int i = 0; i < len; ++i) out += fmt::format("{:02x}", digest[i]);
    return out;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
    return hex(digest, len);
}

Result<std::string> sha256_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(path, 0, fmt::format("cannot open: {}", std::strerror(errno)));
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
    std::vector<char> buf(1 << 20);
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(in.gcount()));
    }
    if (in.bad()) return fail(path, 0, fmt::format("read error: {}", std::strerror(errno)));
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx.get(), digest, &len);
    return hex(digest, len);
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

Result<RunBatch> collect_content(const std::string& path, std::string_view content) {
    if (content.empty()) return fail(path, 0, "file is empty (expected a profiler report)");
    const Collector* c = detect(content);
    if (c == nullptr) {
        if (is_gzip(content)) {
            if (auto whole = read_all(path, content); !whole) return std::unexpected(whole.error());
            return fail(path, 0, "gzip-compressed, but what it holds is in no format perfwatch reads "
                                 "(see `perfwatch formats`)");
        }
        const std::string_view head = content.substr(0, std::min(content.size(), k_sniff_bytes));
        if (const auto nul = head.find('\0'); nul != std::string_view::npos)
            return fail_at_offset(path, nul,
                                  "binary data (NUL byte) in no format perfwatch reads (see `perfwatch formats`)");
        std::string names;
        for (const Collector* k : collectors()) names += fmt::format("\n  {}: {}", k->id(), k->description());
        return fail(path, 0, fmt::format("unrecognised report format; expected one of:{}", names));
    }
    auto batch = c->collect(path, content);
    if (!batch) return batch;
    batch->source = path;
    batch->sha256 = sha256_hex(content);
    add_report_labels(*batch);
    return batch;
}

std::string detect_file_format(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string head(k_sniff_bytes, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    const Collector* c = head.empty() ? nullptr : detect(head);
    return c != nullptr ? std::string(c->id()) : std::string("unrecognized");
}

Result<RunBatch> collect_file(const std::string& path) {
    auto content = read_whole_file(path);
    if (!content) return std::unexpected(content.error());
    return collect_content(path, *content);
}

Result<RunBatch> collect_file(const std::string& path, const std::vector<Converter>& converters) {
    const Converter* converter = converter_for(converters, path);
    if (converter == nullptr) return collect_file(path);
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return fail(path, 0, "is a directory, expected a file");
    auto sha = sha256_file(path);
    if (!sha) return std::unexpected(sha.error());
    auto converted = convert_report(*converter, path);
    if (!converted) return std::unexpected(converted.error());
    auto batch = collect_file(converted->path());
    if (!batch) {
        Error e = batch.error();
        e.message = fmt::format("{} (reading what `{}` produced from {})", e.message,
                                describe_command(*converter, path), path);
        e.file = path;
        return std::unexpected(std::move(e));
    }
    batch->source = path;
    batch->sha256 = *sha;
    batch->notes.push_back(fmt::format("converted from {} by `{}`", converter->extension,
                                       describe_command(*converter, path)));
    return batch;
}

}  // namespace perfwatch
