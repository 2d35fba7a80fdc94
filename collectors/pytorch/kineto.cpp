#include "collectors/pytorch/kineto.hpp"
#include "collectors/pytorch/op_work.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "collectors/launch_shape.hpp"
#include "collectors/readers/byte_source.hpp"
#include "collectors/readers/comm_kernels.hpp"
#include "collectors/readers/idle_causes.hpp"
#include "collectors/readers/dom_args.hpp"
#include "collectors/readers/flat_object.hpp"
#include "collectors/readers/json_stream_thread.hpp"
#include "collectors/readers/span_set.hpp"
#include "collectors/readers/sync_idle.hpp"
#include "collectors/readers/timeline.hpp"
#include "collectors/readers/units.hpp"
#include "collectors/readers/waiting_map.hpp"
#include "core/text.hpp"

static_assert(perfwatch::k_json_padding >= simdjson::SIMDJSON_PADDING, "event views must be parseable in place");

namespace perfwatch {

namespace {

constexpr double k_us = 1000.0;  // trace times are microseconds

// HTA's launch statistics thresholds (FORMATS.md).
constexpr double k_launch_delay_outlier_ns = 100'000;
constexpr double k_runtime_outlier_ns = 50'000;
constexpr double k_short_cpu_ns = 50'000;

enum class Cat { kernel, memcpy, memset, runtime, cpu_op, annotation, sync, overhead, other };

Cat category(std::string_view cat) {
    // By length first: every event asks, and most are CPU operators; then bytes at a known length.
    const auto is = [&]<std::size_t n>(const char (&word)[n]) { return std::memcmp(cat.data(), word, n - 1) == 0; };
    switch (cat.size()) {
    case 6:
        if (is("cpu_op")) return Cat::cpu_op;
        if (is("kernel") || is("Kernel")) return Cat::kernel;
        if (is("Memcpy")) return Cat::memcpy;
        if (is("Memset")) return Cat::memset;
        return Cat::other;
    case 7: return is("Runtime") ? Cat::runtime : Cat::other;
    case 8: return is("Operator") ? Cat::cpu_op : is("overhead") ? Cat::overhead : Cat::other;
    case 9: return is("cuda_sync") ? Cat::sync : Cat::other;
    case 10: return is("gpu_memcpy") ? Cat::memcpy : is("gpu_memset") ? Cat::memset : Cat::other;
    case 11: return is("cuda_driver") ? Cat::runtime : Cat::other;
    case 12: return is("cuda_runtime") ? Cat::runtime : Cat::other;
    case 15: return is("user_annotation") ? Cat::annotation : Cat::other;
    default: return Cat::other;
    }
}

// Most collective entities a rank keeps (in order); later ones count only in the run's figures.
constexpr std::size_t k_max_collectives = 4096;
// Most kernel executions kept (32 bytes each) for the idle-time categories; past this the
// categories are not given (a note says so), so memory does not grow with the trace.
constexpr std::size_t k_max_idle_kernels = 1 << 20;
static_assert(k_max_idle_kernels <= std::numeric_limits<std::int32_t>::max());
// HTA's consecutive_kernel_delay: a gap below this between kernels of one stream is kernel wait.
constexpr double k_kernel_wait_ns = 30;

// Most one-time intervals kept; later ones are not told apart from other host work.
constexpr std::size_t k_max_startup_spans = 4096;

// Runtime calls that load code: a long one is start-up, not launch overhead.
bool loads_code(std::string_view call) {
    for (std::string_view p : {"cudaLaunch", "cuLaunch", "cudaFunc", "cuFunc", "cuModule", "cuLibrary",
                               "cudaGetFuncBySymbol", "hipLaunch", "hipModule", "hipFunc", "hipExtLaunch"})
        if (call.starts_with(p)) return true;
    return false;
}

// Runtime calls that start no device work (queries, events, stream waits): no kernel, copy or
// set shares their correlation ID, so they never wait in the launch map, which on a long trace
// they would fill (most runtime calls are such), pushing out launches still waiting for theirs.
bool starts_no_device_work(std::string_view call) {
    for (std::string_view p : {"cudaEvent", "cudaStreamIsCapturing", "cudaStreamGetCaptureInfo", "cudaStreamGetPriority",
                               "cudaDeviceGetStreamPriorityRange", "cudaStreamWaitEvent", "cudaStreamQuery",
                               "cudaGetDevice", "cudaSetDevice", "cudaGetLastError", "cudaPeekAtLastError",
                               "cudaDeviceGetAttribute", "cudaPointerGetAttributes", "hipEvent", "hipStreamIsCapturing",
                               "hipStreamGetCaptureInfo", "hipStreamGetPriority", "hipDeviceGetStreamPriorityRange",
                               "hipStreamWaitEvent", "hipStreamQuery", "hipGetDevice", "hipSetDevice", "hipGetLastError",
                               "hipPeekAtLastError", "hipDeviceGetAttribute", "hipPointerGetAttributes"})
        if (call.starts_with(p)) return true;
    return false;
}

// A CPU operator's earliest call and the total of its other calls.
struct FirstCall {
    double start = 0, length = 0, calls = 0, later_total = 0;
};

// A communication kernel execution, kept in order for matching across ranks.
struct CollectiveRun {
    std::string name;
    double start = 0, length = 0, stream = -1;
    std::string device;
    std::string op;      // args "Collective name" (PyTorch 2.1+): all_reduce, send, barrier...
    double bytes = -1;   // args "In msg nelems" x the size of args "dtype"; -1: not recorded
};

// Bytes per element of a PyTorch dtype as Kineto names it; 0 when unknown.
double dtype_bytes(std::string_view dtype) {
    static constexpr std::array<std::pair<std::string_view, double>, 14> k_sizes{{
        {"Float", 4}, {"Half", 2}, {"BFloat16", 2}, {"Double", 8}, {"Long", 8}, {"Int", 4}, {"Short", 2},
        {"Byte", 1}, {"Char", 1}, {"Bool", 1}, {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}, {"ComplexFloat", 8},
        {"ComplexDouble", 16},
    }};
    for (const auto& [name, size] : k_sizes)
        if (name == dtype) return size;
    return 0;
}

// One synchronizing runtime call (cudaDeviceSynchronize, cudaStreamSynchronize...).
struct SyncCall {
    double start = 0, end = 0;
    std::string name;
};

// Most synchronizing calls kept for the GPU-idle-during-sync figure; past this it is not given.
constexpr std::size_t k_max_sync_calls = 1 << 16;

// A kernel waiting for its launch call (or the reverse), by correlation ID.
struct PendingSpan {
    double start = 0, length = 0;
    std::int32_t kernel = -1;  // index in the kept device operations (at most k_max_idle_kernels)
    bool memory = false;       // a copy or set: no kernel launch statistics
};

// Communication and computation kernel intervals of one device.
struct DeviceSpans {
    SpanSet comm{1 << 12}, compute{1 << 14};
};

struct Stats {
    double count = 0, total = 0, min = 0, max = 0;
    void add(double d) {
        if (count == 0) min = max = d;
        count += 1;
        total += d;
        min = std::min(min, d);
        max = std::max(max, d);
    }
};

struct KernelExtra {
    double longest = -1;
    double grid = -1, block = -1, registers = -1, shared = -1, blocks_per_sm = -1, warps_per_sm = -1;
    double occupancy_weighted = 0, occupancy_weight = 0;
    // From the newer "occupancy" object: resident blocks and the per-resource block limits.
    double active_blocks = -1;
    std::map<std::string, double> block_limits;
    std::string limiter;
    std::string device;
    std::uint32_t id = 0;  // in order of first appearance
    bool comm = false;     // a communication kernel (its name says so)
    std::size_t timeline_group = 0;  // its TimelineBuilder group
    GridTimes grids;                 // time per grid size, for kernels whose launches differ in grid
};

class KinetoReader {
public:
    explicit KinetoReader(const std::string& path) : m_path(path) {}

