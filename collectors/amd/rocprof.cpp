#include "collectors/amd/rocprof.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>
#include <optional>
#include <set>

#include "collectors/amd/rocprof_trace_text.hpp"
#include "collectors/readers/sqlite_schema.hpp"
#include "collectors/readers/chrome_trace.hpp"
#include "collectors/readers/csv.hpp"
#include "collectors/readers/timeline.hpp"
#include "collectors/readers/units.hpp"

namespace perfwatch {

namespace {

// True when `ev` is the longest dispatch of its kernel so far (ties: the later), recording its
// length in `lengths`: a kernel's launch configuration is that of the launch that takes its time,
// the one its shape rules judge (gunrock's merge_path_kernel runs 1 to 39,041 workgroups; its
// 3.8 ms dispatch has 18,937, its last 1).
bool longest_dispatch(std::map<std::string, double>& lengths, const TimelineEvent& ev) {
    const double length = std::max(0.0, ev.end_ns - ev.start_ns);
    auto [at, fresh] = lengths.try_emplace(ev.name, length);
    if (!fresh && length < at->second) return false;
    at->second = length;
    return true;
}

constexpr std::string_view k_stats_header = "\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\"";
constexpr std::string_view k_sqlite_magic{"SQLite format 3\0", 16};

// What one stats file counts, told from its names: HIP/HSA API calls, copies or kernels.
EntityKind stats_kind(const std::vector<std::string>& names) {
    std::size_t api = 0, copies = 0;
    for (const std::string& n : names) {
        if (n.starts_with("hip") || n.starts_with("hsa_") || n.starts_with("__hip")) ++api;
        if (n.starts_with("Copy") || n.starts_with("FillBuffer")) ++copies;
    }
    if (!names.empty() && api == names.size()) return EntityKind::api_call;
    if (!names.empty() && copies == names.size()) return EntityKind::memcpy;
    return EntityKind::kernel;
}

class StatsCollector final : public StreamCollector {
public:
    std::string_view id() const override { return "rocprof-stats"; }
    std::string_view description() const override {
        return "rocprof --stats CSV: results.stats.csv (kernels), .hip_stats.csv (HIP API), .copy_stats.csv, "
               "rocprofv3 *_kernel_stats.csv";
    }

    bool recognizes(std::string_view head) const override { return head.starts_with(k_stats_header); }

