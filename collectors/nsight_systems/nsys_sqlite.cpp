#include "collectors/nsight_systems/nsys_sqlite.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <map>
#include <set>
#include <unordered_map>

#include "collectors/nsight_systems/nsys_common.hpp"
#include "collectors/nsight_systems/nsys_unified_memory.hpp"
#include "collectors/launch_shape.hpp"
#include "collectors/readers/idle_causes.hpp"
#include "collectors/readers/sqlite_schema.hpp"
#include "collectors/readers/sync_idle.hpp"
#include "collectors/readers/timeline.hpp"
#include "collectors/readers/units.hpp"
#include "collectors/readers/waiting_map.hpp"

namespace perfwatch {

namespace {

// These queries read an nsys export, a foreign schema; perfwatch's own database SQL lives in storage/.

constexpr std::string_view k_sqlite_magic{"SQLite format 3\0", 16};

// CUDA_MEMOPR_MEMORY_KIND values (ENUM_CUDA_MEM_KIND from 2022.4 on).
std::string_view memory_kind_name(long long kind) {
    static constexpr std::array<std::string_view, 8> k_names{"pageable", "pinned", "device", "array",
                                                             "managed",  "device static", "managed static",
                                                             "unknown"};
    return kind >= 0 && kind < static_cast<long long>(k_names.size()) ? k_names[static_cast<std::size_t>(kind)]
                                                                        : "unknown";
}

// A statement stepped through SQLite's C API, for the loops over every row of the big tables
// (SQLiteCpp makes a Column, holding a shared pointer, for each value read). Errors throw
// SQLite::Exception, as SQLiteCpp's own statements do.
class RawRows {
public:
    RawRows(SQLite::Database& db, const std::string& sql) {
        sqlite3_stmt* st = nullptr;
        if (const int rc = sqlite3_prepare_v2(db.getHandle(), sql.c_str(), -1, &st, nullptr); rc != SQLITE_OK)
            throw SQLite::Exception(db.getHandle(), rc);
        m_st.reset(st);
    }
    // The next row; false after the last.
    bool step() {
        const int rc = sqlite3_step(m_st.get());
        if (rc == SQLITE_ROW) return true;
        if (rc == SQLITE_DONE) return false;
        throw SQLite::Exception(sqlite3_db_handle(m_st.get()), rc);
    }
    long long int64(int column) const { return sqlite3_column_int64(m_st.get(), column); }
    double real(int column) const { return sqlite3_column_double(m_st.get(), column); }
    bool null(int column) const { return sqlite3_column_type(m_st.get(), column) == SQLITE_NULL; }

private:
    std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> m_st{nullptr, &sqlite3_finalize};
};

class Export {
public:
    explicit Export(const std::string& path)
        : m_path(path), m_db(path, SQLite::OPEN_READONLY | SQLite::OPEN_NOMUTEX), m_tables(sqlite_tables(m_db)) {}

    bool has(const std::string& table) const { return m_tables.contains(table); }

    std::set<std::string> columns(const std::string& table) { return sqlite_columns(m_db, table); }

    // The columns of `table` for a SELECT (sqlite_select_list: nsys exports of different versions
    // have different columns; the reader asks, never assumes).
    Result<std::string> select_list(const std::string& table, std::initializer_list<std::string_view> required,
                                    std::initializer_list<std::string_view> optional = {}) {
        return sqlite_select_list(m_db, m_path, "the nsys export", table, required, optional);
    }