    Result<RunBatch> run(ByteSource& source) {
        JsonEventStreamThread stream(m_path, source);
        m_stream = &stream;
        auto want = [](std::string_view key) {
            return key == "deviceProperties" || key == "distributedInfo" || key == "schemaVersion" ||
                   key == "cuda_driver_version" || key == "cuda_runtime_version" || key == "cupti_version";
        };
        auto member = [&](std::string_view key, std::string_view json) { return take_member(key, json); };
        auto event = [&](std::string_view json, const JsonEventStream::Hints& hints) { return take_event(json, hints); };
        if (auto r = stream.run(want, member, event); !r) return std::unexpected(r.error());
        return finish();
    }

private:
    Result<void> take_member(std::string_view key, std::string_view json) {
        simdjson::dom::element root;
        if (m_parser.parse(json.data(), json.size(), false).get(root))
            return fail(m_path, 0, fmt::format("top-level member \"{}\" is not valid JSON", key));
        if (key == "schemaVersion") {
            if (root.is_int64()) m_schema = fmt::format("schema {}", int64_t(root));
            return {};
        }
        // The software a trace ran on (recent PyTorch writes these beside schemaVersion): labels
        // that never make another series, named when they change.
        if (key == "cuda_driver_version" || key == "cuda_runtime_version" || key == "cupti_version") {
            if (root.is_int64())
                m_labels[std::string(key.substr(0, key.size() - 8))] = std::to_string(int64_t(root));
            else if (root.is_string())
                m_labels[std::string(key.substr(0, key.size() - 8))] = std::string(std::string_view(root));
            return {};
        }
        if (key == "distributedInfo") {
            simdjson::dom::object o;
            if (root.get_object().get(o)) return {};
            for (auto field : o) {
                std::string v;
                if (field.value.is_string()) v = std::string(std::string_view(field.value));
                else if (field.value.is_int64()) v = std::to_string(int64_t(field.value));
                else continue;
                if (field.key == "rank" || field.key == "world_size" || field.key == "backend")
                    m_labels[std::string(field.key)] = v;
                if (field.key == "world_size" && field.value.is_int64()) m_world_size = double(int64_t(field.value));
            }
            return {};
        }
        if (key == "deviceProperties") {
            simdjson::dom::array arr;
            if (root.get_array().get(arr)) return {};
            for (simdjson::dom::element d : arr) {
                Entity dev;
                dev.kind = EntityKind::device;
                int64_t id = 0;
                if (d["id"].get_int64().get(id)) continue;
                dev.name = fmt::format("device {}", id);
                std::string_view name;
                if (!d["name"].get_string().get(name)) dev.attributes["gpu"] = std::string(name);
                int64_t major = 0, minor = 0, sms = 0, threads = 0, warp = 32;
                if (!d["computeMajor"].get_int64().get(major) && !d["computeMinor"].get_int64().get(minor))
                    dev.attributes["cc"] = fmt::format("{}.{}", major, minor);
                if (!d["numSms"].get_int64().get(sms)) dev.set(plain("sm_count", static_cast<double>(sms), "count", "numSms"));
                // AMD GPUs list a warpSize (wavefront) of 64.
                if (d["warpSize"].get_int64().get(warp) || warp <= 0) warp = 32;
                if (!d["maxThreadsPerMultiprocessor"].get_int64().get(threads))
                    dev.set(plain("max_warps_per_sm", static_cast<double>(threads / warp), "count",
                                  fmt::format("maxThreadsPerMultiprocessor / {}", warp)));
                m_devices.push_back(std::move(dev));
            }
        }
        return {};
    }

    // The number under `key` of a parsed object (as DomArgs reads it).
    static bool field(simdjson::dom::object o, std::string_view key, double& out) { return DomArgs{o}.number(key, out); }

