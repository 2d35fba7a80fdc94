#include "collectors/fpga_opencl/clintercept.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "collectors/readers/byte_source.hpp"
#include "collectors/readers/chrome_trace.hpp"
#include "collectors/readers/timeline.hpp"
#include "collectors/readers/units.hpp"

namespace perfwatch {

namespace {

// Device-side commands the Intercept Layer times that move or map memory rather than run a kernel.
bool is_memory_command(std::string_view name) {
    return name.starts_with("clEnqueue") || name.starts_with("iclEnqueue") || name.starts_with("zeCommandList");
}

class ReportCollector final : public Collector {
public:
    std::string_view id() const override { return "clintercept-report"; }
    std::string_view description() const override {
        return "OpenCL Intercept Layer report (clintercept_report.txt): host and device timing tables";
    }

    bool recognizes(std::string_view head) const override {
        return (head.find("Device Performance Timing Results for ") != std::string_view::npos ||
                head.find("Host Performance Timing Results:") != std::string_view::npos) &&
               head.find("Function Name,  Calls,") != std::string_view::npos;
    }

    Result<RunBatch> collect(const std::string& path, std::string_view content) const override {
        RunBatch batch;
        batch.format = std::string(id());
        const std::size_t run_index = batch.run_entity();
        enum class Section { none, host, device } section = Section::none;
        bool in_table = false;
        std::size_t device_index = 0;
        std::string device_name;
        double gpu_time = 0, launches = 0, kernels = 0;
        std::map<std::string, std::size_t> by_name;
        LineReader lines(content);
        std::string_view line;
        std::uint64_t line_no = 0;
        while (lines.next(line)) {
            line_no = lines.line_number();
            const std::string_view t = trim(line);
            if (t.empty()) {
                in_table = false;
                continue;
            }
            if (t == "Host Performance Timing Results:") {
                section = Section::host;
                in_table = false;
                continue;
            }
            if (t.starts_with("Device Performance Timing Results for ") && t.ends_with(":")) {
                section = Section::device;
                in_table = false;
                std::string_view full = t.substr(38, t.size() - 39);
                Entity dev;
                dev.kind = EntityKind::device;
                dev.parent = static_cast<std::int64_t>(run_index);
                // "Intel(R) Graphics [0x5916] (24CUs, 1100MHz)"
                if (full.ends_with("MHz)")) {
                    const std::size_t open = full.rfind(" (");
                    if (open != std::string_view::npos) {
                        const std::string_view info = full.substr(open + 2, full.size() - open - 3);
                        const std::size_t comma = info.find(", ");
                        if (comma != std::string_view::npos && info.substr(0, comma).ends_with("CUs")) {
                            if (auto cus = parse_report_number(info.substr(0, comma - 3)))
                                dev.set(Metric{"compute_units", *cus, "count", "CUs", ""});
                            if (auto mhz = parse_report_number(info.substr(comma + 2, info.size() - comma - 5)))
                                dev.set(Metric{"device_frequency", *mhz * 1e6, "hz", "MHz", "MHz"});
                            full = full.substr(0, open);
                        }
                    }
                }
                dev.name = std::string(full);
                device_name = dev.name;
                device_index = batch.entities.size();
                batch.entities.push_back(std::move(dev));
                continue;
            }
            if (section == Section::none) continue;
            if (t.starts_with("Function Name,")) {
                in_table = true;
                continue;
            }
            if (!in_table) continue;  // "Total Time (ns): ..." and other lines around tables
            if (t.find(',') == std::string_view::npos) {  // log text right after a table ends it
                in_table = false;
                continue;
            }
            // NAME, Calls, Time (ns), Time (%), Average (ns), Min (ns), Max (ns): the name may hold
            // commas, so the six numbers are taken from the right.
            std::vector<std::string_view> fields;
            std::string_view rest = line;
            for (int i = 0; i < 6; ++i) {
                const std::size_t c = rest.rfind(',');
                if (c == std::string_view::npos) break;
                fields.insert(fields.begin(), trim(rest.substr(c + 1)));
                rest = rest.substr(0, c);
            }
            const std::string_view name = trim(rest);
            std::vector<double> v;
            for (std::string_view f : fields) {
                if (f.ends_with('%')) f.remove_suffix(1);
                if (auto x = parse_report_number(f)) v.push_back(*x);
            }
            if (fields.size() != 6 || v.size() != 6 || name.empty())
                return fail(path, line_no,
                            "expected \"Function Name, Calls, Time (ns), Time (%), Average (ns), Min (ns), Max (ns)\" "
                            "with six numbers after the name");
            const EntityKind kind = section == Section::host ? EntityKind::api_call
                                    : is_memory_command(name)  ? EntityKind::memcpy
                                                               : EntityKind::kernel;
            const std::string count_name = kind == EntityKind::kernel ? "launches" : "count";
            // The same command on several devices is one entity; its statistics are combined.
            const std::string key = std::string(to_string(kind)) + '\n' + std::string(name);
            auto [it, fresh] = by_name.try_emplace(key, batch.entities.size());
            if (fresh) {
                Entity e;
                e.kind = kind;
                e.name = std::string(name);
                e.parent = static_cast<std::int64_t>(section == Section::host ? run_index : device_index);
                if (section == Section::device) e.attributes["device"] = device_name;
                e.set(Metric{count_name, v[0], "count", "Calls", ""});
                e.set(Metric{"duration_total", v[1], "ns", "Time", "ns"});
                e.set(Metric{"duration_min", v[4], "ns", "Min", "ns"});
                e.set(Metric{"duration_max", v[5], "ns", "Max", "ns"});
                batch.entities.push_back(std::move(e));
            } else {
                Entity& e = batch.entities[it->second];
                e.set(Metric{count_name, e.value(count_name).value_or(0) + v[0], "count", "Calls", ""});
                e.set(Metric{"duration_total", e.value("duration_total").value_or(0) + v[1], "ns", "Time", "ns"});
                e.set(Metric{"duration_min", std::min(e.value("duration_min").value_or(v[4]), v[4]), "ns", "Min", "ns"});
                e.set(Metric{"duration_max", std::max(e.value("duration_max").value_or(v[5]), v[5]), "ns", "Max", "ns"});
                if (e.attributes["device"] != device_name) {
                    e.attributes.erase("device");
                    e.parent = static_cast<std::int64_t>(run_index);
                }
            }
            Entity& e = batch.entities[it->second];
            const double calls = e.value(count_name).value_or(0);
            const double total = e.value("duration_total").value_or(0);
            if (calls > 0) {
                e.set(Metric{"duration_mean", total / calls, "ns", "Average", "ns"});
                if (kind == EntityKind::kernel) e.set(Metric{"duration", total / calls, "ns", "Average", "ns"});
            }
            if (kind == EntityKind::kernel) {
                gpu_time += v[1];
                launches += v[0];
            }
        }
        for (const auto& [key, index] : by_name)
            if (batch.entities[index].kind == EntityKind::kernel) ++kernels;
        if (batch.entities.size() <= 1)
            return fail(path, line_no, "no timing table rows (expected \"Function Name,  Calls, ...\" tables)");
        Entity& run = batch.entities[run_index];
        run.set(Metric{"gpu_time", gpu_time, "ns", "", ""});
        run.set(Metric{"launches", launches, "count", "", ""});
        run.set(Metric{"kernels", kernels, "count", "", ""});
        return batch;
    }
};

constexpr double k_us_to_ns = 1000.0;

// A complete ("X") trace event on a device timeline: its name and its span in ns.
TimelineEvent timeline_event(const TraceEvent& t, std::string device) {
    TimelineEvent ev;
    ev.name = std::string(t.name);
    ev.start_ns = t.ts * k_us_to_ns;
    ev.end_ns = (t.ts + t.dur) * k_us_to_ns;
    ev.device = std::move(device);
    return ev;
}

class InterceptTraceCollector final : public Collector {
public:
    std::string_view id() const override { return "clintercept-trace"; }
    std::string_view description() const override {
        return "OpenCL Intercept Layer Chrome trace (clintercept_trace.json), including traces cut short";
    }

