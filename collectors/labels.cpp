#include "collectors/labels.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "collectors/benchmark.hpp"
#include "collectors/collector.hpp"
#include "collectors/sanitize.hpp"
#include "core/file.hpp"

namespace perfwatch {

bool is_label_sidecar(std::string_view path) {
    const std::string name = std::filesystem::path(path).filename().string();
    return name == k_directory_sidecar || name.ends_with(k_sidecar_suffix);
}

namespace {

Result<void> read_sidecar(const std::string& path, std::map<std::string, std::string>& out) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return {};
    auto text = read_whole_file(path);
    if (!text) return std::unexpected(text.error());
    try {
        const YAML::Node root = YAML::Load(*text);
        if (root.IsNull()) return {};
        if (!root.IsMap())
            return fail(path, static_cast<std::uint64_t>(root.Mark().line + 1), "a label sidecar must be a mapping of label names to values");
        for (const auto& kv : root) {
            if (!kv.second.IsScalar() || !kv.first.IsScalar())
                return fail(path, static_cast<std::uint64_t>(kv.first.Mark().line + 1),
                            fmt::format("label '{}' must have a single value", kv.first.Scalar()));
            out[kv.first.Scalar()] = kv.second.Scalar();
        }
    } catch (const YAML::Exception& e) {
        return fail(path, static_cast<std::uint64_t>(e.mark.line + 1), fmt::format("invalid YAML at column {}: {}", e.mark.column + 1, e.msg));
    }
    return {};
}

}  // namespace

Result<std::map<std::string, std::string>> sidecar_labels(const std::string& report_path) {
    std::map<std::string, std::string> out;
    const std::filesystem::path p(report_path);
    if (auto r = read_sidecar((p.parent_path() / k_directory_sidecar).string(), out); !r)
        return std::unexpected(r.error());
    if (auto r = read_sidecar(report_path + std::string(k_sidecar_suffix), out); !r) return std::unexpected(r.error());
    return out;
}

std::optional<PathTemplate> PathTemplate::compile(std::string_view text, std::string& error) {
    PathTemplate t;
    t.m_text = std::string(text);
    std::string re = text.starts_with('/') ? "^" : "(?:^|/)";
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '{') {
            const std::size_t end = text.find('}', i);
            const std::string name(text.substr(i + 1, end == std::string_view::npos ? 0 : end - i - 1));
            const bool ok = end != std::string_view::npos && !name.empty() &&
                            std::all_of(name.begin(), name.end(), [](char x) {
                                return std::isalnum(static_cast<unsigned char>(x)) || x == '_';
                            });
            if (!ok) {
                error = fmt::format("column {}: '{{' must start a label name such as {{commit}}", i + 1);
                return std::nullopt;
            }
            t.m_groups.push_back(static_cast<int>(t.m_names.size()));
            t.m_names.push_back(name);
            re += "([^/]+?)";
            i = end;
        } else if (c == '*' && i + 1 < text.size() && text[i + 1] == '*') {
            t.m_groups.push_back(-1);
            re += "(.*)";
            ++i;
        } else if (c == '*') {
            t.m_groups.push_back(-1);
            re += "([^/]*)";
        } else if (std::string_view("\\^$.|?+()[]").find(c) != std::string_view::npos) {
            re += '\\';
            re += c;
        } else {
            re += c;
        }
    }
    re += "$";
    try {
        t.m_regex = std::regex(re, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
        error = e.what();
        return std::nullopt;
    }
    return t;
}

std::optional<TemplateMatch> PathTemplate::match_parts(const std::string& path) const {
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::absolute(path, ec);
    if (ec) abs = path;
    const std::string normal = abs.lexically_normal().generic_string();
    std::smatch m;
    if (!std::regex_search(normal, m, m_regex)) return std::nullopt;
    TemplateMatch out;
    for (std::size_t i = 0; i < m_groups.size(); ++i) {
        const std::string text = m[i + 1].str();
        if (m_groups[i] >= 0) {
            out.labels[m_names[static_cast<std::size_t>(m_groups[i])]] = text;
        } else if (!text.empty()) {
            if (!out.wildcards.empty() && out.wildcards.back() != '/' && text.front() != '/') out.wildcards += '/';
            out.wildcards += text;
        }
    }
    return out;
}