    Result<void> take_event(std::string_view json, const JsonEventStream::Hints& hints) {
        ++m_events;
        // Events that only count (or not at all) are not parsed once the time base is known;
        // the common ones are read from the scanner's hints, parsing only their args.
        const bool complete = hints.ph.size() == 1 && hints.ph[0] == 'X';
        if (!hints.ph.empty() && !complete) return {};
        if (m_base && complete && !hints.cat.empty()) {
            const Cat c = category(hints.cat);
            if (c == Cat::other) return {};
            double ts = 0, dur = 0;
            // A CPU operator only counts and times its first call, except a legacy trace's step (read below).
            if (c == Cat::cpu_op && !is_step(hints.name) && parse_decimal(hints.ts, ts) &&
                parse_decimal(hints.dur, dur)) {
                ++m_cpu_ops;
                if (auto ok = check_times(hints.name, ts, dur); !ok) return ok;
                const auto [start, length] = span_of(ts, dur);
                first_call(hints.name, start, length);
                // A modelled operator's shapes are in its args, parsed for it alone.
                if (OperatorWork::modelled(hints.name) && !hints.args.empty()) {
                    simdjson::dom::element root;
                    simdjson::dom::object args;
                    if (!m_parser.parse(hints.args.data(), hints.args.size(), false).get(root) && !root.get_object().get(args))
                        m_ops.take_op(hints.name, args);
                }
                return {};
            }
            // A name or args that is not UTF-8 takes the full parse below, which repairs it.
            if (!hints.name.empty() && parse_decimal(hints.ts, ts) && parse_decimal(hints.dur, dur) &&
                (hints.ascii || (simdjson::validate_utf8(hints.name.data(), hints.name.size()) &&
                                 simdjson::validate_utf8(hints.args.data(), hints.args.size())))) {
                if (c == Cat::runtime) return take_runtime(hints.name, ts, dur, args_correlation(hints.args));
                if (hints.args.empty()) return take_complete<DomArgs>(c, hints.name, ts, dur, nullptr);
                // Flat args (a kernel's, a copy's) are read as they are; others parsed.
                if (m_flat_args.read(hints.args)) return take_complete(c, hints.name, ts, dur, &m_flat_args);
                simdjson::dom::element root;
                DomArgs args;
                if (m_parser.parse(hints.args.data(), hints.args.size(), false).get(root) ||
                    root.get_object().get(args.object))
                    return fail(m_path, 0, fmt::format("trace event {} has invalid args", m_events));
                return take_complete(c, hints.name, ts, dur, &args);
            }
        }
        simdjson::dom::element root;
        auto error = m_parser.parse(json.data(), json.size(), false).get(root);
        std::string repaired;
        if (error == simdjson::UTF8_ERROR) {
            // Bytes that are not UTF-8 become U+FFFD, as in every name perfwatch stores; the
            // original name's SHA-256 is kept when the scanner saw it.
            if (!hints.name.empty() && !is_valid_utf8(hints.name))
                m_name_sha256.try_emplace(to_valid_utf8(hints.name), sha256_hex(hints.name));
            repaired = to_valid_utf8(json);
            ++m_repaired_events;
            // A string of its own, not the padded stream: simdjson copies it into padding first.
            error = m_parser.parse(repaired.data(), repaired.size(), true).get(root);
        }
        if (error) return fail(m_path, 0, fmt::format("trace event {} is not valid JSON", m_events));
        simdjson::dom::object o;
        if (root.get_object().get(o)) return fail(m_path, 0, fmt::format("trace event {} is not an object", m_events));
        std::string_view ph, cat, name;
        if (o["ph"].get_string().get(ph) || ph != "X") return {};
        if (o["cat"].get_string().get(cat)) cat = {};
        if (o["name"].get_string().get(name)) name = {};
        double ts = 0, dur = 0;
        if (!field(o, "ts", ts))
            return fail(m_path, 0, fmt::format("trace event {} (\"{}\") has no numeric \"ts\"", m_events, name));
        if (!field(o, "dur", dur)) return {};
        DomArgs args;
        const bool has_args = !o["args"].get_object().get(args.object);
        return take_complete(category(cat), name, ts, dur, has_args ? &args : nullptr);
    }

    // A profiler step's span ("ProfilerStep#3"); its first letter decides for almost every name.
    static bool is_step(std::string_view name) {
        constexpr std::string_view k_step = "ProfilerStep#";
        return !name.empty() && name.front() == 'P' && name.starts_with(k_step);
    }

    // args.correlation of a runtime call, found in the args text; -1 when absent.
    static double args_correlation(std::string_view args) {
        constexpr std::string_view k_key = "\"correlation\"";
        // A few skips of the key's length through the short args (its table made once).
        static const std::boyer_moore_horspool_searcher k_search(k_key.begin(), k_key.end());
        const auto found = std::search(args.begin(), args.end(), k_search);
        if (found == args.end()) return -1;
        std::size_t i = static_cast<std::size_t>(found - args.begin()) + k_key.size();
        while (i < args.size() && (args[i] == ' ' || args[i] == ':' || args[i] == '\n' || args[i] == '\t')) ++i;
        std::size_t end = i;
        while (end < args.size() && (std::isdigit(static_cast<unsigned char>(args[end])) != 0 || args[end] == '.')) ++end;
        double value = -1;
        return parse_decimal(args.substr(i, end - i), value) ? value : -1;
    }

    // Times relative to the first event keep nanosecond precision in a double (absolute epoch
    // microseconds times 1000 would not).
    std::pair<double, double> span_of(double ts, double dur) {
        if (!m_base) m_base = ts;
        return {(ts - *m_base) * k_us, dur * k_us};
    }

    // Times a clock can give (microseconds): past these a trace is corrupt, and their differences
    // would overflow or keep no digit. Such an event fails the report, naming where it is.
    Result<void> check_times(std::string_view name, double ts, double dur) const {
        static constexpr double k_max_abs_ts_us = 1e17;  // about 3,000 years from the epoch
        static constexpr double k_max_dur_us = 1e15;     // about 30 years
        const char* what = !(std::abs(ts) <= k_max_abs_ts_us) ? "\"ts\" is not a plausible time"
                           : !(dur >= 0)                     ? "\"dur\" is negative or not a number"
                           : !(dur <= k_max_dur_us)          ? "\"dur\" is not a plausible duration"
                                                             : nullptr;
        if (what == nullptr) return {};
        return fail_at_offset(m_path, m_stream != nullptr ? m_stream->offset() : 0,
                              fmt::format("trace event {} (\"{}\"): {} in microseconds (ts {}, dur {})", m_events,
                                          to_valid_utf8(name.substr(0, 200), true), what, ts, dur));
    }

    Result<void> take_runtime(std::string_view name, double ts, double dur, double correlation) {
        prefetch_pending(correlation);
        if (auto ok = check_times(name, ts, dur); !ok) return ok;
        const auto [start, length] = span_of(ts, dur);
        auto call = m_api.find(name);
        if (call == m_api.end())
            call = m_api.emplace(std::string(name), ApiCall{{}, name.find("Synchronize") != std::string_view::npos,
                                                            starts_no_device_work(name)})
                       .first;
        call->second.stats.add(length);
        if (call->second.synchronizing && m_sync_calls.size() < k_max_sync_calls)
            m_sync_calls.push_back({start, start + length, std::string(name)});
        if (length > k_runtime_outlier_ns) ++m_runtime_outliers;
        if (length >= k_startup_call_ns && loads_code(name)) keep_startup(start, length);
        if (correlation >= 0) match_runtime(correlation, start, length, !call->second.no_device_work);
        return {};
    }

