#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/symbol.hpp"
#include "core/symbol_map.hpp"

namespace perfwatch {

// What an entity stands for. A run holds one `run` entity carrying run-level metrics. A
// `collective` is one execution of a communication kernel, in order; a `rank` is one process of a
// distributed job (in a job's run only).
// `op`: a framework operator with its input shapes (a PyTorch profiler cpu_op: aten::addmm of
// given dims and dtype) and the GPU work of the kernels it launched.
enum class EntityKind { run, device, kernel, launch, nvtx_range, api_call, memcpy, collective, rank, op };

std::string_view to_string(EntityKind kind);
std::optional<EntityKind> entity_kind_from_string(std::string_view text);

// A metric's four names: the canonical name and base unit, the tool's own name and unit.
struct MetricNames {
    Symbol name;
    Symbol unit;
    Symbol tool_name;
    Symbol tool_unit;
    bool operator==(const MetricNames&) const = default;
};

// A metric's names interned together, one pointer wide: the metrics of every entity that a
// reader writes alike share one copy. Past k_max_metric_keys distinct ones (or when a name is a
// counted Symbol) a new key is shared by its copies and freed with them, as Symbol does.
class MetricKey : public detail::InternHandle<MetricNames> {
public:
    MetricKey() noexcept = default;
    MetricKey(Symbol name, Symbol unit, Symbol tool_name = {}, Symbol tool_unit = {});

    // The names (all empty for a default key).
    const MetricNames& names() const noexcept { return m_bits == 0 ? no_names() : node()->value; }
    const Symbol& name() const noexcept { return names().name; }
    const Symbol& unit() const noexcept { return names().unit; }
    const Symbol& tool_name() const noexcept { return names().tool_name; }
    const Symbol& tool_unit() const noexcept { return names().tool_unit; }

    friend bool operator==(const MetricKey& a, const MetricKey& b) noexcept { return same(a, b); }

    // Distinct keys interned so far (for tests).
    static std::size_t interned_count();

private:
    static const MetricNames& no_names() noexcept;
};

// Past this many distinct interned metric keys, new keys are counted, not interned.
inline constexpr std::size_t k_max_metric_keys = std::size_t{1} << 18;

// A measured value normalized to a base unit (ns, byte, hz, byte/s, percent 0-100, count),
// with the tool's own name and unit kept beside it for traceability. Its names are one interned
// MetricKey: a metric is 16 bytes, whatever its names.
struct Metric {
    Metric() noexcept = default;
    Metric(Symbol name_, double value_, Symbol unit_ = {}, Symbol tool_name_ = {}, Symbol tool_unit_ = {})
        : key(std::move(name_), std::move(unit_), std::move(tool_name_), std::move(tool_unit_)), value(value_) {}
    Metric(MetricKey key_, double value_) noexcept : key(std::move(key_)), value(value_) {}

    const Symbol& name() const noexcept { return key.name(); }
    const Symbol& unit() const noexcept { return key.unit(); }
    const Symbol& tool_name() const noexcept { return key.tool_name(); }
    const Symbol& tool_unit() const noexcept { return key.tool_unit(); }

    MetricKey key;
    double value = 0;
};

// A finding the profiler itself reported (ncu OPT/INF/WRN rule rows), attached to an entity.
struct ToolFinding {
    Symbol rule;           // tool's rule identifier when the format names it ("TheoreticalOccupancy")
    Symbol type;           // OPT, INF or WRN
    Symbol section;        // section the rule belongs to
    std::string text;      // the rule's full message, unwrapped
    Symbol speedup_type;   // "global", "local" or empty
    std::optional<double> speedup_pct;
};

// Most per-instance samples kept per entity and metric.
inline constexpr std::size_t k_max_samples = 512;

// Most launch entities (one per kernel execution) a run keeps: later launches count only in their
// kernel's figures, so a collector's memory does not grow with the number of launches.
inline constexpr std::size_t k_max_launch_entities = 2000;

// At most `max` of `values`, evenly spaced in their order (deterministic); all when fewer.
std::vector<double> evenly_spaced(const std::vector<double>& values, std::size_t max = k_max_samples);

// One kernel, launch, range, call or device. `parent` indexes RunBatch::entities (-1: none);
// launches point at their kernel. Metric names are unique within an entity.
struct Entity {
    EntityKind kind = EntityKind::kernel;
    std::string name;
    std::int64_t parent = -1;
    std::vector<Metric> metrics;
    Attributes attributes;
    std::vector<ToolFinding> tool_findings;
    // Per-instance values behind a metric ("duration": each launch's duration, ns), at most
    // k_max_samples evenly spaced; rank tests against a baseline use them.
    SymbolMap<std::vector<double>> samples;