    bool recognizes(std::string_view head) const override {
        const std::size_t first = head.find_first_not_of(" \t\r\n");
        return first != std::string_view::npos && head[first] == '[' &&
               (head.find("\"clintercept_") != std::string_view::npos ||
                head.find("\"Host Thread ") != std::string_view::npos);
    }

    Result<RunBatch> collect(const std::string& path, std::string_view content) const override {
        // Device work appears as one of three timelines, by the controls used: per queue
        // (negative tid), per kernel (tid is the name) or in stages ("NAME (Execution)").
        std::vector<TimelineEvent> queue_events, kernel_events, stage_events;
        std::map<std::string, std::vector<double>> host_calls;
        auto note = read_trace(path, content, [&](const TraceEvent& t) {
            if (t.ph != "X") return;
            TimelineEvent ev = timeline_event(t, "process " + t.pid);
            ev.kind = is_memory_command(t.name) ? TimelineEvent::Kind::memory : TimelineEvent::Kind::kernel;
            if (t.tid_negative) {
                ev.queue = t.tid.substr(1);
                queue_events.push_back(std::move(ev));
            } else if (t.tid_is_string) {
                kernel_events.push_back(std::move(ev));
            } else if (t.name.ends_with(" (Execution)")) {
                ev.name = std::string(t.name.substr(0, t.name.size() - 12));
                ev.kind = is_memory_command(ev.name) ? TimelineEvent::Kind::memory : TimelineEvent::Kind::kernel;
                ev.queue = t.tid;
                stage_events.push_back(std::move(ev));
            } else if (t.name.ends_with(" (Queued)") || t.name.ends_with(" (Submitted)")) {
                // waiting, not executing
            } else {
                host_calls[std::string(t.name)].push_back(t.dur * k_us_to_ns);
            }
        });
        if (!note) return std::unexpected(note.error());
        std::vector<TimelineEvent>& device = !queue_events.empty()    ? queue_events
                                             : !kernel_events.empty() ? kernel_events
                                                                      : stage_events;
        if (device.empty() && host_calls.empty()) return fail(path, 0, "trace holds no complete (\"X\") events");
        RunBatch batch;
        batch.format = std::string(id());
        batch.format_detail = &device == &queue_events    ? "device timeline per queue"
                              : &device == &kernel_events ? "device timeline per kernel"
                                                          : "device timeline in stages";
        if (!note->empty()) batch.notes.push_back(*note);
        if (device.empty()) batch.notes.push_back("no device timing in this trace (host API calls only)");
        build_timeline_entities(batch, std::move(device));
        for (auto& [name, durations] : host_calls) {
            Entity e;
            e.kind = EntityKind::api_call;
            e.name = name;
            e.parent = static_cast<std::int64_t>(batch.run_entity());
            set_duration_metrics(e, duration_stats(durations), "count");
            batch.entities.push_back(std::move(e));
        }
        return batch;
    }
};

class ChromeTraceCollector final : public Collector {
public:
    std::string_view id() const override { return "chrome-trace"; }
    std::string_view description() const override {
        return "generic Chrome trace-event JSON (fallback): complete \"X\" events on a GPU (a cat naming kernel, gpu, "
               "memcpy or memset, or a process or thread naming a GPU, device or stream) become kernels and copies, "
               "pid the device, tid the queue; every other event is host work, kept as host calls, never as kernels";
    }