    // A complete event ("ph": "X") of category `c`.
    // `args`: the event's args (FlatObject or DomArgs), null when it has none.
    template <typename Args>
    Result<void> take_complete(Cat c, std::string_view name, double ts, double dur, const Args* args) {
        if (c == Cat::runtime) {
            double correlation = -1;
            if (args != nullptr) args->number("correlation", correlation);
            return take_runtime(name, ts, dur, correlation);
        }
        if (auto ok = check_times(name, ts, dur); !ok) return ok;
        const auto [start, length] = span_of(ts, dur);
        double correlation = -1;
        if (args != nullptr) args->number("correlation", correlation);
        prefetch_pending(correlation);

        switch (c) {
            case Cat::kernel:
            case Cat::memcpy:
            case Cat::memset: {
                double device = 0;
                if (args != nullptr) args->number("device", device);
                const std::string& device_name = device_label(device);
                const bool kernel = c == Cat::kernel;
                if (kernel) {
                    const KernelExtra& extra = kernel_extra(name, device_name, args, length);
                    m_timeline.add(extra.timeline_group, device_name, start, start + length);
                    const std::uint32_t kernel_id = extra.id;
                    const bool comm = extra.comm;
                    DeviceSpans& spans = m_device_spans[device_name];
                    (comm ? spans.comm : spans.compute).add(start, start + length);
                    (comm ? m_comm_time : m_compute_time) += length;
                    double stream = -1;
                    if (args != nullptr) args->number("stream", stream);
                    if (comm) {
                        CollectiveRun run{std::string(name), start, length, stream, device_name, {}, -1};
                        std::string_view op, dtype;
                        double elements = 0;
                        if (args != nullptr && args->string("Collective name", op)) run.op = std::string(op);
                        if (args != nullptr && args->number("In msg nelems", elements) && args->string("dtype", dtype) &&
                            dtype_bytes(dtype) > 0) {
                            run.bytes = elements * dtype_bytes(dtype);
                            m_collective_bytes += run.bytes;
                        }
                        if (m_collectives.size() < k_max_collectives) m_collectives.push_back(std::move(run));
                        ++m_collective_count;
                    }
                    const std::int64_t kept = keep_device_op(device, stream, start, length, kernel_id);
                    if (correlation >= 0) match_kernel(correlation, start, length, kept, false);
                    double external = -1;
                    if (args != nullptr && args->number("External id", external)) m_ops.take_kernel(external, length);
                } else {
                    double stream = -1;
                    if (args != nullptr) args->number("stream", stream);
                    const std::int64_t kept = keep_device_op(device, stream, start, length, std::nullopt);
                    if (correlation >= 0) match_kernel(correlation, start, length, kept, true);
                    m_memory_time += length;
                    double bytes = 0;
                    if (args != nullptr && args->number("bytes", bytes)) entry(m_bytes, name) += bytes;
                    m_timeline.add(TimelineEvent::Kind::memory, name, device_name, start, start + length);
                    ++m_memory_ops;
                }
                m_gpu_busy.add(start, start + length);
                break;
            }
            case Cat::runtime:  // handled above
            case Cat::annotation:
                if (is_step(name)) m_steps.add(length);
                break;
            case Cat::sync:
                m_sync.add(length);
                entry(m_sync_kinds, name).add(length);
                break;
            case Cat::cpu_op:
                ++m_cpu_ops;
                // Legacy traces (the TensorBoard plugin's) mark a step as an operator.
                if (is_step(name)) m_steps.add(length);
                else first_call(name, start, length);
                if (args != nullptr && OperatorWork::modelled(name)) take_op_args(name, *args);
                break;
            case Cat::overhead:
                // CUPTI's "Runtime Triggered Module Loading" and "Lazy Function Loading".
                if (name.find("Loading") != std::string_view::npos) {
                    m_module_loading += length;
                    keep_startup(start, length);
                }
                break;
            case Cat::other:
                break;
        }
        return {};
    }

    // A modelled operator's args: parsed ones hold its shapes; flat ones (no nested arrays) cannot.
    void take_op_args(std::string_view name, const DomArgs& args) { m_ops.take_op(name, args.object); }
    void take_op_args(std::string_view, const FlatObject&) {}

    // The map's value for `key`, added when missing, without a string per lookup.
    template <typename Map>
    static typename Map::mapped_type& entry(Map& map, std::string_view key) {
        auto it = map.find(key);
        if (it == map.end()) it = map.emplace(std::string(key), typename Map::mapped_type{}).first;
        return it->second;
    }

    // "device N", formatted once per device.
    const std::string& device_label(double device) {
        auto it = m_device_labels.find(device);
        if (it == m_device_labels.end()) it = m_device_labels.emplace(device, fmt::format("device {:.0f}", device)).first;
        return it->second;
    }

    // Records a kernel execution's launch facts under its name; the name's facts.
    template <typename Args>
    const KernelExtra& kernel_extra(std::string_view name, const std::string& device, const Args* args, double length) {
        auto found = m_kernels.find(name);
        if (found == m_kernels.end()) {
            found = m_kernels.emplace(std::string(name), KernelExtra{}).first;
            found->second.id = static_cast<std::uint32_t>(m_kernels.size() - 1);
            found->second.comm = is_comm_kernel(name);
            found->second.timeline_group = m_timeline.group_index(TimelineEvent::Kind::kernel, name, device);
        }
        KernelExtra& x = found->second;
        if (x.device != device) x.device = device;
        if (args == nullptr) return x;
        double occ = 0;
        if (args->number("est. achieved occupancy %", occ)) {
            x.occupancy_weighted += occ * length;
            x.occupancy_weight += length;
        }
        const double grid = args->product("grid");
        x.grids.add(grid, length);
        if (length <= x.longest) return x;
        x.longest = length;
        x.grid = grid;
        x.block = args->product("block");
        if (!args->number("registers per thread", x.registers)) x.registers = -1;
        if (!args->number("shared memory", x.shared)) x.shared = -1;
        if (!args->number("blocks per SM", x.blocks_per_sm)) x.blocks_per_sm = -1;
        if (!args->number("warps per SM", x.warps_per_sm)) x.warps_per_sm = -1;
        occupancy(*args, x);
        return x;
    }

    // Flat args hold no occupancy object.
    static void occupancy(const FlatObject&, KernelExtra& x) { clear_occupancy(x); }
    static void occupancy(const DomArgs& args, KernelExtra& x) { occupancy_object(args.object, x); }

    static void clear_occupancy(KernelExtra& x) {
        x.active_blocks = -1;
        x.block_limits.clear();
        x.limiter.clear();
    }