    SQLite::Database& db() { return m_db; }
    const std::string& path() const { return m_path; }

private:
    std::string m_path;
    SQLite::Database m_db;
    std::set<std::string> m_tables;
};

// The start of the runtime call that launched a kernel, by correlation ID, without joining the
// two tables (an automatic index over every runtime row): CUPTI numbers calls in order and both
// tables are written roughly in that order, so the runtime rows are read alongside the kernels,
// keeping those read ahead in a bounded map. A kernel whose call was read long before (dropped)
// or never comes gets no latency.
class LaunchMatcher {
public:
    LaunchMatcher(SQLite::Database& db, bool enabled) {
        if (enabled)
            m_runtime.emplace(db, "SELECT correlationId, start, end FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                                  "WHERE correlationId IS NOT NULL");
    }

    // The start and end of the runtime call with `correlation`.
    std::optional<std::pair<double, double>> launch_call(long long correlation) {
        if (auto call = m_waiting.take(correlation)) return call;
        // Read ahead until this call, or past it.
        while (m_runtime && m_last_read <= correlation) {
            if (!m_runtime->step()) {
                m_runtime.reset();
                break;
            }
            const long long id = m_runtime->int64(0);
            const std::pair<double, double> call{m_runtime->real(1), m_runtime->real(2)};
            m_last_read = std::max(m_last_read, id);
            if (id == correlation) return call;
            m_waiting.put(id, call);
        }
        return std::nullopt;
    }

private:
    std::optional<RawRows> m_runtime;
    long long m_last_read = std::numeric_limits<long long>::min();
    WaitingMap<std::pair<double, double>> m_waiting;  // runtime calls read ahead
};

// Kernels, copies and sets kept for the idle causes; past this many, none are told.
constexpr std::size_t k_max_idle_ops = 1 << 20;

// The SM (GPC) clock while the GPU worked, from Nsight Systems' GPU metrics sampling
// (--gpu-metrics-devices): the mean of the "GPC Clock Frequency" samples taken when "GR Active"
// of the same GPU was above zero (an idle GPU drops its clock). Values above 1e5 are Hz (some
// versions store Hz under the [MHz] name), others MHz. nullopt without both metrics.
std::optional<double> busy_gpc_clock_hz(Export& ex) {
    if (!ex.has("GPU_METRICS") || !ex.has("TARGET_INFO_GPU_METRICS")) return std::nullopt;
    const auto samples = ex.columns("GPU_METRICS"), names = ex.columns("TARGET_INFO_GPU_METRICS");
    for (const char* c : {"typeId", "metricId", "timestamp", "value"})
        if (!samples.contains(c)) return std::nullopt;
    for (const char* c : {"typeId", "metricId", "metricName"})
        if (!names.contains(c)) return std::nullopt;
    SQLite::Statement st(
        ex.db(),
        "SELECT avg(CASE WHEN c.value > 100000 THEN c.value ELSE c.value * 1e6 END), count(*) "
        "FROM GPU_METRICS c "
        "JOIN TARGET_INFO_GPU_METRICS cn ON cn.typeId = c.typeId AND cn.metricId = c.metricId "
        "JOIN GPU_METRICS a ON a.typeId = c.typeId AND a.timestamp = c.timestamp "
        "JOIN TARGET_INFO_GPU_METRICS an ON an.typeId = a.typeId AND an.metricId = a.metricId "
        "WHERE cn.metricName LIKE 'GPC Clock Frequency%' AND an.metricName LIKE 'GR Active%' AND a.value > 0");
    if (!st.executeStep() || st.getColumn(1).getInt64() == 0 || st.getColumn(0).isNull()) return std::nullopt;
    return st.getColumn(0).getDouble();
}

class NsysSqliteCollector final : public Collector {
public:
    std::string_view id() const override { return "nsys-sqlite"; }
    std::string_view description() const override {
        return "Nsight Systems SQLite export (nsys export --type sqlite), schemas 2021-2025";
    }

    CollectorInput input() const override { return CollectorInput::path; }
    bool recognizes(std::string_view head) const override { return head.starts_with(k_sqlite_magic); }