    // Lines stream in; a name met again (a concatenated or repeated table) adds to its row, so
    // memory grows with the distinct names, not the file.
    Result<RunBatch> collect_stream(const std::string& path, ByteSource& source) const override {
        CsvStream lines(source);
        std::string_view line;
        auto got = lines.next_line(line);
        if (!got) return std::unexpected(got.error());
        CsvReader header_reader(*got ? line : std::string_view());
        std::vector<std::string> header;
        header_reader.next(header);
        const std::size_t columns = header.size();
        if (columns < 5)
            return fail(path, 1, fmt::format("expected a header of at least 5 columns (Name, Calls, TotalDurationNs, "
                                             "AverageNs, Percentage), found {}",
                                             columns));
        const bool v3 = columns >= 8;  // ..., "MinNs","MaxNs","StdDev"
        struct Row {
            std::string name;
            // Calls, TotalDurationNs, AverageNs, Percentage[, MinNs, MaxNs, StdDev]
            std::vector<double> values;
            double sum_squares = 0;  // v3: calls x (StdDev^2 + AverageNs^2), summed over the rows merged
        };
        std::vector<Row> rows;
        std::unordered_map<std::string, std::size_t> row_of;
        std::vector<double> values;
        std::uint64_t line_no = 1, merged = 0;
        while (true) {
            got = lines.next_line(line);
            if (!got) return std::unexpected(got.error());
            if (!*got) break;
            line_no = lines.record_line();
            if (trim(line).empty()) continue;
            // The numbers are the last columns; old rocprof writes names unquoted even when
            // they hold commas, so the name is everything before them.
            values.assign(columns - 1, 0.0);
            std::string_view rest = line;
            for (std::size_t i = 0; i + 1 < columns; ++i) {
                const std::size_t c = rest.rfind(',');
                if (c == std::string_view::npos)
                    return fail(path, line_no, fmt::format("expected {} columns (a name and {} numbers)", columns,
                                                           columns - 1));
                auto v = parse_report_number(rest.substr(c + 1));
                if (!v)
                    return fail(path, line_no,
                                fmt::format("expected a number in column \"{}\", found \"{}\"",
                                            header[columns - 1 - i], trim(rest.substr(c + 1))));
                values[columns - 2 - i] = *v;
                rest = rest.substr(0, c);
            }
            std::string_view name = trim(rest);
            if (name.size() >= 2 && name.front() == '"' && name.back() == '"') name = name.substr(1, name.size() - 2);
            const double squares = v3 ? values[0] * (values[6] * values[6] + values[2] * values[2]) : 0.0;
            auto [it, fresh] = row_of.try_emplace(std::string(name), rows.size());
            if (fresh) {
                rows.push_back({it->first, values, squares});
                continue;
            }
            ++merged;
            Row& r = rows[it->second];
            r.values[0] += values[0];
            r.values[1] += values[1];
            r.values[2] = r.values[0] > 0 ? r.values[1] / r.values[0] : 0.0;
            r.values[3] += values[3];
            if (v3) {
                r.values[4] = std::min(r.values[4], values[4]);
                r.values[5] = std::max(r.values[5], values[5]);
                r.sum_squares += squares;
                const double mean = r.values[2];
                r.values[6] = r.values[0] > 0 ? std::sqrt(std::max(0.0, r.sum_squares / r.values[0] - mean * mean)) : 0.0;
            }
        }
        if (rows.empty()) return fail(path, line_no, "stats header without rows");
        std::vector<std::string> names;
        for (const Row& r : rows) names.push_back(r.name);
        const EntityKind kind = stats_kind(names);

        RunBatch batch;
        batch.format = std::string(id());
        batch.format_detail = fmt::format("{} {} statistics", v3 ? "rocprofv3" : "rocprof v1",
                                          kind == EntityKind::api_call ? "HIP API"
                                          : kind == EntityKind::memcpy ? "copy"
                                                                       : "kernel");
        const std::size_t run_index = batch.run_entity();
        double gpu_time = 0, launches = 0, kernels = 0, barriers = 0, barrier_time = 0;
        for (const Row& r : rows) {
            // A barrier packet is the GPU waiting on a dependency, not a kernel: it is told apart
            // (the kernel trace readers leave it out the same way), not ranked among the kernels.
            const bool barrier = kind == EntityKind::kernel && r.name == "<barrier packet>";
            Entity e;
            e.kind = barrier ? EntityKind::api_call : kind;
            e.name = r.name;
            e.parent = static_cast<std::int64_t>(run_index);
            const std::string count_name = e.kind == EntityKind::kernel ? "launches" : "count";
            e.set(plain(count_name, r.values[0], "count", "Calls"));
            e.set(plain("duration_total", r.values[1], "ns", "TotalDurationNs", "ns"));
            e.set(plain("duration_mean", r.values[2], "ns", "AverageNs", "ns"));
            if (e.kind == EntityKind::kernel) e.set(plain("duration", r.values[2], "ns", "AverageNs", "ns"));
            if (v3) {
                e.set(plain("duration_min", r.values[4], "ns", "MinNs", "ns"));
                e.set(plain("duration_max", r.values[5], "ns", "MaxNs", "ns"));
                e.set(plain("duration_std", r.values[6], "ns", "StdDev", "ns"));
            }
            if (barrier) {
                e.attributes["category"] = "barrier";
                barriers += r.values[0];
                barrier_time += r.values[1];
            } else if (kind == EntityKind::kernel) {
                gpu_time += r.values[1];
                launches += r.values[0];
                ++kernels;
            }
            batch.entities.push_back(std::move(e));
        }
        if (merged > 0)
            batch.notes.push_back(fmt::format("{} rows named an entry already listed: added to its row (calls, time and "
                                              "share summed)",
                                              merged));
        Entity& run = batch.entities[run_index];
        if (kind == EntityKind::kernel) {
            run.set(plain("gpu_time", gpu_time, "ns"));
            run.set(plain("launches", launches, "count"));
            run.set(plain("kernels", kernels, "count"));
            if (barriers > 0)
                batch.notes.push_back(fmt::format("{:.0f} barrier packets ({:.3f} s) are waits, not kernels: left out of the "
                                                  "kernel time", barriers, barrier_time / 1e9));
        } else {
            batch.notes.push_back(kind == EntityKind::api_call ? "HIP API statistics only: no kernel timings"
                                                               : "copy statistics only: no kernel timings");
        }
        return batch;
    }
};

class SqliteCollector final : public Collector {
public:
    std::string_view id() const override { return "rocprof-sqlite"; }
    std::string_view description() const override {
        return "rocprof SQLite: v1 results.db (KERN/OPS/HIP/COPY) and the rocprofv3 rocpd database";
    }