    // args.occupancy (Kineto 2024+): {"activeBlocksPerMultiprocessor", "limitingFactors",
    // "blockLimitRegs", ...}; a limit of INT_MAX means the resource does not limit.
    static void occupancy_object(simdjson::dom::object args, KernelExtra& x) {
        clear_occupancy(x);
        simdjson::dom::object occ;
        if (args["occupancy"].get_object().get(occ)) return;
        if (!field(occ, "activeBlocksPerMultiprocessor", x.active_blocks)) x.active_blocks = -1;
        static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> k_limits{{
            {"blockLimitRegs", "block_limit_registers"},
            {"blockLimitSharedMem", "block_limit_shared_mem"},
            {"blockLimitWarps", "block_limit_warps"},
            {"blockLimitBlocks", "block_limit_sm"},
            {"blockLimitBarriers", "block_limit_barriers"},
        }};
        for (const auto& [key, metric] : k_limits) {
            double v = 0;
            if (field(occ, key, v) && v < 2147483647.0) x.block_limits[std::string(metric)] = v;
        }
        std::string_view factors;
        if (occ["limitingFactors"].get_string().get(factors)) return;
        static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> k_names{{
            {"REGISTERS", "registers"},
            {"SHARED", "shared memory"},
            {"WARPS", "warps"},
            {"BLOCKS", "block count"},
            {"BARRIERS", "barriers"},
        }};
        for (const auto& [token, label] : k_names)
            if (factors.find(token) != std::string_view::npos)
                x.limiter += (x.limiter.empty() ? "" : " and ") + std::string(label);
    }

    // HTA: launch delay = kernel start - (runtime call start + its duration); a short kernel is
    // one whose launch call took <= 50 us and whose GPU time is below that call's time.
    // A correlation ID as an integer; none for values no trace writes (fractions, huge numbers).
    static std::optional<std::int64_t> correlation_id(double correlation) {
        if (!(correlation >= 0 && correlation < 9.0e15) || correlation != std::floor(correlation)) return std::nullopt;
        return static_cast<std::int64_t>(correlation);
    }
    // The launch maps' slots for `correlation`, fetched while the event's other work is done.
    void prefetch_pending(double correlation) const {
        if (const auto id = correlation_id(correlation)) {
            m_pending_runtime.prefetch(*id);
            m_pending_kernels.prefetch(*id);
        }
    }
    void match_kernel(double correlation, double start, double length, std::int64_t kept, bool memory) {
        const auto id = correlation_id(correlation);
        if (!id) return;
        if (auto cpu = m_pending_runtime.take(*id))
            record_launch({cpu->start, cpu->length}, {start, length}, kept, memory);
        else m_pending_kernels.put(*id, {start, length, static_cast<std::int32_t>(kept), memory});
    }
    // `may_start_work`: false for a call that starts no device work, which is not kept waiting.
    void match_runtime(double correlation, double start, double length, bool may_start_work) {
        const auto id = correlation_id(correlation);
        if (!id) return;
        if (auto gpu = m_pending_kernels.take(*id))
            record_launch({start, length}, {gpu->start, gpu->length}, gpu->kernel, gpu->memory);
        else if (may_start_work) m_pending_runtime.put(*id, {start, length});
    }

    void keep_startup(double start, double length) {
        if (m_startup.size() < k_max_startup_spans) m_startup.push_back({start, start + length});
    }
    void first_call(std::string_view name, double start, double length) {
        FirstCall& f = entry(m_first_calls, name);
        if (f.calls++ == 0 || start < f.start) {
            if (f.calls > 1) f.later_total += f.length;
            f.start = start;
            f.length = length;
        } else {
            f.later_total += length;
        }
    }

    // Keeps a device operation (a kernel with its name's id, or a copy or set without one) for the
    // idle-time figures; its index, or -1 past the bound.
    std::int64_t keep_device_op(double device, double stream, double start, double length,
                                std::optional<std::uint32_t> kernel) {
        if (m_device_ops.size() >= k_max_idle_kernels) {
            m_idle_unkept = true;
            return -1;
        }
        auto key = [](auto& map, double v) {
            auto it = map.find(v);
            if (it == map.end()) it = map.emplace(v, static_cast<std::uint32_t>(map.size())).first;
            return it->second;
        };
        m_device_ops.push_back({start, start + length, -std::numeric_limits<double>::infinity(),
                                 key(m_device_ids, device), key(m_stream_ids, stream), kernel.value_or(0),
                                 !kernel.has_value()});
        return static_cast<std::int64_t>(m_device_ops.size() - 1);
    }

    // HTA's idle time categories over each stream's kernels in start order: a gap whose kernel's
    // launch call ended after the previous kernel ended is host wait (the GPU waited for the
    // host); a gap shorter than 30 ns is kernel wait; every other gap is other wait.
    std::array<double, 3> idle_categories() {
        std::sort(m_device_ops.begin(), m_device_ops.end(), [](const DeviceOp& a, const DeviceOp& b) {
            return std::tie(a.device, a.stream, a.start) < std::tie(b.device, b.stream, b.start);
        });
        double host = 0, kernel = 0, other = 0;
        const DeviceOp* prev = nullptr;  // the stream's previous kernel (copies and sets do not count here)
        double stream_end = 0;
        for (const DeviceOp& k : m_device_ops) {
            if (k.memory) continue;
            if (prev == nullptr || k.device != prev->device || k.stream != prev->stream) {
                prev = &k;
                stream_end = k.end;
                continue;
            }
            prev = &k;
            const double gap = k.start - stream_end;
            if (gap > 0) {
                if (k.issued > stream_end) host += gap;
                else if (gap < k_kernel_wait_ns) kernel += gap;
                else other += gap;
            }
            stream_end = std::max(stream_end, k.end);
        }
        return {host, kernel, other};
    }

