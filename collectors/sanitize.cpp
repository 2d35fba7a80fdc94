#include "collectors/sanitize.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "collectors/readers/byte_source.hpp"
#include "core/text.hpp"

namespace perfwatch {

namespace {

// A std::string or a Symbol, repaired in place.
template <typename Text>
void make_valid(Text& text, bool name) {
    if (needs_repair(text, name)) text = Text(to_valid_utf8(text, name));
}

template <typename Map>
void make_valid_map(Map& map) {
    const bool changed =
        std::any_of(map.begin(), map.end(), [](const auto& kv) { return needs_repair(kv.first, true) || needs_repair(kv.second, true); });
    if (!changed) return;
    Map out;
    for (auto& [k, v] : map) out[to_valid_utf8(k, true)] = to_valid_utf8(v, true);
    map = std::move(out);
}

}  // namespace

void sanitize_labels(RunBatch& batch) { make_valid_map(batch.labels); }

void sanitize_batch(RunBatch& batch) {
    make_valid(batch.source, true);
    make_valid(batch.format_detail, false);
    make_valid(batch.tool_version, true);
    if (batch.captured_at) make_valid(*batch.captured_at, true);
    for (std::string& note : batch.notes) make_valid(note, false);
    sanitize_labels(batch);

    std::size_t renamed = 0, dropped = 0;
    std::string first_dropped;
    for (Entity& e : batch.entities) {
        if (needs_repair(e.name, true)) {
            e.attributes["name_sha256"] = sha256_hex(e.name);
            e.name = to_valid_utf8(e.name, true);
            ++renamed;
        }
        make_valid_map(e.attributes);
        const auto not_finite = [&](const Metric& m) {
            if (std::isfinite(m.value)) return false;
            if (dropped++ == 0)
                first_dropped = fmt::format("{} '{}' metric '{}' = {}", to_string(e.kind), e.name,
                                            to_valid_utf8(m.name(), true), m.value);
            return true;
        };
        std::erase_if(e.metrics, not_finite);
        for (Metric& m : e.metrics) {
            MetricNames n = m.key.names();
            make_valid(n.name, true);
            make_valid(n.unit, true);
            make_valid(n.tool_name, true);
            make_valid(n.tool_unit, true);
            if (n != m.key.names()) m.key = MetricKey(n.name, n.unit, n.tool_name, n.tool_unit);
        }
        for (auto it = e.samples.begin(); it != e.samples.end();) {
            std::erase_if(it->second, [](double v) { return !std::isfinite(v); });
            if (it->second.empty())
                it = e.samples.erase(it);
            else
                ++it;
        }
        for (ToolFinding& f : e.tool_findings) {
            make_valid(f.rule, true);
            make_valid(f.type, true);
            make_valid(f.section, true);
            make_valid(f.text, false);
            make_valid(f.speedup_type, true);
            if (f.speedup_pct && !std::isfinite(*f.speedup_pct)) f.speedup_pct.reset();
        }
    }
    if (renamed > 0)
        batch.notes.push_back(fmt::format("{} name{} held bytes that are not valid UTF-8 or control characters, "
                                          "replaced by U+FFFD (the original bytes' SHA-256 is kept as name_sha256)",
                                          renamed, renamed == 1 ? "" : "s"));
    if (dropped > 0)
        batch.notes.push_back(fmt::format("{} metric value{} not finite and stored as missing (first: {})", dropped,
                                          dropped == 1 ? " was" : "s were", first_dropped));
}

}  // namespace perfwatch