    CollectorInput input() const override { return CollectorInput::path; }
    bool recognizes(std::string_view head) const override {
        if (!head.starts_with(k_sqlite_magic)) return false;
        // rocprof v1 writes OPS (and HIP, COPY) with --hip-trace, KERN alone with --stats.
        return head.find("rocpd_kernel_dispatch") != std::string_view::npos ||
               ((head.find("CREATE TABLE KERN") != std::string_view::npos ||
                 head.find("CREATE TABLE OPS") != std::string_view::npos) &&
                head.find("BeginNs") != std::string_view::npos);
    }

    Result<RunBatch> collect(const std::string& path, std::string_view) const override {
        try {
            SQLite::Database db(path, SQLite::OPEN_READONLY);
            const std::set<std::string> tables = sqlite_tables(db);
            RunBatch batch;
            batch.format = std::string(id());
            std::vector<TimelineEvent> events;
            std::map<std::string, LaunchConfig> config;  // by kernel name: its longest dispatch's
            std::map<std::string, double> config_ns;      // that dispatch's length
            const auto keep_config = [&](const TimelineEvent& ev, const LaunchConfig& c) {
                if (longest_dispatch(config_ns, ev)) config[ev.name] = c;
            };
            // A column the reader needs and the table lacks is named in the error; one it can do
            // without is read as NULL (its figure left out). rocprof versions differ in both.
            const auto select = [&](const std::string& table, std::initializer_list<std::string_view> required,
                                    std::initializer_list<std::string_view> optional) -> Result<std::string> {
                auto list = sqlite_select_list(db, path, "the rocprof database", table, required, optional);
                if (!list) return std::unexpected(list.error());
                return fmt::format("SELECT {} FROM \"{}\"", *list, table);
            };
            const auto value = [](SQLite::Statement& st, int i) -> std::optional<double> {
                if (st.getColumn(i).isNull()) return std::nullopt;
                return st.getColumn(i).getDouble();
            };
            const auto product = [&](SQLite::Statement& st, int i) -> std::optional<double> {
                const auto x = value(st, i), y = value(st, i + 1), z = value(st, i + 2);
                if (!x || !y || !z) return std::nullopt;
                return *x * *y * *z;
            };
            const auto text = [](SQLite::Statement& st, int i, std::string_view absent) {
                return st.getColumn(i).isNull() ? std::string(absent) : st.getColumn(i).getString();
            };
            const auto index = [](SQLite::Statement& st, int i) {
                return st.getColumn(i).isNull() ? std::string("0") : std::to_string(st.getColumn(i).getInt64());
            };
            if (tables.contains("kernels")) {
                batch.format_detail = "rocprofv3 rocpd database";
                auto sql = select("kernels", {"name", "start", "end"},
                                  {"agent_abs_index", "queue_id", "grid_x", "grid_y", "grid_z", "workgroup_x", "workgroup_y",
                                   "workgroup_z", "vgpr_count", "sgpr_count", "lds_size"});
                if (!sql) return std::unexpected(sql.error());
                SQLite::Statement st(db, *sql);
                while (st.executeStep()) {
                    TimelineEvent ev;
                    ev.name = st.getColumn(0).getString();
                    ev.start_ns = st.getColumn(1).getDouble();
                    ev.end_ns = st.getColumn(2).getDouble();
                    ev.device = fmt::format("agent {}", index(st, 3));
                    ev.queue = text(st, 4, "");
                    keep_config(ev, LaunchConfig{product(st, 5), product(st, 8), value(st, 11), value(st, 12), value(st, 13)});
                    events.push_back(std::move(ev));
                }
                if (tables.contains("memory_copies")) {
                    auto copies = select("memory_copies", {"name", "start", "end"}, {"dst_agent_abs_index"});
                    if (!copies) return std::unexpected(copies.error());
                    SQLite::Statement mc(db, *copies);
                    while (mc.executeStep()) {
                        TimelineEvent ev;
                        ev.kind = TimelineEvent::Kind::memory;
                        ev.name = mc.getColumn(0).getString();
                        ev.start_ns = mc.getColumn(1).getDouble();
                        ev.end_ns = mc.getColumn(2).getDouble();
                        ev.device = fmt::format("agent {}", index(mc, 3));
                        events.push_back(std::move(ev));
                    }
                }
            } else if (tables.contains("OPS")) {
                batch.format_detail = "rocprof v1 results.db";
                for (const char* table : {"OPS", "COPY"}) {
                    if (!tables.contains(table)) continue;
                    auto sql = select(table, {"Name", "BeginNs", "EndNs"}, {"dev-id", "queue-id"});
                    if (!sql) return std::unexpected(sql.error());
                    SQLite::Statement st(db, *sql);
                    while (st.executeStep()) {
                        TimelineEvent ev;
                        ev.kind = std::string_view(table) == "OPS" ? TimelineEvent::Kind::kernel : TimelineEvent::Kind::memory;
                        ev.name = st.getColumn(0).getString();
                        ev.start_ns = st.getColumn(1).getDouble();
                        ev.end_ns = st.getColumn(2).getDouble();
                        ev.device = fmt::format("device {}", index(st, 3));
                        ev.queue = text(st, 4, "");
                        events.push_back(std::move(ev));
                    }
                }
                // The HIP API trace (--hip-trace): host calls, on no device.
                if (tables.contains("HIP")) {
                    auto sql = select("HIP", {"Name", "BeginNs", "EndNs"}, {});
                    if (!sql) return std::unexpected(sql.error());
                    SQLite::Statement st(db, *sql);
                    while (st.executeStep()) {
                        TimelineEvent ev;
                        ev.kind = TimelineEvent::Kind::other;
                        ev.name = st.getColumn(0).getString();
                        ev.start_ns = st.getColumn(1).getDouble();
                        ev.end_ns = st.getColumn(2).getDouble();
                        events.push_back(std::move(ev));
                    }
                }
            } else if (tables.contains("KERN")) {
                // One row per dispatch, the columns of results.csv; names keep their CSV quotes.
                batch.format_detail = "rocprof v1 results.db (KERN dispatches)";
                auto sql = select("KERN", {"KernelName", "BeginNs", "EndNs"},
                                  {"gpu-id", "queue-id", "grd", "wgr", "arch_vgpr", "accum_vgpr", "sgpr", "lds"});
                if (!sql) return std::unexpected(sql.error());
                SQLite::Statement st(db, *sql);
                while (st.executeStep()) {
                    TimelineEvent ev;
                    std::string name = st.getColumn(0).getString();
                    if (name.size() >= 2 && name.front() == '"' && name.back() == '"') name = name.substr(1, name.size() - 2);
                    ev.name = std::move(name);
                    ev.start_ns = st.getColumn(1).getDouble();
                    ev.end_ns = st.getColumn(2).getDouble();
                    ev.device = fmt::format("gpu-id {}", index(st, 3));
                    ev.queue = text(st, 4, "");
                    const auto arch = value(st, 7), accum = value(st, 8);
                    keep_config(ev, LaunchConfig{value(st, 5), value(st, 6),
                                                 arch ? std::optional<double>(*arch + accum.value_or(0)) : std::nullopt,
                                                 value(st, 9), value(st, 10)});
                    events.push_back(std::move(ev));
                }
            } else {
                return fail(path, 0, fmt::format("SQLite database is not a rocprof database (no kernels view, OPS or KERN "
                                                 "table; its tables: {})",
                                                 fmt::join(tables, ", ")));
            }
            if (events.empty()) batch.notes.push_back("no kernel dispatches in this database");
            build_timeline_entities(batch, std::move(events), TimelineOptions{false, true});
            for (Entity& e : batch.entities) {
                if (e.kind == EntityKind::api_call && is_hip_sync_call(e.name)) e.attributes["synchronizing"] = "true";
                if (e.kind != EntityKind::kernel) continue;
                auto it = config.find(e.name);
                if (it == config.end()) continue;
                const LaunchConfig& c = it->second;
                if (c.block_size) e.set(plain("block_size", *c.block_size, "count", "workgroup_x*y*z"));
                if (c.block_size && c.grid_threads && *c.block_size > 0)
                    e.set(plain("grid_size", *c.grid_threads / *c.block_size, "count", "grid_x*y*z / workgroup"));
                if (c.vgpr_count) e.set(plain("vgpr_count", *c.vgpr_count, "count", "vgpr_count"));
                if (c.sgpr_count) e.set(plain("sgpr_count", *c.sgpr_count, "count", "sgpr_count"));
                if (c.lds_per_block) e.set(plain("shared_mem_per_block", *c.lds_per_block, "byte", "lds_size", "B"));
            }
            return batch;
        } catch (const SQLite::Exception& ex) {
            return fail(path, 0, fmt::format("cannot read the rocprof database: {}", ex.what()));
        }
    }

private:
    // A kernel's launch configuration as the database has it (each figure absent where its
    // columns are).
    struct LaunchConfig {
        std::optional<double> grid_threads, block_size, vgpr_count, sgpr_count, lds_per_block;
    };
};

// rocprofv3 *_kernel_trace.csv: one row per dispatch with agent, queue, name, timestamps (ns),
// register counts and sizes.
class TraceCsvCollector final : public Collector {
public:
    std::string_view id() const override { return "rocprof-trace-csv"; }
    std::string_view description() const override {
        return "rocprofv3 *_kernel_trace.csv (one row per kernel dispatch)";
    }