std::optional<std::map<std::string, std::string>> PathTemplate::match(const std::string& path) const {
    auto parts = match_parts(path);
    if (!parts) return std::nullopt;
    return std::move(parts->labels);
}

std::map<std::string, std::string> path_labels(const std::vector<PathTemplate>& templates, const std::string& path) {
    for (const PathTemplate& t : templates)
        if (auto labels = t.match(path)) return *labels;
    return {};
}

std::string derived_benchmark(const LabelSources& sources, const std::string& path, const std::string& format,
                              std::string* rank) {
    std::string relative;
    bool found = false;
    for (const PathTemplate& t : sources.path_templates) {
        if (auto parts = t.match_parts(path)) {
            relative = std::move(parts->wildcards);
            found = true;
            break;
        }
    }
    const std::filesystem::path p = std::filesystem::path(path).lexically_normal();
    if (!found && !sources.root.empty()) {
        const std::filesystem::path rel = p.lexically_relative(std::filesystem::path(sources.root).lexically_normal());
        if (!rel.empty() && *rel.begin() != "..") relative = rel.generic_string();
    }
    if (relative.empty()) relative = p.filename().string();
    BenchmarkName b = benchmark_from_path(relative);
    // Only volatile parts (a PyTorch trace named after its host, pid and time): the folder holding
    // it, or the one above when that folder only names a rank (run/rank_3/host_pid.123.json).
    std::filesystem::path dir_path = p.parent_path();
    for (int up = 0; b.name.empty() && up < 2 && !dir_path.filename().empty(); ++up) {
        BenchmarkName dir = benchmark_from_path(dir_path.filename().string());
        b.name = dir.name;
        if (b.rank.empty()) b.rank = dir.rank;
        dir_path = dir_path.parent_path();
    }
    if (b.name.empty()) b.name = format;
    if (rank != nullptr) *rank = b.rank;
    return b.name;
}

namespace {

// The labels of a collected run: derived benchmark, templates, watched directory, sidecars, --label.
Result<void> label_run(RunBatch& batch, const std::string& file, const LabelSources& labels) {
    if (!batch.labels.contains("benchmark")) {
        std::string rank;
        batch.labels["benchmark"] = derived_benchmark(labels, file, batch.format, &rank);
        if (!rank.empty() && !batch.labels.contains("rank")) batch.labels["rank"] = rank;
    }
    for (const auto& [k, v] : path_labels(labels.path_templates, file)) batch.labels[k] = v;
    for (const auto& [k, v] : labels.directory) batch.labels[k] = v;
    auto sidecar = sidecar_labels(file);
    if (!sidecar) return std::unexpected(sidecar.error());
    for (const auto& [k, v] : *sidecar) batch.labels[k] = v;
    for (const auto& [k, v] : labels.given) batch.labels[k] = v;
    sanitize_labels(batch);
    return {};
}

}  // namespace

Result<RunBatch> collect_labelled(const std::string& file, const LabelSources& labels,
                                  const std::vector<Converter>& converters) {
    auto batch = collect_file(file, converters);
    if (!batch) return std::unexpected(batch.error());
    if (auto labelled = label_run(*batch, file, labels); !labelled) return std::unexpected(labelled.error());
    return batch;
}

Result<std::vector<RunBatch>> collect_labelled_runs(const std::string& file, const LabelSources& labels,
                                                    const std::vector<Converter>& converters,
                                                    const ReaderOptions& reader) {
    auto runs = collect_file_runs(file, converters, reader);
    if (!runs) return std::unexpected(runs.error());
    for (RunBatch& batch : *runs)
        if (auto labelled = label_run(batch, file, labels); !labelled) return std::unexpected(labelled.error());
    return runs;
}

}  // namespace perfwatch