    const Metric* metric(std::string_view metric_name) const;
    std::optional<double> value(std::string_view metric_name) const;
    // Sets or replaces a metric.
    void set(Metric m);
    // Gives back the room its metric and attribute lists keep past their entries (readers add
    // them one at a time; a run is kept and evaluated without it).
    void shrink_to_fit();
};

// The value of label `key`; empty when the labels lack it.
std::string label_value(const std::map<std::string, std::string>& labels, const std::string& key);

// "key=value key=value" in key order, for people.
std::string labels_text(const std::map<std::string, std::string>& labels);

// "key=value\n" per label in key order: the labels as one identity (a run's, a job's).
std::string labels_key(const std::map<std::string, std::string>& labels);

// A run's entities. A deque, not a vector: adding an entity at the end never moves the others,
// so a reference to one (the run entity, a kernel) stays valid while a reader adds more.
using EntityList = std::deque<Entity>;

// What a collector produces from one report: plain data, no storage ids.
struct RunBatch {
    std::string source;        // path of the report as given
    std::string sha256;        // of the report's bytes
    std::string format;        // detected format id ("ncu-csv", "ncu-text", ...)
    std::string format_detail; // layout generation or other variant notes
    std::string tool_version;  // when the report states it
    std::optional<std::string> captured_at;  // ISO 8601 when the report states it
    std::map<std::string, std::string> labels;
    EntityList entities;
    std::vector<std::string> notes;  // facts worth telling the user ("no GPU data in this capture")

    // Index of the single run entity, created on first use.
    std::size_t run_entity();
};

// A run as read back from storage: the batch plus its identity.
struct StoredRun {
    std::int64_t id = 0;
    std::string ingested_at;
    RunBatch batch;
    std::optional<std::int64_t> content_run;  // the run whose stored entities this one shares
};

}  // namespace perfwatch

namespace perfwatch {

enum class Severity { info = 0, warning = 1, error = 2 };

std::string_view to_string(Severity severity);
std::optional<Severity> severity_from_string(std::string_view text);

// What a history rule compared, as the engine judged it: every figure in one estimator (the
// median per launch where launches were sampled).
struct FindingComparison {
    std::string metric;           // "duration", or "run.gpu_time" for a run-level metric
    double baseline = 0;          // the baseline level
    double current = 0;           // this run's level
    double change_pct = 0;        // 100 * (current / baseline - 1)
    std::optional<double> confidence_pct;
    std::optional<std::int64_t> first_bad_run;
    std::string reference;        // "window": the recent baseline runs; "horizon": the older reference level
    // Where a bisection starts: the newest comparable run before the first bad one, with both
    // runs' commits ("" when unlabelled) and levels where history holds them.
    std::optional<std::int64_t> last_good_run;
    std::optional<double> last_good_value;
    std::string last_good_commit;
    std::optional<double> first_bad_value;
    std::string first_bad_commit;
};

// One rule firing on one entity of one run: what the engine returns and storage keeps.
struct Finding {
    std::string rule;
    std::string title;
    Severity severity = Severity::info;
    std::int64_t run_id = 0;
    EntityKind entity_kind = EntityKind::kernel;
    std::string entity_name;
    std::string message;
    std::map<std::string, double> metrics;      // the values the rule read
    std::map<std::string, std::string> labels;  // the rule's labels
    std::optional<double> estimated_speedup_pct;
    std::optional<double> share_pct;            // entity's share of the run's GPU time
    std::optional<double> impact;               // share x speedup, in percent of run GPU time
    std::optional<FindingComparison> comparison;  // a history rule's comparison
};

}  // namespace perfwatch