    bool recognizes(std::string_view head) const override {
        const std::string_view first = head.substr(0, head.find('\n'));
        // A counter collection with timestamps has these columns too: its Counter_Name and
        // Counter_Value columns tell it from a trace (one row per dispatch and counter).
        return first.find("\"Kernel_Name\"") != std::string_view::npos &&
               first.find("\"Start_Timestamp\"") != std::string_view::npos &&
               (first.find("\"Counter_Name\"") == std::string_view::npos ||
                first.find("\"Counter_Value\"") == std::string_view::npos);
    }

    Result<RunBatch> collect(const std::string& path, std::string_view content) const override {
        CsvReader reader(content);
        std::vector<std::string> header, row;
        if (reader.next(header) != CsvReader::Status::record) return fail(path, 1, "no header row");
        auto col = [&](std::string_view n) { return column_index(header, {n}); };
        const int name = col("Kernel_Name"), start = col("Start_Timestamp"), end = col("End_Timestamp"),
                  agent = col("Agent_Id"), queue = col("Queue_Id"), vgpr = col("VGPR_Count"),
                  sgpr = col("SGPR_Count"), lds = col("LDS_Block_Size"), wx = col("Workgroup_Size_X"),
                  wy = col("Workgroup_Size_Y"), wz = col("Workgroup_Size_Z"), gx = col("Grid_Size_X"),
                  gy = col("Grid_Size_Y"), gz = col("Grid_Size_Z");
        if (name < 0 || start < 0 || end < 0)
            return fail(path, 1, "header lacks Kernel_Name, Start_Timestamp or End_Timestamp");
        TimelineBuilder builder(TimelineOptions{false, true});
        std::map<std::string, std::map<std::string, double>> config;
        std::map<std::string, double> config_ns;
        auto number = [&](int c) -> std::optional<double> {
            if (c < 0 || static_cast<std::size_t>(c) >= row.size()) return std::nullopt;
            return parse_report_number(row[static_cast<std::size_t>(c)]);
        };
        while (true) {
            const auto status = reader.next(row);
            if (status == CsvReader::Status::end) break;
            if (status == CsvReader::Status::error) return fail(path, reader.record_line(), reader.error());
            if (row.size() == 1 && trim(row[0]).empty()) continue;
            if (row.size() != header.size())
                return fail(path, reader.record_line(),
                            fmt::format("expected {} fields as in the header, found {}", header.size(), row.size()));
            const auto s = number(start), e = number(end);
            if (!s || !e)
                return fail(path, reader.record_line(), "expected integer Start_Timestamp and End_Timestamp (ns)");
            TimelineEvent ev;
            ev.name = row[static_cast<std::size_t>(name)];
            ev.start_ns = *s;
            ev.end_ns = *e;
            ev.device = fmt::format("agent {}", agent >= 0 ? row[static_cast<std::size_t>(agent)] : "0");
            if (queue >= 0) ev.queue = row[static_cast<std::size_t>(queue)];
            // The kernel's configuration is its longest dispatch's (as the databases' readers keep it),
            // read only for a dispatch that is the longest so far.
            if (longest_dispatch(config_ns, ev)) {
                auto& c = config[ev.name];
                c.clear();
                if (auto v = number(vgpr)) c["vgpr_count"] = *v;
                if (auto v = number(sgpr)) c["sgpr_count"] = *v;
                if (auto v = number(lds)) c["shared_mem_per_block"] = *v;
                const auto x = number(wx), y = number(wy), z = number(wz);
                if (x && y && z) c["block_size"] = *x * *y * *z;
                const auto a = number(gx), b = number(gy), d = number(gz);
                if (a && b && d && c.contains("block_size") && c["block_size"] > 0)
                    c["grid_size"] = *a * *b * *d / c["block_size"];
            }
            builder.add(std::move(ev));
        }
        RunBatch batch;
        batch.format = std::string(id());
        batch.format_detail = "rocprofv3 kernel trace";
        if (builder.kernel_events() == 0) batch.notes.push_back("no kernel dispatches in this trace");
        builder.finish(batch);
        for (Entity& ent : batch.entities) {
            if (ent.kind != EntityKind::kernel) continue;
            for (const auto& [k, v] : config[ent.name])
                ent.set(plain(k, v, k == "shared_mem_per_block" ? "byte" : "count", k));
        }
        return batch;
    }
};

// rocprof v1 results.json: a Chrome trace whose processes are named "CPU HIP API", "COPY",
// "GPU<n>" and "GPU Barriers<n>", with times as strings of microseconds.
class JsonCollector final : public Collector {
public:
    std::string_view id() const override { return "rocprof-json"; }
    std::string_view description() const override {
        return "rocprof v1 results.json (Chrome trace with HIP API, COPY and GPU processes, string times)";
    }