    Result<RunBatch> collect(const std::string& path, std::string_view) const override {
        try {
            Export ex(path);
            if (!ex.has("StringIds") || (!ex.has("TARGET_INFO_GPU") && !ex.has("TARGET_INFO_SESSION_START_TIME") &&
                                         !ex.has("CUPTI_ACTIVITY_KIND_KERNEL")))
                return fail(path, 0,
                            "SQLite database is not an Nsight Systems export (expected the StringIds table and "
                            "TARGET_INFO_* or CUPTI_ACTIVITY_KIND_* tables)");
            if (auto strings = ex.select_list("StringIds", {"id", "value"}); !strings)
                return std::unexpected(strings.error());
            return read(ex);
        } catch (const SQLite::Exception& e) {
            return fail(path, 0, fmt::format("cannot read the SQLite export: {}", e.what()));
        }
    }

private:
    Result<RunBatch> read(Export& ex) const {
        RunBatch batch;
        batch.format = std::string(id());
        for (const char* meta : {"META_DATA_EXPORT", "EXPORT_META_DATA"}) {
            if (!ex.has(meta) || !ex.select_list(meta, {"name", "value"})) continue;
            SQLite::Statement st(ex.db(), fmt::format("SELECT name, value FROM {}", meta));
            while (st.executeStep()) {
                const std::string name = st.getColumn(0).getString();
                const std::string value = st.getColumn(1).isNull() ? "" : st.getColumn(1).getString();
                if (name == "EXPORT_PRODUCT_VERSION") batch.tool_version = value;
                if (name == "EXPORT_SCHEMA_VERSION") batch.format_detail = "export schema " + value;
            }
        }
        if (batch.format_detail.empty()) batch.format_detail = "export without metadata table (2021 or older)";

        const std::size_t run_index = batch.run_entity();
        std::map<long long, std::string> device_names;
        std::vector<Entity> device_info;
        if (ex.has("TARGET_INFO_GPU")) {
            // The device's number is `id` from 2021 on, `deviceId` in older exports (whose table
            // holds only vmId, deviceId, name, busLocation and isDiscrete).
            const auto cols = ex.columns("TARGET_INFO_GPU");
            auto list = ex.select_list("TARGET_INFO_GPU", {cols.contains("id") ? "id" : "deviceId"},
                                       {"name", "computeMajor", "computeMinor", "smCount", "maxWarpsPerSm"});
            if (!list) return std::unexpected(list.error());
            SQLite::Statement st(ex.db(), fmt::format("SELECT {} FROM TARGET_INFO_GPU", *list));
            while (st.executeStep()) {
                Entity dev;
                dev.kind = EntityKind::device;
                const long long id = st.getColumn(0).getInt64();
                dev.name = fmt::format("device {}", id);
                if (!st.getColumn(1).isNull()) dev.attributes["gpu"] = std::string(trim(st.getColumn(1).getString()));
                if (!st.getColumn(2).isNull() && !st.getColumn(3).isNull())
                    dev.attributes["cc"] = fmt::format("{}.{}", st.getColumn(2).getInt(), st.getColumn(3).getInt());
                if (!st.getColumn(4).isNull()) dev.set(plain("sm_count", st.getColumn(4).getDouble(), "count", "smCount"));
                if (!st.getColumn(5).isNull())
                    dev.set(plain("max_warps_per_sm", st.getColumn(5).getDouble(), "count", "maxWarpsPerSm"));
                device_names[id] = dev.name;
                device_info.push_back(std::move(dev));
            }
        }

        auto device_name = [&](long long id) -> const std::string& {
            auto it = device_names.find(id);
            if (it == device_names.end()) it = device_names.emplace(id, fmt::format("device {}", id)).first;
            return it->second;
        };
        // Rows stream into the timeline (bounded memory, whatever the number of kernels).
        TimelineBuilder timeline(TimelineOptions{false});
        // Per kernel name (by string ID): launch configuration of its longest launch, launch latency.
        struct KernelExtra {
            std::string name;
            double longest = -1;
            double grid = 0, block = 0, registers = 0, static_smem = 0, dynamic_smem = 0;
            std::string grid_text, block_text, short_name;
            double latency_count = 0, latency_sum = 0, latency_max = 0;
            GridTimes grids;  // time per grid size, for kernels whose launches differ in grid
        };
        std::unordered_map<long long, KernelExtra> extras;
        double latency_count = 0, latency_sum = 0, latency_max = 0;
        std::size_t kernel_rows = 0;
        // Synchronizing calls first, so that each device operation read below tells how much of
        // their wait the GPU spent busy (a synchronize behind busy work costs nothing).
        // One pass over the runtime calls gives both: the calls per name (count, total, shortest,
        // longest, for the API entities below) and the synchronizing calls.
        SyncIdle sync_idle;
        // Kernels, copies and sets with the end of the call that issued each, for the idle causes.
        std::vector<DeviceOp> device_ops;
        bool ops_unkept = false;
        auto keep_op = [&](const DeviceOp& op) {
            if (device_ops.size() < k_max_idle_ops) device_ops.push_back(op);
            else ops_unkept = true;
        };
        struct ApiCalls {
            std::string raw;   // the name as the export has it
            std::string sync;  // api_name of a synchronizing call; empty for the others
            long long count = 0, total = 0, shortest = 0, longest = 0;
            double first_start = 0, first_length = 0;  // the earliest call
        };
        constexpr std::size_t k_unnamed = static_cast<std::size_t>(-1);
        std::vector<ApiCalls> api;                          // names in the order first called
        std::unordered_map<long long, std::size_t> api_of;  // string ID -> index in api; k_unnamed without a name
        if (ex.has("CUPTI_ACTIVITY_KIND_RUNTIME")) {
            SQLite::Statement name_of(ex.db(), "SELECT value FROM StringIds WHERE id = ?");
            auto list = ex.select_list("CUPTI_ACTIVITY_KIND_RUNTIME", {"nameId", "start", "end"});
            if (!list) return std::unexpected(list.error());
            RawRows calls(ex.db(), fmt::format("SELECT {} FROM CUPTI_ACTIVITY_KIND_RUNTIME", *list));
            while (calls.step()) {
                if (calls.null(0)) continue;
                const long long id = calls.int64(0);
                auto [it, fresh] = api_of.try_emplace(id, k_unnamed);
                if (fresh) {
                    name_of.reset();
                    name_of.bind(1, static_cast<int64_t>(id));
                    if (name_of.executeStep() && !name_of.getColumn(0).isNull()) {
                        it->second = api.size();
                        std::string raw = name_of.getColumn(0).getString();
                        std::string sync = is_sync_call(raw) ? api_name(raw) : std::string();
                        api.push_back(ApiCalls{std::move(raw), std::move(sync), 0, 0, 0, 0});
                    }
                }
                if (it->second == k_unnamed) continue;
                ApiCalls& a = api[it->second];
                const long long start = calls.int64(1), end = calls.int64(2);
                const long long d = end - start;
                a.shortest = a.count == 0 ? d : std::min(a.shortest, d);
                a.longest = a.count == 0 ? d : std::max(a.longest, d);
                a.total += d;
                if (a.count == 0 || static_cast<double>(start) < a.first_start) {
                    a.first_start = static_cast<double>(start);
                    a.first_length = static_cast<double>(d);
                }
                ++a.count;
                if (!a.sync.empty()) sync_idle.add_call(static_cast<double>(start), static_cast<double>(end), a.sync);
            }
            // Most time first.
            std::stable_sort(api.begin(), api.end(), [](const ApiCalls& x, const ApiCalls& y) { return x.total > y.total; });
        }
        sync_idle.calls_done();
        if (ex.has("CUPTI_ACTIVITY_KIND_KERNEL")) {
            const auto cols = ex.columns("CUPTI_ACTIVITY_KIND_KERNEL");
            const bool demangled = cols.contains("demangledName");
            const std::string name_col = demangled ? "demangledName" : "shortName";
            const bool latency = ex.has("CUPTI_ACTIVITY_KIND_RUNTIME") && cols.contains("correlationId") &&
                                 ex.columns("CUPTI_ACTIVITY_KIND_RUNTIME").contains("correlationId");
            auto list = ex.select_list("CUPTI_ACTIVITY_KIND_KERNEL", {"start", "end", "deviceId", name_col},
                                       {"shortName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
                                        "registersPerThread", "staticSharedMemory", "dynamicSharedMemory", "streamId"});
            if (!list) return std::unexpected(list.error());
            // Names are looked up once per kernel name, not joined to every row.
            SQLite::Statement name_of(ex.db(), "SELECT value FROM StringIds WHERE id = ?");
            auto string_id = [&](long long id) -> std::optional<std::string> {
                name_of.reset();
                name_of.bind(1, static_cast<int64_t>(id));
                if (!name_of.executeStep() || name_of.getColumn(0).isNull()) return std::nullopt;
                return name_of.getColumn(0).getString();
            };
            LaunchMatcher launches(ex.db(), latency);
            RawRows st(ex.db(), fmt::format("SELECT {}, {} FROM CUPTI_ACTIVITY_KIND_KERNEL", *list,
                                            latency ? "correlationId" : "NULL"));
            while (st.step()) {
                ++kernel_rows;
                const double start = st.real(0), end = st.real(1);
                const std::string& device = device_name(st.int64(2));
                auto [xit, fresh] = extras.try_emplace(st.int64(3));
                KernelExtra& x = xit->second;
                if (fresh) {
                    auto name = string_id(xit->first);
                    if (!name)
                        return fail(ex.path(), 0, fmt::format("kernel name {} is not in the StringIds table", xit->first));
                    x.name = std::move(*name);
                }
                timeline.add(TimelineEvent::Kind::kernel, x.name, device, start, end);
                sync_idle.add_busy(start, end);
                const double duration = end - start;
                x.grids.add(st.real(5) * st.real(6) * st.real(7), duration);
                if (duration > x.longest) {
                    x.longest = duration;
                    const double gx = st.real(5), gy = st.real(6),
                                 gz = st.real(7);
                    const double bx = st.real(8), by = st.real(9),
                                 bz = st.real(10);
                    x.grid = gx * gy * gz;
                    x.block = bx * by * bz;
                    x.grid_text = fmt::format("{}x{}x{}", gx, gy, gz);
                    x.block_text = fmt::format("{}x{}x{}", bx, by, bz);
                    x.registers = st.real(11);
                    x.static_smem = st.real(12);
                    x.dynamic_smem = st.real(13);
                    if (!st.null(4)) x.short_name = string_id(st.int64(4)).value_or("");
                }
                DeviceOp op{start, end, -std::numeric_limits<double>::infinity(), static_cast<std::uint32_t>(st.int64(2)),
                            st.null(14) ? 0u : static_cast<std::uint32_t>(st.int64(14)), 0, false};
                const auto launched = st.null(15) ? std::nullopt : launches.launch_call(st.int64(15));
                if (launched) op.issued = launched->second;
                keep_op(op);
                if (launched) {
                    const double lat = start - launched->first;
                    x.latency_count += 1;
                    x.latency_sum += lat;
                    x.latency_max = x.latency_count == 1 ? lat : std::max(x.latency_max, lat);
                    latency_count += 1;
                    latency_sum += lat;
                    latency_max = latency_count == 1 ? lat : std::max(latency_max, lat);
                }
            }
        }
        std::unordered_map<std::string, const KernelExtra*> extra_of;
        for (const auto& [name_id, x] : extras) extra_of[x.name] = &x;

        // Memory copies and sets, per direction and host memory kind: the timeline counts and times
        // them; bytes and what the name stands for are kept here.
        struct MemGroup {
            double count = 0, bytes = 0, time = 0;
            std::string direction, host_memory;
            bool unified = false;  // managed-memory migrations: the driver's, not copies the program issued
        };
        std::map<std::string, MemGroup> mem;
        bool unified_copies = false;  // managed-memory migrations among the copies
        // A copy or set: columns 0-2 start, end, device; `stream` and `correlation` its columns.
        auto memory_event = [&](const std::string& name, const SQLite::Statement& st, int stream, int correlation,
                                LaunchMatcher& calls) {
            const double start = st.getColumn(0).getDouble(), end = st.getColumn(1).getDouble();
            timeline.add(TimelineEvent::Kind::memory, name, device_name(st.getColumn(2).getInt64()), start, end);
            sync_idle.add_busy(start, end);
            DeviceOp op{start, end, -std::numeric_limits<double>::infinity(),
                        static_cast<std::uint32_t>(st.getColumn(2).getInt64()),
                        st.getColumn(stream).isNull() ? 0u : static_cast<std::uint32_t>(st.getColumn(stream).getInt64()), 0,
                        true};
            if (!st.getColumn(correlation).isNull())
                if (const auto call = calls.launch_call(st.getColumn(correlation).getInt64())) op.issued = call->second;
            keep_op(op);
        };
        const bool runtime_correlated = ex.has("CUPTI_ACTIVITY_KIND_RUNTIME") &&
                                        ex.columns("CUPTI_ACTIVITY_KIND_RUNTIME").contains("correlationId");
        if (ex.has("CUPTI_ACTIVITY_KIND_MEMCPY")) {
            const auto cols = ex.columns("CUPTI_ACTIVITY_KIND_MEMCPY");
            const bool kinds = cols.contains("srcKind") && cols.contains("dstKind");
            auto list = ex.select_list("CUPTI_ACTIVITY_KIND_MEMCPY", {"start", "end", "deviceId"}, {"streamId"});
            auto sizes = ex.select_list("CUPTI_ACTIVITY_KIND_MEMCPY", {"bytes", "copyKind"});
            if (!list || !sizes) return std::unexpected(list ? sizes.error() : list.error());
            const bool correlated = runtime_correlated && cols.contains("correlationId");
            LaunchMatcher copy_calls(ex.db(), correlated);
            SQLite::Statement st(ex.db(), fmt::format("SELECT {}, {}, {}, {} FROM CUPTI_ACTIVITY_KIND_MEMCPY", *list, *sizes,
                                                      kinds ? "srcKind, dstKind" : "NULL, NULL",
                                                      correlated ? "correlationId" : "NULL"));
            while (st.executeStep()) {
                const long long copy_kind = st.getColumn(5).getInt64();
                unified_copies = unified_copies || is_unified_copy(copy_kind);
                std::string host;
                // The host side of a copy: the source for HtoD, the destination for DtoH.
                if (!st.getColumn(6).isNull()) {
                    const long long src = st.getColumn(6).getInt64(), dst = st.getColumn(7).getInt64();
                    if (copy_kind == 1 || copy_kind == 3 || copy_kind == 9) host = memory_kind_name(src);
                    else if (copy_kind == 2 || copy_kind == 4) host = memory_kind_name(dst);
                }
                std::string name = fmt::format("[CUDA memcpy {}]", copy_kind_name(copy_kind));
                if (!host.empty()) name += fmt::format(" ({})", host);
                MemGroup& g = mem[name];
                g.count += 1;
                g.bytes += st.getColumn(4).getDouble();
                g.time += st.getColumn(1).getDouble() - st.getColumn(0).getDouble();
                g.direction = std::string(copy_kind_name(copy_kind));
                g.host_memory = host;
                g.unified = is_unified_copy(copy_kind);
                memory_event(name, st, 3, 8, copy_calls);
            }
        }
        if (ex.has("CUPTI_ACTIVITY_KIND_MEMSET")) {
            auto list = ex.select_list("CUPTI_ACTIVITY_KIND_MEMSET", {"start", "end", "deviceId", "bytes"},
                                       {"streamId", "correlationId"});
            if (!list) return std::unexpected(list.error());
            LaunchMatcher set_calls(ex.db(), runtime_correlated);
            SQLite::Statement st(ex.db(), fmt::format("SELECT {} FROM CUPTI_ACTIVITY_KIND_MEMSET", *list));
            while (st.executeStep()) {
                MemGroup& g = mem["[CUDA memset]"];
                g.count += 1;
                g.bytes += st.getColumn(3).getDouble();
                g.direction = "memset";
                memory_event("[CUDA memset]", st, 4, 5, set_calls);
            }
        }
        // Migrations matched to the kernels they ran inside: a second, sorted pass, only where the
        // copies held some.
        UnifiedMemory um;
        if (kernel_rows > 0 && unified_copies) {
            const bool demangled = ex.columns("CUPTI_ACTIVITY_KIND_KERNEL").contains("demangledName");
            auto read = read_unified_memory(ex.db(), ex.path(), demangled ? "demangledName" : "shortName");
            if (!read) return std::unexpected(read.error());
            um = std::move(*read);
        }
        std::unordered_map<std::string, KernelMigrations> migrations_of;
        for (const auto& [name_id, k] : um.by_kernel)
            if (auto x = extras.find(name_id); x != extras.end()) migrations_of[x->second.name] = k;

        if (kernel_rows == 0) {
            // What the capture holds instead: copies, host calls only (API-only), or nothing at all.
            long long calls = 0, copies = 0;
            for (const ApiCalls& a : api) calls += a.count;
            for (const auto& [name, g] : mem) copies += static_cast<long long>(g.count);
            const std::string why = ex.has("CUPTI_ACTIVITY_KIND_KERNEL") ? "the export's kernel table is empty"
                                                                         : "no CUPTI_ACTIVITY_KIND_KERNEL table";
            if (copies > 0)
                batch.notes.push_back(fmt::format("no CUDA kernel data in this capture ({}): {} memory operations only", why, copies));
            else if (calls > 0)
                batch.notes.push_back(fmt::format("API-only capture: {} CUDA API calls read as host calls; no GPU activity "
                                                  "recorded (no CUDA kernel data: {}, no copies)",
                                                  calls, why));
            else
                batch.notes.push_back(fmt::format("no GPU activity recorded: no CUDA kernel data in this capture ({}) and "
                                                  "no CUDA API calls",
                                                  why));
        }
        timeline.finish(batch);

        // Attach GPU facts to the device entities the timeline made (or add devices it did not see).
        for (Entity& info : device_info) {
            auto it = std::find_if(batch.entities.begin(), batch.entities.end(), [&](const Entity& e) {
                return e.kind == EntityKind::device && e.name == info.name;
            });
            if (it == batch.entities.end()) {
                info.parent = static_cast<std::int64_t>(run_index);
                batch.entities.push_back(std::move(info));
                continue;
            }
            for (auto& [k, v] : info.attributes) it->attributes[k] = v;
            for (Metric& m : info.metrics) it->set(std::move(m));
        }

        std::map<std::string, double> sm_counts;
        std::map<std::string, std::string> cc_of;
        for (const Entity& e : batch.entities)
            if (e.kind == EntityKind::device) {
                if (auto sm = e.value("sm_count")) sm_counts[e.name] = *sm;
                if (auto cc = e.attributes.find("cc"); cc != e.attributes.end()) cc_of[e.name] = cc->second;
            }
        for (Entity& e : batch.entities) {
            if (e.kind == EntityKind::kernel) {
                // A kernel on one device carries that device's SM count, for grid-size rules.
                if (auto d = e.attributes.find("device"); d != e.attributes.end()) {
                    const std::string device = d->second;  // adding "cc" below moves the attributes
                    if (auto sm = sm_counts.find(device); sm != sm_counts.end())
                        e.set(plain("sm_count", sm->second, "count", "smCount"));
                    if (auto cc = cc_of.find(device); cc != cc_of.end()) e.attributes["cc"] = cc->second;
                }
                auto it = extra_of.find(e.name);
                if (it == extra_of.end()) continue;
                const KernelExtra& x = *it->second;
                e.set(plain("grid_size", x.grid, "count", "gridX*gridY*gridZ"));
                e.set(plain("block_size", x.block, "count", "blockX*blockY*blockZ"));
                e.set(plain("registers_per_thread", x.registers, "count", "registersPerThread"));
                e.set(plain("shared_mem_static_per_block", x.static_smem, "byte", "staticSharedMemory", "B"));
                e.set(plain("shared_mem_dynamic_per_block", x.dynamic_smem, "byte", "dynamicSharedMemory", "B"));
                e.attributes["grid"] = x.grid_text;
                e.attributes["block"] = x.block_text;
                if (const auto sm = e.value("sm_count")) x.grids.set_metrics(e, *sm);
                if (!x.short_name.empty()) e.attributes["short_name"] = x.short_name;
                if (x.latency_count > 0) {
                    e.set(plain("launch_latency_mean", x.latency_sum / x.latency_count, "ns"));
                    e.set(plain("launch_latency_max", x.latency_max, "ns"));
                }
                if (auto m = migrations_of.find(e.name); m != migrations_of.end()) {
                    e.set(plain("um_migrations_during", m->second.count, "count"));
                    e.set(plain("um_migration_time_during", m->second.time, "ns"));
                    e.set(plain("um_bytes_during", m->second.bytes, "byte"));
                    e.set(plain("um_fault_migrations_during", m->second.faults, "count"));
                }
            } else if (e.kind == EntityKind::memcpy) {
                auto it = mem.find(e.name);
                if (it == mem.end()) continue;
                e.set(plain("bytes", it->second.bytes, "byte", "bytes", "B"));
                if (auto t = e.value("duration_total"); t && *t > 0)
                    e.set(plain("bandwidth", it->second.bytes * 1e9 / *t, "byte/s"));
                e.attributes["direction"] = it->second.direction;
                if (!it->second.host_memory.empty()) e.attributes["host_memory"] = it->second.host_memory;
            }
        }

        // CUDA runtime and driver API calls per name.
        double sync_time = 0, sync_calls = 0, api_calls = 0;
        const std::map<std::string, double> idle_during = sync_idle.idle_by_name();
        for (const ApiCalls& calls : api) {
            Entity e;
            e.kind = EntityKind::api_call;
            const std::string& raw = calls.raw;
            e.name = api_name(raw);
            e.parent = static_cast<std::int64_t>(run_index);
            const auto count = static_cast<double>(calls.count), total = static_cast<double>(calls.total);
            set_aggregate_metrics(e, "count", count, total, static_cast<double>(calls.shortest),
                                  static_cast<double>(calls.longest));
            if (raw != e.name) e.attributes["tool_name"] = raw;
            api_calls += count;
            if (!calls.sync.empty()) {
                e.attributes["synchronizing"] = "true";
                if (auto idle = idle_during.find(e.name); idle != idle_during.end() && total > 0) {
                    e.set(plain("gpu_idle_during", idle->second, "ns"));
                    e.set(plain("gpu_idle_during_pct", 100.0 * idle->second / total, "percent"));
                }
                sync_time += total;
                sync_calls += count;
            }
            batch.entities.push_back(std::move(e));
        }

        // NVTX ranges (push/pop 59, start/end 60) per text.
        const auto nvtx_cols = ex.has("NVTX_EVENTS") ? ex.columns("NVTX_EVENTS") : std::set<std::string>();
        if (nvtx_cols.contains("text") && nvtx_cols.contains("eventType") && nvtx_cols.contains("start") &&
            nvtx_cols.contains("end")) {
            const bool text_id = nvtx_cols.contains("textId");
            SQLite::Statement st(
                ex.db(), fmt::format("SELECT {} AS label, count(*), sum(e.end - e.start), min(e.end - e.start), "
                                     "max(e.end - e.start) FROM NVTX_EVENTS e {} WHERE e.eventType IN (59, 60) AND "
                                     "e.end IS NOT NULL GROUP BY label",
                                     text_id ? "coalesce(e.text, s.value)" : "e.text",
                                     text_id ? "LEFT JOIN StringIds s ON s.id = e.textId" : ""));
            while (st.executeStep()) {
                if (st.getColumn(0).isNull()) continue;
                Entity e;
                e.kind = EntityKind::nvtx_range;
                e.name = st.getColumn(0).getString();
                e.parent = static_cast<std::int64_t>(run_index);
                set_aggregate_metrics(e, "count", st.getColumn(1).getDouble(), st.getColumn(2).getDouble(),
                                      st.getColumn(3).getDouble(), st.getColumn(4).getDouble());
                batch.entities.push_back(std::move(e));
            }
        }

        Entity& run = batch.entities[run_index];
        if (api_calls > 0) {
            run.set(plain("api_calls", api_calls, "count"));
            run.set(plain("sync_api_calls", sync_calls, "count"));
            run.set(plain("sync_api_time", sync_time, "ns"));
        }
        if (const auto clock = busy_gpc_clock_hz(ex))
            run.set(plain("sm_frequency", *clock, "hz", "GPC Clock Frequency (GPU metrics, while GR Active)"));
        if (latency_count > 0) {
            run.set(plain("launch_latency_mean", latency_sum / latency_count, "ns"));
            run.set(plain("launch_latency_max", latency_max, "ns"));
        }
        if (!device_ops.empty() && !ops_unkept) {
            double first_op = device_ops.front().start;
            for (const DeviceOp& op : device_ops) first_op = std::min(first_op, op.start);
            std::vector<Span> startup;
            const ApiCalls* longest = nullptr;
            for (const ApiCalls& calls : api) {
                if (calls.first_length < k_startup_call_ns) continue;
                const double later = calls.count > 1 ? (static_cast<double>(calls.total) - calls.first_length) /
                                                           static_cast<double>(calls.count - 1)
                                                     : 0;
                const bool once = calls.count > 1 ? calls.first_length >= 10 * later
                                                  : calls.first_start + calls.first_length <= first_op;
                if (!once) continue;
                startup.push_back({calls.first_start, calls.first_start + calls.first_length});
                // The start-up call to name: the longest one inside the GPU's timeline.
                if (calls.first_start + calls.first_length > first_op && (longest == nullptr || calls.first_length > longest->first_length))
                    longest = &calls;
            }
            const IdleCauses causes = idle_causes(device_ops, std::move(startup));
            if (set_idle_cause_metrics(run, causes) && longest != nullptr) {
                run.attributes["startup_call"] = api_name(longest->raw);
                run.set(plain("startup_call_time", longest->first_length, "ns"));
            }
        }
        if (um.any()) {
            run.set(plain("um_migrations", um.migrations, "count"));
            run.set(plain("um_bytes", um.bytes, "byte"));
            run.set(plain("um_fault_migrations", um.fault_migrations, "count"));
            run.set(plain("um_prefetch_migrations", um.prefetch_migrations, "count"));
            run.set(plain("um_host_fault_migrations", um.host_fault_migrations, "count"));
            run.set(plain("um_migrations_during", um.during_kernels, "count"));
            run.set(plain("um_migration_time_during", um.time_during_kernels, "ns"));
        }
        double memcpy_bytes = 0, pageable = 0, pageable_time = 0, unified_time = 0;
        for (const auto& [name, g] : mem) {
            if (g.unified) unified_time += g.time;
            else memcpy_bytes += g.bytes;  // migrations are um_bytes
            if (g.host_memory != "pageable") continue;
            pageable += g.count;
            pageable_time += g.time;
        }
        if (!mem.empty()) {
            run.set(plain("memcpy_bytes", memcpy_bytes, "byte"));
            run.set(plain("pageable_memcpy_count", pageable, "count"));
            run.set(plain("pageable_memcpy_time", pageable_time, "ns"));
        }
        if (unified_time > 0) run.set(plain("um_migration_time", unified_time, "ns"));
        return batch;
    }
};

}  // namespace

const Collector& nsys_sqlite_collector() {
    static const NsysSqliteCollector k_instance;
    return k_instance;
}

}  // namespace perfwatch