    // The idle figures by cause (collectors/readers/idle_causes.hpp), with the one-time host work:
    // long code-loading calls, module loading, and CPU operators whose earliest call took
    // k_startup_call_ns or more and ten times their other calls' mean.
    std::pair<IdleCauses, const std::pair<const std::string, FirstCall>*> idle_causes_and_first_call() {
        std::vector<Span> once = m_startup;
        // The call named is the one covering most of the devices' timelines (the outermost of
        // nested operators that tie): a first call over before the first kernel idled no GPU.
        double first = m_device_ops.front().start, last = m_device_ops.front().end;
        for (const DeviceOp& op : m_device_ops) {
            first = std::min(first, op.start);
            last = std::max(last, op.end);
        }
        const auto within = [&](const FirstCall& f) { return std::min(f.start + f.length, last) - std::max(f.start, first); };
        const std::pair<const std::string, FirstCall>* longest = nullptr;
        for (const auto& call : m_first_calls) {
            const FirstCall& f = call.second;
            if (f.calls < 3 || f.length < k_startup_call_ns || f.length < 10 * f.later_total / (f.calls - 1)) continue;
            if (once.size() < k_max_startup_spans) once.push_back({f.start, f.start + f.length});
            if (within(f) <= 0) continue;
            if (longest == nullptr ||
                std::tuple(within(f), -f.start, f.length, call.first) >
                    std::tuple(within(longest->second), -longest->second.start, longest->second.length, longest->first))
                longest = &call;
        }
        return {idle_causes(m_device_ops, std::move(once)), longest};
    }

    // The device operations' figures, each pass sorting them, in this order: concurrent time,
    // idle categories, idle causes. Past the bound of kept operations, none.
    struct DeviceOpFigures {
        std::vector<double> concurrent;
        std::optional<std::array<double, 3>> categories;  // host, kernel and other wait
        std::optional<IdleCauses> causes;
        const std::pair<const std::string, FirstCall>* longest = nullptr;  // the startup call named
    };
    DeviceOpFigures device_op_figures() {
        DeviceOpFigures f;
        if (m_idle_unkept) return f;
        f.concurrent = concurrent_time(m_device_ops, m_kernels.size());
        if (m_device_ops.empty()) return f;
        f.categories = idle_categories();
        auto [causes, longest] = idle_causes_and_first_call();
        f.causes = causes;
        f.longest = longest;
        return f;
    }

    void set_idle_causes(Entity& run, const DeviceOpFigures& f) {
        if (!f.causes) return;
        const auto* longest = f.longest;
        // Causes are told only where most idle time ends at work with a known issuing call.
        if (!set_idle_cause_metrics(run, *f.causes)) return;
        if (m_module_loading > 0) run.set(plain("module_loading_time", m_module_loading, "ns"));
        if (longest != nullptr) {
            run.attributes["startup_call"] = longest->first;
            run.set(plain("startup_call_time", longest->second.length, "ns"));
        }
    }

    void record_launch(std::pair<double, double> cpu, std::pair<double, double> gpu, std::int64_t kept, bool memory) {
        if (kept >= 0) m_device_ops[static_cast<std::size_t>(kept)].issued = cpu.first + cpu.second;
        if (memory) return;
        const double delay = gpu.first - (cpu.first + cpu.second);
        m_delays.add(delay);
        if (delay > k_launch_delay_outlier_ns) ++m_delay_outliers;
        if (cpu.second <= k_short_cpu_ns && gpu.second < cpu.second) ++m_short_kernels;
    }

    // Per synchronizing call name, the time its calls waited while no kernel or memory operation
    // ran on any GPU of the trace: the wait the GPU shared. A call whose GPU stayed busy cost the
    // host nothing the GPU could have used.
    std::map<std::string, double> gpu_idle_during_syncs() {
        if (m_sync_calls.empty()) return {};
        if (m_sync_calls.size() >= k_max_sync_calls) m_sync_unkept = true;
        SyncIdle idle(k_max_sync_calls);
        for (const SyncCall& c : m_sync_calls) idle.add_call(c.start, c.end, c.name);
        idle.calls_done();
        auto merged = m_gpu_busy.merged();
        while (auto span = merged.next()) idle.add_busy(span->start, span->end);
        return idle.idle_by_name();
    }

    // Why a trace has no kernel: runtime calls without GPU events are a trace whose GPU activity
    // was not recorded (ProfilerActivity.CUDA off), not a CPU-only program.
    std::string without_kernels_note() const {
        double calls = 0, launches = 0;
        for (const auto& [name, call] : m_api) {
            calls += call.stats.count;
            if (name.find("Launch") != std::string::npos) launches += call.stats.count;
        }
        if (m_memory_ops > 0)
            return fmt::format("no GPU kernels in this trace: {} memory copies and sets only", m_memory_ops);
        if (calls > 0)
            return fmt::format("no GPU activity recorded: {} CUDA runtime/driver calls ({} kernel launch calls) but no "
                               "kernel events (the profiler ran without ProfilerActivity.CUDA); read as host calls",
                               calls, launches);
        if (m_cpu_ops == 0) return "empty trace: no CPU operators, runtime calls or GPU kernels";
        return "no GPU kernels in this trace (CPU-only)";
    }