    bool recognizes(std::string_view head) const override {
        return head.find("\"traceEvents\"") != std::string_view::npos &&
               (head.find("\"CPU HIP API\"") != std::string_view::npos ||
                head.find("\"GPU Barriers") != std::string_view::npos);
    }

    Result<RunBatch> collect(const std::string& path, std::string_view content) const override {
        std::map<std::string, std::string> process;  // pid -> name
        struct Pending {
            std::string pid;
            TimelineEvent ev;
            double begin_ns = -1, end_ns = -1;  // args.BeginNs/EndNs
        };
        std::vector<Pending> pending;
        std::map<std::string, std::vector<double>> api;
        auto note = read_trace(path, content, [&](const TraceEvent& t) {
            if (t.ph == "M") {
                if (t.name == "process_name") process[t.pid] = std::string(t.label);
                return;
            }
            TimelineEvent ev;
            ev.name = std::string(t.name);
            ev.start_ns = t.ts * 1000;
            ev.end_ns = (t.ts + t.dur) * 1000;
            ev.queue = t.tid;
            pending.push_back({t.pid, std::move(ev), t.begin_ns, t.end_ns});
        });
        if (!note) return std::unexpected(note.error());
        // `ts` and `dur` are whole microseconds; args.BeginNs/EndNs hold the nanoseconds. They are
        // used when every event has them (one clock for the whole timeline).
        const bool in_ns = !pending.empty() && std::all_of(pending.begin(), pending.end(), [](const Pending& p) {
            return p.begin_ns >= 0 && p.end_ns >= p.begin_ns;
        });
        if (in_ns)
            for (Pending& p : pending) {
                p.ev.start_ns = p.begin_ns;
                p.ev.end_ns = p.end_ns;
            }
        TimelineBuilder builder(TimelineOptions{false, true});
        std::size_t kernels = 0;
        std::sort(pending.begin(), pending.end(),
                  [](const Pending& a, const Pending& b) { return a.ev.start_ns < b.ev.start_ns; });
        // The COPY lane is the copy engines, not a device: with one GPU its copies are that GPU's
        // work (in its busy and idle time); with several they are on no device (memory entities
        // and memory time only), never a device of their own for idle rules.
        std::set<std::string> gpus;
        for (const auto& [pid, name] : process)
            if (name.starts_with("GPU") && !name.starts_with("GPU Barriers")) gpus.insert("GPU " + name.substr(3));
        const std::string copy_device = gpus.size() == 1 ? *gpus.begin() : std::string();
        for (Pending& p : pending) {
            const std::string& proc = process[p.pid];
            if (proc.starts_with("GPU Barriers")) continue;  // barrier packets, not kernels
            if (proc.starts_with("GPU")) {
                p.ev.kind = TimelineEvent::Kind::kernel;
                p.ev.device = "GPU " + proc.substr(3);
                ++kernels;
            } else if (proc == "COPY") {
                p.ev.kind = TimelineEvent::Kind::memory;
                p.ev.device = copy_device;
            } else {
                api[p.ev.name].push_back(p.ev.end_ns - p.ev.start_ns);
                continue;
            }
            builder.add(std::move(p.ev));
        }
        RunBatch batch;
        batch.format = std::string(id());
        batch.format_detail = in_ns ? "rocprof v1 Chrome trace (times from args.BeginNs/EndNs)" : "rocprof v1 Chrome trace";
        if (!note->empty()) batch.notes.push_back(*note);
        if (kernels == 0) batch.notes.push_back("no GPU kernel events in this trace");
        builder.finish(batch);
        for (auto& [name, durations] : api) {
            Entity e;
            e.kind = EntityKind::api_call;
            e.name = name;
            if (is_hip_sync_call(name)) e.attributes["synchronizing"] = "true";
            e.parent = static_cast<std::int64_t>(batch.run_entity());
            set_duration_metrics(e, duration_stats(std::move(durations)), "count");
            batch.entities.push_back(std::move(e));
        }
        return batch;
    }
};

}  // namespace

const Collector& rocprof_trace_csv_collector() {
    static const TraceCsvCollector k_instance;
    return k_instance;
}

const Collector& rocprof_json_collector() {
    static const JsonCollector k_instance;
    return k_instance;
}

const Collector& rocprof_stats_collector() {
    static const StatsCollector k_instance;
    return k_instance;
}

const Collector& rocprof_sqlite_collector() {
    static const SqliteCollector k_instance;
    return k_instance;
}

}  // namespace perfwatch
