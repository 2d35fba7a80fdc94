#include "app/cli/common.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "collectors/collector.hpp"
#include "core/vocabulary.hpp"

namespace perfwatch {

void print_error(const Error& e) {
    fmt::print(stderr, "perfwatch: {}: {}\n", e.skipped ? "skipped" : "error", e.to_string());
    if (!e.detail.empty()) fmt::print(stderr, "{}\n", e.detail);
}

std::optional<Db> open_db(const std::string& path) {
    auto db = Db::open(path);
    if (!db) {
        print_error(db.error());
        return std::nullopt;
    }
    return std::move(*db);
}

std::string value_text(double v) {
    if (v == static_cast<double>(static_cast<long long>(v)) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
    return fmt::format("{:.6g}", v);
}

std::string time_text(double ns) { return *format_in_unit(ns, "time"); }

std::optional<std::int64_t> as_run_id(const std::string& text) {
    std::int64_t id = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
    return id;
}

std::int64_t count_kind(const RunBatch& b, EntityKind kind) {
    return std::count_if(b.entities.begin(), b.entities.end(), [&](const Entity& e) { return e.kind == kind; });
}

Result<std::vector<IngestedRun>> ingest_one(Db& db, const std::string& file, const LabelSources& labels,
                                            const std::vector<Converter>& converters, const ReaderOptions& reader) {
    auto runs = collect_labelled_runs(file, labels, converters, reader);
    if (!runs) return std::unexpected(runs.error());
    std::vector<IngestedRun> out;
    for (RunBatch& batch : *runs) {
        auto stored = db.store(batch);
        if (!stored) return std::unexpected(stored.error());
        out.push_back({*stored, std::move(batch)});
    }
    return out;
}

RunRef run_ref(const StoredRun& run) {
    return RunRef{run.id, run.batch.source, run.batch.format, run.batch.labels, run.batch.notes, {}, {}, run_gpu_time(run.batch)};
}

bool parse_labels(const std::vector<std::string>& args, std::map<std::string, std::string>& out) {
    for (const std::string& a : args) {
        const auto eq = a.find('=');
        if (eq == std::string::npos || eq == 0) {
            fmt::print(stderr, "perfwatch: error: --label '{}' is not KEY=VALUE\n", a);
            return false;
        }
        out[a.substr(0, eq)] = a.substr(eq + 1);
    }
    return true;
}

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string utc_text(std::int64_t ms) {
    return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::sys_seconds(std::chrono::seconds(ms / 1000)));
}

std::optional<std::int64_t> parse_until(const std::string& text, std::int64_t now) {
    if (!text.empty() && std::isdigit(static_cast<unsigned char>(text.back())) == 0 && text.find('-') == std::string::npos) {
        double n = 0;
        const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size() - 1, n);
        if (ec != std::errc() || p != text.data() + text.size() - 1 || n <= 0) return std::nullopt;
        const std::map<char, double> unit{{'m', 60e3}, {'h', 3600e3}, {'d', 86400e3}, {'w', 604800e3}};
        const auto it = unit.find(text.back());
        if (it == unit.end()) return std::nullopt;
        return now + static_cast<std::int64_t>(n * it->second);
    }
    for (const char* format : {"%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"}) {
        std::tm tm{};
        const char* end = strptime(text.c_str(), format, &tm);
        if (end != nullptr && *end == '\0') return static_cast<std::int64_t>(timegm(&tm)) * 1000;
    }
    return std::nullopt;
}

}  // namespace perfwatch