    Result<RunBatch> finish() {
        // The device operations' passes (sorting them) run beside the rest, which leaves them be.
        std::future<DeviceOpFigures> device_ops = std::async(std::launch::async, [this] { return device_op_figures(); });
        RunBatch batch;
        batch.format = "kineto";
        batch.format_detail = m_schema.empty() ? "legacy or unversioned trace" : "trace " + m_schema;
        batch.labels = m_labels;
        const std::size_t run_index = batch.run_entity();
        if (m_timeline.kernel_events() == 0) batch.notes.push_back(without_kernels_note());
        m_timeline.finish(batch);
        if (m_repaired_events > 0) {
            batch.notes.push_back(fmt::format("{} trace event{} held bytes that are not valid UTF-8, replaced by "
                                              "U+FFFD",
                                              m_repaired_events, m_repaired_events == 1 ? "" : "s"));
            for (Entity& e : batch.entities)
                if (auto it = m_name_sha256.find(e.name); it != m_name_sha256.end())
                    e.attributes["name_sha256"] = it->second;
        }

        std::map<std::string, double> sm_of;
        std::map<std::string, std::string> cc_of;  // device -> compute capability
        std::set<std::string> models;
        for (const Entity& info : m_devices)
            if (auto g = info.attributes.find("gpu"); g != info.attributes.end()) models.insert(g->second);
        for (Entity& info : m_devices) {
            auto it = std::find_if(batch.entities.begin(), batch.entities.end(), [&](const Entity& e) {
                return e.kind == EntityKind::device && e.name == info.name;
            });
            if (auto sm = info.value("sm_count")) sm_of[info.name] = *sm;
            if (auto cc = info.attributes.find("cc"); cc != info.attributes.end()) cc_of[info.name] = cc->second;
            if (it == batch.entities.end()) continue;  // a GPU the trace did not use
            for (auto& [k, v] : info.attributes) it->attributes[k] = v;
            for (const Metric& m : info.metrics) it->set(m);
        }
        // Kernels on a device id that deviceProperties does not list (ROCm traces number GPUs
        // differently): when every listed GPU is one model, that is the model they ran on.
        if (models.size() == 1 && !m_devices.empty()) {
            const Entity& info = m_devices.front();
            for (Entity& e : batch.entities) {
                if (e.kind != EntityKind::device || e.attributes.contains("gpu")) continue;
                for (const auto& [k, v] : info.attributes) e.attributes.emplace(k, v);
                for (const Metric& m : info.metrics) e.set(m);
                if (auto sm = info.value("sm_count")) sm_of[e.name] = *sm;
                if (auto cc = info.attributes.find("cc"); cc != info.attributes.end()) cc_of[e.name] = cc->second;
                batch.notes.push_back(fmt::format("{} is not in deviceProperties, which lists one GPU model ({}): taken "
                                                  "as that model",
                                                  e.name, *models.begin()));
            }
        }
        const std::map<std::string, double> idle_during = gpu_idle_during_syncs();
        // In name order, as a tree would hold them.
        std::vector<const std::pair<const std::string, ApiCall>*> api;
        api.reserve(m_api.size());
        for (const auto& call : m_api) api.push_back(&call);
        std::sort(api.begin(), api.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
        for (const auto* call : api) {
            const std::string& name = call->first;
            const Stats& s = call->second.stats;
            Entity e;
            e.kind = EntityKind::api_call;
            e.name = name;
            e.parent = static_cast<std::int64_t>(run_index);
            set_aggregate_metrics(e, "count", s.count, s.total, s.min, s.max);
            if (call->second.synchronizing) e.attributes["synchronizing"] = "true";
            if (auto idle = idle_during.find(name); idle != idle_during.end() && s.total > 0 && !m_sync_unkept) {
                e.set(plain("gpu_idle_during", idle->second, "ns"));
                e.set(plain("gpu_idle_during_pct", 100.0 * idle->second / s.total, "percent"));
            }
            batch.entities.push_back(std::move(e));
        }
        // CUPTI synchronization records ("Event Sync", "Stream Wait Event"), one entity per kind.
        for (auto& [name, s] : m_sync_kinds) {
            Entity e;
            e.kind = EntityKind::api_call;
            e.name = name;
            e.parent = static_cast<std::int64_t>(run_index);
            e.attributes["category"] = "cuda_sync";
            set_aggregate_metrics(e, "count", s.count, s.total, s.min, s.max);
            batch.entities.push_back(std::move(e));
        }

        Entity& run = batch.entities[run_index];
        run.set(plain("gpu_time_comm", m_comm_time, "ns"));
        run.set(plain("gpu_time_compute", m_compute_time, "ns"));
        run.set(plain("gpu_time_memory", m_memory_time, "ns"));
        // Exposed communication: communication kernel time on a device not overlapped by
        // computation kernels on the same device (merged intervals).
        double comm_union = 0, comm_overlapped = 0;
        for (auto& [device, spans] : m_device_spans) {
            const Overlap o = overlap(spans.comm, spans.compute);
            comm_union += o.a_length;
            comm_overlapped += o.both;
        }
        if (comm_union > 0) {
            run.set(plain("comm_compute_overlap_pct", 100.0 * comm_overlapped / comm_union, "percent"));
            run.set(plain("comm_exposed_time", comm_union - comm_overlapped, "ns"));
        }
        if (m_collective_count > 0) run.set(plain("collectives", static_cast<double>(m_collective_count), "count"));
        if (m_collective_bytes > 0) run.set(plain("collective_bytes", m_collective_bytes, "byte"));
        if (m_world_size) run.set(plain("world_size", *m_world_size, "count", "distributedInfo.world_size"));
        if (m_base) run.attributes["time_base_us"] = fmt::format("{:.3f}", *m_base);
        const DeviceOpFigures figures = device_ops.get();
        // Time each kernel ran beside another kernel of its device (past the bound: not told).
        const std::vector<double>& concurrent = figures.concurrent;
        for (Entity& e : batch.entities) {
            if (e.kind == EntityKind::kernel) {
                auto it = m_kernels.find(e.name);
                if (it == m_kernels.end()) continue;
                const KernelExtra& x = it->second;
                if (x.id < concurrent.size())
                    if (const auto total = e.value("duration_total"); total && *total > 0)
                        e.set(plain("concurrent_pct", 100.0 * concurrent[x.id] / *total, "percent"));
                e.attributes["kernel_type"] = x.comm ? "COMM" : "COMPUTATION";
                if (x.grid >= 0) e.set(plain("grid_size", x.grid, "count", "grid"));
                if (x.block >= 0) e.set(plain("block_size", x.block, "count", "block"));
                if (x.registers >= 0) e.set(plain("registers_per_thread", x.registers, "count", "registers per thread"));
                if (x.shared >= 0) e.set(plain("shared_mem_per_block", x.shared, "byte", "shared memory", "B"));
                if (x.blocks_per_sm >= 0) e.set(plain("blocks_per_sm", x.blocks_per_sm, "count", "blocks per SM"));
                if (x.warps_per_sm >= 0) e.set(plain("warps_per_sm", x.warps_per_sm, "count", "warps per SM"));
                if (x.active_blocks >= 0)
                    e.set(plain("active_blocks_per_sm", x.active_blocks, "count", "activeBlocksPerMultiprocessor"));
                for (const auto& [metric, v] : x.block_limits) e.set(plain(metric, v, "count"));
                if (!x.limiter.empty()) e.attributes["occupancy_limiter"] = x.limiter;
                if (x.occupancy_weight > 0)
                    e.set(plain("occupancy_estimated", x.occupancy_weighted / x.occupancy_weight, "percent",
                                "est. achieved occupancy %", "%"));
                if (auto d = e.attributes.find("device"); d != e.attributes.end()) {
                    const std::string device = d->second;  // adding "cc" below moves the attributes
                    if (auto sm = sm_of.find(device); sm != sm_of.end()) {
                        e.set(plain("sm_count", sm->second, "count", "numSms"));
                        x.grids.set_metrics(e, sm->second);
                    }
                    if (auto cc = cc_of.find(device); cc != cc_of.end()) e.attributes["cc"] = cc->second;
                }
            } else if (e.kind == EntityKind::memcpy) {
                auto it = m_bytes.find(e.name);
                if (it == m_bytes.end()) continue;
                e.set(plain("bytes", it->second, "byte", "bytes", "B"));
                if (auto t = e.value("duration_total"); t && *t > 0)
                    e.set(plain("bandwidth", it->second * 1e9 / *t, "byte/s"));
            }
        }
        if (figures.categories) {
            run.set(plain("idle_host_wait", (*figures.categories)[0], "ns"));
            run.set(plain("idle_kernel_wait", (*figures.categories)[1], "ns"));
            run.set(plain("idle_other_wait", (*figures.categories)[2], "ns"));
        }
        set_idle_causes(run, figures);
        if (m_idle_unkept)
            batch.notes.push_back(fmt::format("more than {} kernel executions: idle time categories not computed",
                                              k_max_idle_kernels));
        m_ops.finish(batch, run_index, models.size() == 1 ? *models.begin() : std::string());
        for (std::size_t i = 0; i < m_collectives.size(); ++i) {
            const CollectiveRun& c = m_collectives[i];
            Entity e;
            e.kind = EntityKind::collective;
            e.name = c.name;
            e.attributes["sequence"] = std::to_string(i);
            e.attributes["device"] = c.device;
            e.attributes["library"] = std::string(comm_library(c.name));
            if (c.stream >= 0) e.attributes["stream"] = fmt::format("{:.0f}", c.stream);
            if (!c.op.empty()) e.attributes["collective"] = c.op;
            if (c.bytes >= 0) e.set(plain("bytes", c.bytes, "byte", "In msg nelems x dtype", "B"));
            e.set(plain("start", c.start, "ns"));
            e.set(plain("end", c.start + c.length, "ns"));
            e.set(plain("duration", c.length, "ns"));
            batch.entities.push_back(std::move(e));
        }
        if (m_collective_count > m_collectives.size())
            batch.notes.push_back(fmt::format("{} communication kernel executions: the first {} kept in order",
                                              m_collective_count, m_collectives.size()));
        if (m_delays.count > 0) {
            run.set(plain("launch_delay_mean", m_delays.total / m_delays.count, "ns"));
            run.set(plain("launch_delay_max", m_delays.max, "ns"));
            run.set(plain("launch_delay_outliers", m_delay_outliers, "count"));
            run.set(plain("short_kernels", m_short_kernels, "count"));
        }
        run.set(plain("runtime_outliers", m_runtime_outliers, "count"));
        if (m_steps.count > 0) {
            run.set(plain("iterations", m_steps.count, "count"));
            run.set(plain("iteration_time_mean", m_steps.total / m_steps.count, "ns"));
            run.set(plain("launches_per_iteration",
                          static_cast<double>(m_timeline.kernel_events()) / m_steps.count, "count"));
        }
        double bytes = 0;
        for (const auto& [n, b] : m_bytes) bytes += b;
        if (bytes > 0) run.set(plain("memcpy_bytes", bytes, "byte"));
        if (m_sync.count > 0) run.set(plain("sync_time", m_sync.total, "ns"));
        run.set(plain("cpu_ops", m_cpu_ops, "count"));
        return batch;
    }

    const std::string& m_path;
    simdjson::dom::parser m_parser;
    TimelineBuilder m_timeline{TimelineOptions{false, false}};
    std::size_t m_events = 0;
    std::optional<double> m_base;
    const JsonEventStreamThread* m_stream = nullptr;
    std::size_t m_repaired_events = 0;
    std::map<std::string, std::string> m_name_sha256;  // repaired name -> SHA-256 of the original bytes
    std::string m_schema;
    std::map<std::string, std::string> m_labels;
    std::vector<Entity> m_devices;
    // Transparent hashing: lookups by string_view, no string per event.
    struct NameHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, KernelExtra, NameHash, std::equal_to<>> m_kernels;
    FlatObject m_flat_args;  // the current event's args, when flat
    std::map<std::string, double, std::less<>> m_bytes;
    // A runtime call's figures, and whether its name says it synchronizes (told once per name).
    struct ApiCall {
        Stats stats;
        bool synchronizing = false;
        bool no_device_work = false;  // starts_no_device_work
    };
    std::unordered_map<std::string, ApiCall, NameHash, std::equal_to<>> m_api;
    std::map<std::string, Stats, std::less<>> m_sync_kinds;
    std::map<double, std::string> m_device_labels;
    WaitingMap<PendingSpan> m_pending_runtime, m_pending_kernels;
    Stats m_delays, m_steps, m_sync;
    double m_delay_outliers = 0, m_short_kernels = 0, m_runtime_outliers = 0, m_cpu_ops = 0, m_memory_ops = 0;
    double m_comm_time = 0, m_compute_time = 0, m_memory_time = 0;
    std::map<std::string, DeviceSpans> m_device_spans;
    std::vector<CollectiveRun> m_collectives;
    std::size_t m_collective_count = 0;
    double m_collective_bytes = 0;
    std::vector<DeviceOp> m_device_ops;  // kernels, copies and sets, for the idle figures
    std::vector<Span> m_startup;          // one-time host work: long code-loading calls, module loading
    double m_module_loading = 0;
    std::unordered_map<std::string, FirstCall, NameHash, std::equal_to<>> m_first_calls;
    std::map<double, std::uint32_t> m_device_ids, m_stream_ids;
    bool m_idle_unkept = false;
    std::vector<SyncCall> m_sync_calls;
    bool m_sync_unkept = false;
    SpanSet m_gpu_busy;
    std::optional<double> m_world_size;
    OperatorWork m_ops;  // matmul, convolution and attention work by shape
};

class KinetoCollector final : public StreamCollector {
public:
    std::string_view id() const override { return "kineto"; }
    std::string_view description() const override {
        return "PyTorch profiler / Kineto trace (.json, .json.gz): new and legacy schemas, NVIDIA, AMD, CPU-only";
    }

    bool recognizes(std::string_view head) const override {
        if (head.find("\"traceEvents\"") == std::string_view::npos) return false;
        for (std::string_view marker : {"\"schemaVersion\"", "\"deviceProperties\"", "\"distributedInfo\"",
                                        "\"cpu_op\"", "\"cuda_runtime\"", "\"Operator\"", "\"python_function\""})
            if (head.find(marker) != std::string_view::npos) return true;
        return false;
    }

    Result<RunBatch> collect_stream(const std::string& path, ByteSource& source) const override {
        return KinetoReader(path).run(source);
    }
};

}  // namespace

const Collector& kineto_collector() {
    static const KinetoCollector k_instance;
    return k_instance;
}

}  // namespace perfwatch