    bool recognizes(std::string_view head) const override {
        const std::size_t first = head.find_first_not_of(" \t\r\n");
        if (first == std::string_view::npos || (head[first] != '[' && head[first] != '{')) return false;
        return head.find("\"ph\"") != std::string_view::npos && head.find("\"ts\"") != std::string_view::npos;
    }

    Result<RunBatch> collect(const std::string& path, std::string_view content) const override {
        std::vector<TimelineEvent> gpu;
        std::map<std::string, std::vector<double>> host_calls;
        std::size_t host_events = 0;
        auto names = [](std::string_view text, std::initializer_list<std::string_view> words) {
            return std::any_of(words.begin(), words.end(),
                               [&](std::string_view w) { return text.find(w) != std::string_view::npos; });
        };
        auto note = read_trace(path, content, [&](const TraceEvent& t) {
            if (t.ph != "X") return;
            const bool memory = names(t.cat, {"memcpy", "memset", "Memcpy", "Memset"});
            const bool device = memory || names(t.cat, {"kernel", "Kernel", "gpu", "GPU"}) ||
                                names(t.pid, {"GPU", "gpu", "Device", "device", "Stream", "stream"}) ||
                                names(t.tid, {"GPU", "gpu", "Stream", "stream"});
            if (!device) {
                // A CPU operator, an autograd-profiler function, a host thread's span.
                ++host_events;
                if (t.dur >= 0) host_calls[std::string(t.name)].push_back(t.dur * k_us_to_ns);
                return;
            }
            TimelineEvent ev = timeline_event(t, "pid " + t.pid);
            ev.queue = t.tid;
            if (memory) ev.kind = TimelineEvent::Kind::memory;
            gpu.push_back(std::move(ev));
        });
        if (!note) return std::unexpected(note.error());
        if (gpu.empty() && host_calls.empty())
            return fail(path, 0, "trace holds no complete (\"X\") events with a duration");
        RunBatch batch;
        batch.format = std::string(id());
        batch.format_detail = "generic fallback: events on a GPU by their cat, process or thread";
        batch.notes.push_back("read as a generic Chrome trace: no format-specific meaning was applied");
        if (!note->empty()) batch.notes.push_back(*note);
        if (gpu.empty())
            batch.notes.push_back(fmt::format("no GPU work in this trace: its {} complete events are host (CPU) work, "
                                              "kept as host calls, not kernels",
                                              host_events));
        build_timeline_entities(batch, std::move(gpu), TimelineOptions{false});
        for (auto& [name, durations] : host_calls) {
            Entity e;
            e.kind = EntityKind::api_call;
            e.name = name;
            e.parent = static_cast<std::int64_t>(batch.run_entity());
            e.attributes["domain"] = "host";
            set_duration_metrics(e, duration_stats(durations), "count");
            batch.entities.push_back(std::move(e));
        }
        return batch;
    }
};

}  // namespace

const Collector& clintercept_report_collector() {
    static const ReportCollector k_instance;
    return k_instance;
}

const Collector& clintercept_trace_collector() {
    static const InterceptTraceCollector k_instance;
    return k_instance;
}

const Collector& chrome_trace_collector() {
    static const ChromeTraceCollector k_instance;
    return k_instance;
}

}  // namespace perfwatch
