// Differential tests of the trace readers' fast paths against a plain full parse, on every real
// trace of ../shared (the corpus's Kineto traces, the jobs, the crashers) and on traces generated
// from a seed that vary what real ones vary: the JSON scanner at every instruction-set level this
// CPU runs and on its thread against simdjson's DOM of the whole document; the flat args reader
// against simdjson; the launch maps against a plain hash map; the Kineto reader's hint and flat
// args path against its DOM path and against the same trace written compact or pretty-printed.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "collectors/collector.hpp"
#include "collectors/readers/dom_args.hpp"
#include "collectors/readers/flat_object.hpp"
#include "collectors/readers/json_stream.hpp"
#include "collectors/readers/json_stream_thread.hpp"
#include "collectors/readers/waiting_map.hpp"
#include "tests/collectors/chunked_source.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

using Ordered = nlohmann::ordered_json;

// What a scan handed out: each event's text and hints, each wanted member.
struct Scanned {
    std::vector<std::string> events;
    std::vector<std::array<std::string, 6>> hints;  // ph, cat, name, ts, dur, args
    std::vector<bool> ascii;
    std::vector<std::pair<std::string, std::string>> members;
};

bool wanted(std::string_view key) { return key == "schemaVersion" || key == "deviceProperties" || key == "distributedInfo"; }

template <typename Stream>
Result<Scanned> scan(Stream& stream) {
    Scanned s;
    auto r = stream.run(wanted,
                        [&](std::string_view key, std::string_view json) -> Result<void> {
                            s.members.emplace_back(key, json);
                            return {};
                        },
                        [&](std::string_view json, const JsonEventStream::Hints& h) -> Result<void> {
                            s.events.emplace_back(json);
                            s.hints.push_back({std::string(h.ph), std::string(h.cat), std::string(h.name),
                                               std::string(h.ts), std::string(h.dur), std::string(h.args)});
                            s.ascii.push_back(h.ascii);
                            return {};
                        });
    if (!r) return std::unexpected(r.error());
    return s;
}

// A trace's events in simdjson's DOM of the whole document.
struct Reference {
    simdjson::dom::parser parser;
    simdjson::padded_string text;
    simdjson::dom::array events;
    std::optional<simdjson::dom::object> top;
};

// Parses `text` whole; false when it is not a trace document (an array of events or an object
// with a "traceEvents" array).
bool parse_reference(const std::string& text, Reference& ref) {
    ref.text = simdjson::padded_string(text);
    simdjson::dom::element doc;
    if (ref.parser.parse(ref.text).get(doc)) return false;
    if (doc.is_array()) return !doc.get_array().get(ref.events);
    simdjson::dom::object top;
    if (doc.get_object().get(top)) return false;
    ref.top = top;
    return !top["traceEvents"].get_array().get(ref.events);
}

// `json` parsed by simdjson and written back compact (one parser for all: a parser per call
// allocates its buffers each time).
std::string minify(const std::string& json) {
    static simdjson::dom::parser parser;
    simdjson::dom::element e;
    if (parser.parse(json).get(e)) return "<not JSON: " + json.substr(0, 200) + ">";
    return simdjson::minify(e);
}

// The scanner at every level this CPU runs, in 4093-byte reads and (texts under 256 KB) in reads
// of 61 bytes (every buffer edge), and on its thread, hands out the events of the full parse in order, each with the
// hints the full parse gives: a hint given is the first member's value (a plain string's text, a
// number's text, an object's text); a member that is a plain string without escapes, a number or
// an object always gives one. `ascii` only for events without a byte above 0x7F.
void expect_scanners_agree(const std::string& text, const std::string& what) {
    Reference ref;
    ASSERT_TRUE(parse_reference(text, ref)) << what << ": not a trace document";
    const std::string path = "differential.json";
    std::optional<Scanned> first;
    std::vector<std::string> runs;
    // 61-byte reads only for texts under 256 KB (the larger traces take long enough in 4093).
    std::vector<std::size_t> chunks = {4093};
    if (text.size() < (256u << 10)) chunks.push_back(61);
    for (const ScanLevel level : usable_scan_levels())
        for (const std::size_t chunk : chunks) {
            const std::string run = fmt::format("{} in place, {}-byte reads", scan_level_name(level), chunk);
            ChunkedSource source(text, chunk);
            JsonEventStream stream(path, source, level);
            auto s = scan(stream);
            ASSERT_TRUE(s) << what << " " << run << ": " << s.error().to_string();
            if (!first) {
                first = std::move(*s);
                runs.push_back(run);
                continue;
            }
            ASSERT_EQ(s->events.size(), first->events.size()) << what << " " << run;
            for (std::size_t i = 0; i < s->events.size(); ++i) {
                ASSERT_EQ(s->events[i], first->events[i]) << what << " " << run << " event " << i;
                ASSERT_EQ(s->hints[i], first->hints[i]) << what << " " << run << " event " << i;
                ASSERT_EQ(s->ascii[i], first->ascii[i]) << what << " " << run << " event " << i;
            }
            EXPECT_EQ(s->members, first->members) << what << " " << run;
        }
    {
        ChunkedSource source(text, 4093);
        JsonEventStreamThread stream(path, source, 0);  // on its thread however small the input
        auto s = scan(stream);
        ASSERT_TRUE(s) << what << " threaded: " << s.error().to_string();
        ASSERT_EQ(s->events, first->events) << what << " threaded";
        ASSERT_EQ(s->hints, first->hints) << what << " threaded";
        EXPECT_EQ(s->ascii, first->ascii) << what << " threaded";
        EXPECT_EQ(s->members, first->members) << what << " threaded";
    }

    // Against the full parse.
    ASSERT_EQ(first->events.size(), ref.events.size()) << what;
    std::size_t i = 0;
    for (simdjson::dom::element e : ref.events) {
        const std::string at = fmt::format("{} event {}", what, i);
        const std::string want = simdjson::minify(e);
        ASSERT_EQ(minify(first->events[i]), want) << at;
        const auto& h = first->hints[i];
        const bool escapes = want.find('\\') != std::string::npos;
        simdjson::dom::object o;
        if (e.get_object().get(o)) {
            for (const auto& hint : h) EXPECT_EQ(hint, "") << at << ": hints of an event that is not an object";
            ++i;
            continue;
        }
        const char* keys[] = {"ph", "cat", "name"};
        for (std::size_t k = 0; k < 3; ++k) {
            std::string_view v;
            const bool is_string = !o[keys[k]].get_string().get(v);
            if (!h[k].empty()) EXPECT_TRUE(is_string && v == h[k]) << at << " " << keys[k] << " hint " << h[k];
            else if (is_string && !v.empty() && !escapes) ADD_FAILURE() << at << ": no " << keys[k] << " hint for " << v;
        }
        for (std::size_t k = 3; k < 5; ++k) {
            const char* key = k == 3 ? "ts" : "dur";
            simdjson::dom::element v;
            const bool has = !o[key].get(v);
            if (has && v.is_number()) {
                ASSERT_FALSE(h[k].empty()) << at << ": no " << key << " hint";
                EXPECT_EQ(std::strtod(h[k].c_str(), nullptr), double(v)) << at << " " << key;
            } else if (!h[k].empty()) {
                // A literal is handed over as a scalar, for the reader to refuse.
                EXPECT_TRUE(has && (v.is_bool() || v.is_null()) && h[k] == simdjson::minify(v)) << at << " " << key;
            }
        }
        simdjson::dom::object args;
        if (!o["args"].get_object().get(args)) {
            ASSERT_FALSE(h[5].empty()) << at << ": no args hint";
            EXPECT_EQ(minify(h[5]), simdjson::minify(args)) << at;
        } else {
            EXPECT_EQ(h[5], "") << at;
        }
        if (first->ascii[i])
            EXPECT_TRUE(std::none_of(first->events[i].begin(), first->events[i].end(),
                                     [](char c) { return static_cast<unsigned char>(c) > 0x7F; }))
                << at << ": ascii for an event with a byte above 0x7F";
        ++i;
    }
    if (ref.top) {
        std::vector<std::pair<std::string, std::string>> want;
        for (auto field : *ref.top)
            if (wanted(field.key)) want.emplace_back(field.key, simdjson::minify(field.value));
        ASSERT_EQ(first->members.size(), want.size()) << what;
        for (std::size_t m = 0; m < want.size(); ++m) {
            EXPECT_EQ(first->members[m].first, want[m].first) << what;
            EXPECT_EQ(minify(first->members[m].second), want[m].second) << what;
        }
    }
}

bool same_number(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// Every args object FlatObject accepts (as the scanner hands it over) reads as simdjson reads
// it: each of its keys, and the keys the readers ask for, as a number, a string and a product.
// Returns how many it accepted.
std::size_t expect_flat_args_agree(const std::string& text, const std::string& what) {
    ChunkedSource source(text, 1 << 16);
    JsonEventStream stream("differential.json", source);
    std::size_t accepted = 0;
    simdjson::dom::parser parser;
    FlatObject flat;
    auto r = stream.run(wanted, [](std::string_view, std::string_view) -> Result<void> { return {}; },
                        [&](std::string_view, const JsonEventStream::Hints& h) -> Result<void> {
                            if (h.args.empty() || !flat.read(h.args)) return {};
                            ++accepted;
                            DomArgs dom;
                            simdjson::dom::element root;
                            // In place, as Kineto parses it: padding follows the view.
                            if (parser.parse(h.args.data(), h.args.size(), false).get(root) ||
                                root.get_object().get(dom.object)) {
                                ADD_FAILURE() << what << ": FlatObject accepted args simdjson refuses: " << h.args;
                                return {};
                            }
                            static constexpr std::string_view k_asked[] = {
                                "correlation", "device", "stream", "grid", "block", "bytes", "In msg nelems", "dtype",
                                "Collective name", "est. achieved occupancy %", "registers per thread", "shared memory",
                                "blocks per SM", "warps per SM", "absent"};
                            std::vector<std::string_view> keys(std::begin(k_asked), std::end(k_asked));
                            for (auto field : dom.object) keys.push_back(field.key);
                            for (const std::string_view key : keys) {
                                double a = -7, b = -7;
                                const bool fa = flat.number(key, a), fb = dom.number(key, b);
                                EXPECT_EQ(fa, fb) << what << " number(" << key << ") of " << h.args;
                                if (fa && fb) EXPECT_TRUE(same_number(a, b)) << what << " " << key << ": " << a << " vs " << b;
                                std::string_view sa, sb;
                                const bool ga = flat.string(key, sa), gb = dom.string(key, sb);
                                EXPECT_EQ(ga, gb) << what << " string(" << key << ") of " << h.args;
                                if (ga && gb) EXPECT_EQ(sa, sb) << what << " " << key;
                                EXPECT_TRUE(same_number(flat.product(key), dom.product(key)))
                                    << what << " product(" << key << ") of " << h.args;
                            }
                            return {};
                        });
    EXPECT_TRUE(r) << what << ": " << r.error().to_string();
    return accepted;
}

// Kineto's launch pairing over the trace's correlation IDs (runtime calls wait for their device
// operation and the reverse) in a WaitingMap and in a plain hash map: every take finds the same.
// Returns how many pairs met.
std::size_t expect_launch_maps_agree(const std::string& text, const std::string& what) {
    Reference ref;
    if (!parse_reference(text, ref)) {
        ADD_FAILURE() << what << ": not a trace document";
        return 0;
    }
    WaitingMap<std::size_t> runtime, device;
    std::unordered_map<std::int64_t, std::size_t> plain_runtime, plain_device;
    std::size_t index = 0, met = 0;
    const auto take = [](std::unordered_map<std::int64_t, std::size_t>& m, std::int64_t id) -> std::optional<std::size_t> {
        auto it = m.find(id);
        if (it == m.end()) return std::nullopt;
        const std::size_t v = it->second;
        m.erase(it);
        return v;
    };
    for (simdjson::dom::element e : ref.events) {
        ++index;
        std::string_view cat;
        std::int64_t id = 0;
        if (e["cat"].get_string().get(cat) || e["args"]["correlation"].get_int64().get(id) || id < 0) continue;
        const bool is_runtime = cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime";
        const bool is_device = cat == "kernel" || cat == "Kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" ||
                               cat == "Memcpy" || cat == "Memset";
        if (!is_runtime && !is_device) continue;
        auto& mine = is_runtime ? device : runtime;
        auto& theirs = is_runtime ? plain_device : plain_runtime;
        const auto got = mine.take(id);
        const auto want = take(theirs, id);
        if (got != want) {
            ADD_FAILURE() << what << ": correlation " << id << " at event " << index << ": the launch map found "
                          << (got ? std::to_string(*got) : "none") << ", a plain map " << (want ? std::to_string(*want) : "none");
            return met;
        }
        if (got) {
            ++met;
        } else {
            (is_runtime ? runtime : device).put(id, index);
            (is_runtime ? plain_runtime : plain_device)[id] = index;
        }
    }
    return met;
}

// Two batches of one trace: the same entities in order, attributes, metrics, labels and notes.
void expect_same_batch(const RunBatch& a, const RunBatch& b, const std::string& what) {
    EXPECT_EQ(a.labels, b.labels) << what;
    EXPECT_EQ(a.notes, b.notes) << what;
    ASSERT_EQ(a.entities.size(), b.entities.size()) << what;
    for (std::size_t i = 0; i < a.entities.size(); ++i) {
        const Entity& x = a.entities[i];
        const Entity& y = b.entities[i];
        ASSERT_EQ(x.name, y.name) << what << " entity " << i;
        EXPECT_EQ(x.kind, y.kind) << what << " " << x.name;
        EXPECT_EQ(x.parent, y.parent) << what << " " << x.name;
        ASSERT_EQ(x.attributes.size(), y.attributes.size()) << what << " " << x.name;
        for (auto ia = x.attributes.begin(), ib = y.attributes.begin(); ia != x.attributes.end(); ++ia, ++ib) {
            EXPECT_EQ(ia->first, ib->first) << what << " " << x.name;
            EXPECT_EQ(ia->second, ib->second) << what << " " << x.name << " " << ia->first.str();
        }
        ASSERT_EQ(x.metrics.size(), y.metrics.size()) << what << " " << x.name;
        for (std::size_t m = 0; m < x.metrics.size(); ++m) {
            EXPECT_EQ(x.metrics[m].name(), y.metrics[m].name()) << what << " " << x.name;
            EXPECT_NEAR(x.metrics[m].value, y.metrics[m].value, 1e-9 * std::max(1.0, std::abs(y.metrics[m].value)))
                << what << " " << x.name << " " << x.metrics[m].name().str();
        }
    }
}

// The Kineto reader on `doc` as written in `text`, compact, pretty-printed, and with every "ts"
// and "dur" a string (which only the DOM path reads: no hint, no flat args): the same batch, or
// an error in each.
void expect_kineto_paths_agree(const std::string& text, Ordered doc, const std::string& what) {
    auto as_is = collect_content("as_is.json", text);
    const auto compact = collect_content("compact.json", doc.dump());
    const auto pretty = collect_content("pretty.json", doc.dump(2));
    auto& events = doc.is_array() ? doc : doc["traceEvents"];
    for (auto& e : events)
        for (const char* key : {"ts", "dur"})
            if (e.is_object() && e.contains(key) && e[key].is_number()) e[key] = e[key].dump();
    const auto full = collect_content("strings.json", doc.dump());
    for (const auto* other : {&compact, &pretty, &full}) {
        const char* which = other == &compact ? "compact" : other == &pretty ? "pretty-printed" : "full parse";
        ASSERT_EQ(as_is.has_value(), other->has_value())
            << what << " (" << which << "): " << (as_is ? (*other).error().to_string() : as_is.error().to_string());
        if (!as_is) continue;
        EXPECT_EQ(as_is->format, other->value().format) << what << " (" << which << ")";
        expect_same_batch(*as_is, other->value(), what + " (" + which + ")");
    }
}

// Every Kineto or Chrome trace of ../shared: the corpus's Kineto folder, the jobs and the
// crashers (recursively; .json and .json.gz).
std::vector<std::filesystem::path> shared_traces() {
    std::vector<std::filesystem::path> files;
    const auto add_dir = [&](const std::optional<std::filesystem::path>& dir, const char* sub) {
        if (!dir || !std::filesystem::is_directory(*dir / sub)) return;
        for (const auto& e : std::filesystem::recursive_directory_iterator(*dir / sub)) {
            const std::string name = e.path().filename().string();
            if (e.is_regular_file() && (name.ends_with(".json") || name.ends_with(".json.gz"))) files.push_back(e.path());
        }
    };
    add_dir(corpus_dir(), "kineto");
    add_dir(jobs_dir(), "");
    add_dir(crashers_dir(), "");
    std::sort(files.begin(), files.end());
    // Only trace documents (a job's figures.json is not one).
    std::erase_if(files, [](const std::filesystem::path& file) {
        Reference ref;
        return !parse_reference(read_maybe_gzip(file.string()), ref);
    });
    return files;
}

// A trace that varies what real ones vary, from `seed`: devices and streams, compute kernels and
// communication kernels (NCCL's, NVLS multimem, a custom all-reduce) on the compute streams or
// their own, collective args, launches and copies paired by correlation ID, CPU operators,
// steps, syncs, flow and instant events, members in any order, missing args, durations and
// categories, events out of order; and what the run must say, counted while writing it.
struct Generated {
    Ordered doc;
    std::string text;
    double kernels = 0, comm_ns = 0, collectives = 0, collective_bytes = 0;
};

Generated generate(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    const auto chance = [&](double p) { return static_cast<double>(rng() % 1'000'000) < p * 1'000'000; };
    const std::vector<std::string> compute = {
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float)",
        "ampere_sgemm_128x64_tn", "sm90_xmma_gemm_bf16bf16_bf16f32", "void flash_fwd_kernel<Flash_fwd_kernel_traits>()",
        "triton_poi_fused_add_0"};
    const std::vector<std::string> comm = {
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
        "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
        "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long)",
        "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, int)"};
    const std::vector<std::pair<std::string, double>> dtypes = {
        {"Float", 4}, {"BFloat16", 2}, {"Half", 2}, {"Long", 8}, {"Byte", 1}, {"Unknown", 0}};
    const std::vector<std::string> collective_names = {"allreduce", "all_gather", "reduce_scatter", "send", "recv"};
    const std::size_t devices = 1 + pick(8), streams = 1 + pick(4);
    const bool comm_on_compute = chance(0.5);
    // Times in microseconds with at most 3 decimals, as Kineto writes them; near 1.7e12 or 1.7e15.
    const double base = (chance(0.5) ? 1.7e12 : 1.7e15) + static_cast<double>(pick(1'000'000));
    const auto us = [&](double t) { return std::round(t * 1000) / 1000; };

    Generated g;
    Ordered events = Ordered::array();
    // Members in a random order: each event's keys are shuffled before it is written.
    const auto add = [&](std::vector<std::pair<std::string, Ordered>> members) {
        std::shuffle(members.begin(), members.end(), rng);
        Ordered e = Ordered::object();
        for (auto& [k, v] : members) e[k] = std::move(v);
        events.push_back(std::move(e));
    };
    double t = 0;
    std::int64_t correlation = 1000 + static_cast<std::int64_t>(pick(1000));
    const std::size_t steps = 1 + pick(4);
    std::vector<Ordered> gpu_events;  // written after the CPU ones, or among them
    const bool gpu_after = chance(0.5);
    for (std::size_t step = 0; step < steps; ++step) {
        const double step_start = t;
        const std::size_t launches = 5 + pick(60);
        for (std::size_t l = 0; l < launches; ++l) {
            t += 1 + static_cast<double>(pick(50));
            const std::size_t device = pick(devices);
            const bool is_comm = chance(0.25);
            const bool is_copy = !is_comm && chance(0.1);
            const std::int64_t stream = is_comm && !comm_on_compute ? 100 + static_cast<std::int64_t>(device)
                                                                    : 7 + 4 * static_cast<std::int64_t>(pick(streams));
            const double call = us(2 + static_cast<double>(pick(8000)) / 1000.0);
            ++correlation;
            std::vector<std::pair<std::string, Ordered>> cpu = {
                {"ph", "X"}, {"cat", "cuda_runtime"}, {"name", is_copy ? "cudaMemcpyAsync" : "cudaLaunchKernel"},
                {"pid", 1}, {"tid", 1}, {"ts", us(base + t)}, {"dur", call},
                {"args", Ordered{{"External id", correlation - 500}, {"correlation", correlation}}}};
            add(cpu);
            if (chance(0.2)) add({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaEventQuery"}, {"pid", 1}, {"tid", 1},
                                  {"ts", us(base + t + call)}, {"dur", 0.5}, {"args", Ordered{{"correlation", ++correlation}}}});
            const double start = us(base + t + call + static_cast<double>(pick(30000)) / 1000.0);
            const double dur = us(0.5 + static_cast<double>(pick(300000)) / 1000.0);
            // Missing fields: a kernel without args still counts; without "dur" it does not.
            const bool no_args = chance(0.05), no_dur = chance(0.03);
            Ordered args = Ordered::object();
            args["External id"] = correlation - 500;
            args["device"] = device;
            args["stream"] = stream;
            args["correlation"] = correlation;
            std::string name;
            std::string cat = "kernel";
            if (is_copy) {
                cat = chance(0.5) ? "gpu_memcpy" : "gpu_memset";
                name = cat == "gpu_memcpy" ? "Memcpy HtoD (Pageable -> Device)" : "Memset (Device)";
                args["bytes"] = static_cast<std::int64_t>(pick(1 << 24));
                args["memory bandwidth (GB/s)"] = us(static_cast<double>(pick(900000)) / 1000.0);
            } else {
                name = is_comm ? comm[pick(comm.size())] : compute[pick(compute.size())];
                if (chance(0.8)) {
                    args["grid"] = Ordered::array({1 + pick(1024), 1 + pick(4), 1});
                    args["block"] = Ordered::array({32 * (1 + pick(32)), 1, 1});
                    args["registers per thread"] = 16 + pick(200);
                    args["shared memory"] = pick(100000);
                    args["blocks per SM"] = us(static_cast<double>(pick(10000)) / 1000.0);
                    args["est. achieved occupancy %"] = pick(101);
                }
                if (chance(0.1))  // the newer occupancy object: args no longer flat
                    args["occupancy"] = Ordered{{"activeBlocksPerMultiprocessor", 1 + pick(8)},
                                                {"limitingFactors", "REGISTERS"},
                                                {"blockLimitRegs", 2 + pick(8)},
                                                {"blockLimitWarps", 2147483647}};
                if (is_comm && chance(0.7)) {
                    const auto& [dtype, size] = dtypes[pick(dtypes.size())];
                    const auto nelems = static_cast<std::int64_t>(1 + pick(1 << 22));
                    args["Collective name"] = collective_names[pick(collective_names.size())];
                    args["In msg nelems"] = nelems;
                    args["Out msg nelems"] = nelems;
                    args["Group size"] = devices;
                    args["dtype"] = dtype;
                    args["Process Group Name"] = "0";
                    if (size > 0 && !no_args && !no_dur) g.collective_bytes += static_cast<double>(nelems) * size;
                }
            }
            std::vector<std::pair<std::string, Ordered>> gpu = {
                {"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", device}, {"tid", stream}, {"ts", start}};
            if (!no_dur) gpu.emplace_back("dur", dur);
            if (!no_args) gpu.emplace_back("args", args);
            if (cat == "kernel" && !no_dur) {
                g.kernels += 1;
                if (is_comm) {
                    g.comm_ns += dur * 1000;
                    g.collectives += 1;
                }
            }
            if (gpu_after) {
                std::shuffle(gpu.begin(), gpu.end(), rng);
                Ordered e = Ordered::object();
                for (auto& [k, v] : gpu) e[k] = std::move(v);
                gpu_events.push_back(std::move(e));
            } else {
                add(gpu);
            }
            if (chance(0.3)) add({{"ph", "X"}, {"cat", "cpu_op"}, {"name", chance(0.5) ? "aten::mm" : "aten::add_"},
                                  {"pid", 1}, {"tid", 1}, {"ts", us(base + t - 1)}, {"dur", us(call + 3)},
                                  {"args", Ordered{{"External id", correlation - 500}, {"Sequence number", l}}}});
            if (chance(0.1)) add({{"ph", "s"}, {"id", correlation}, {"pid", 1}, {"tid", 1}, {"ts", us(base + t)},
                                  {"cat", "ac2g"}, {"name", "ac2g"}});
            if (chance(0.05)) add({{"ph", "i"}, {"s", "t"}, {"name", "marker"}, {"pid", 1}, {"tid", 1}, {"ts", us(base + t)}});
            if (chance(0.05)) add({{"ph", "X"}, {"cat", "cuda_sync"}, {"name", "Event Sync"}, {"pid", 0}, {"tid", stream},
                                  {"ts", us(base + t + 2)}, {"dur", 1.25}, {"args", Ordered{{"device", device}}}});
            if (chance(0.03)) add({{"ph", "X"}, {"name", "uncategorised"}, {"pid", 1}, {"tid", 1}, {"ts", us(base + t)},
                                   {"dur", 1}});
            if (chance(0.03)) add({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaDeviceSynchronize"}, {"pid", 1},
                                   {"tid", 1}, {"ts", us(base + t + 1)}, {"dur", 40.5}, {"args", Ordered::object()}});
        }
        add({{"ph", "X"}, {"cat", "user_annotation"}, {"name", fmt::format("ProfilerStep#{}", step)}, {"pid", 1},
             {"tid", 1}, {"ts", us(base + step_start)}, {"dur", us(t - step_start + 1)}});
    }
    for (auto& e : gpu_events) events.push_back(std::move(e));
    // Neighbours swapped here and there (merged per-thread buffers are not in time order).
    for (std::size_t i = 1; i < events.size(); ++i)
        if (chance(0.1)) std::swap(events[i - 1], events[i]);
    for (std::size_t i = 0; i < 2 && !events.empty(); ++i)
        events.push_back(Ordered{{"ph", "M"}, {"name", "process_name"}, {"pid", i}, {"args", Ordered{{"name", "python"}}}});

    Ordered props = Ordered::array();
    for (std::size_t d = 0; d < devices; ++d)
        if (d == 0 || chance(0.8))
            props.push_back(Ordered{{"id", d}, {"name", "NVIDIA H100 80GB HBM3"}, {"computeMajor", 9}, {"computeMinor", 0},
                                    {"numSms", 132}, {"maxThreadsPerMultiprocessor", 2048}, {"warpSize", 32}});
    std::vector<std::pair<std::string, Ordered>> top = {{"schemaVersion", 1}, {"deviceProperties", props},
                                                        {"traceEvents", events}};
    if (chance(0.5))
        top.emplace_back("distributedInfo", Ordered{{"backend", "nccl"}, {"rank", pick(devices)}, {"world_size", devices}});
    if (chance(0.5)) top.emplace_back("displayTimeUnit", "ms");
    std::shuffle(top.begin(), top.end(), rng);
    for (auto& [k, v] : top) g.doc[k] = std::move(v);
    switch (pick(3)) {
    case 0: g.text = g.doc.dump(); break;
    case 1: g.text = g.doc.dump(2); break;
    default: g.text = g.doc.dump(1, '\t'); break;
    }
    return g;
}

constexpr std::uint64_t k_generated = 40;

}  // namespace

TEST(TraceDifferential, ScannerAtEveryLevelAndThreadedEqualsTheFullParseOnEveryRealTrace) {
    const auto files = shared_traces();
    if (files.empty()) GTEST_SKIP() << "no traces in ../shared (corpus/kineto, jobs, crashers; or $PERFWATCH_CORPUS...)";
    std::string levels;
    for (const ScanLevel level : usable_scan_levels()) levels += std::string(" ") + scan_level_name(level);
    RecordProperty("scan_levels", levels);
    std::cout << "scan levels this CPU runs:" << levels << "\n";
    for (const auto& file : files) expect_scanners_agree(read_maybe_gzip(file.string()), file.string());
}

TEST(TraceDifferential, ScannerAtEveryLevelAndThreadedEqualsTheFullParseOnGeneratedTraces) {
    for (std::uint64_t seed = 1; seed <= k_generated; ++seed) {
        const Generated g = generate(seed);
        expect_scanners_agree(g.text, fmt::format("generated trace {}", seed));
    }
}

TEST(TraceDifferential, FlatArgsReadAsSimdjsonReadsThem) {
    std::size_t accepted = 0;
    for (const auto& file : shared_traces()) accepted += expect_flat_args_agree(read_maybe_gzip(file.string()), file.string());
    for (std::uint64_t seed = 1; seed <= k_generated; ++seed)
        accepted += expect_flat_args_agree(generate(seed).text, fmt::format("generated trace {}", seed));
    EXPECT_GT(accepted, 1000u);  // the fast path was taken
}

TEST(TraceDifferential, LaunchMapsPairAsAPlainMapDoes) {
    std::size_t met = 0;
    for (const auto& file : shared_traces()) met += expect_launch_maps_agree(read_maybe_gzip(file.string()), file.string());
    for (std::uint64_t seed = 1; seed <= k_generated; ++seed)
        met += expect_launch_maps_agree(generate(seed).text, fmt::format("generated trace {}", seed));
    EXPECT_GT(met, 1000u);
}

// The existing corpus check (tests/collectors/pytorch/test_kineto.cpp) on the jobs and the
// crashers too, and compact and pretty-printed: each trace's first 1,500 events.
TEST(TraceDifferential, KinetoFastPathsEqualTheFullParseOnEveryRealTrace) {
    const auto files = shared_traces();
    if (files.empty()) GTEST_SKIP() << "no traces in ../shared (corpus/kineto, jobs, crashers; or $PERFWATCH_CORPUS...)";
    constexpr std::size_t k_events = 1500;
    for (const auto& file : files) {
        const std::string text = read_maybe_gzip(file.string());
        // The three corpus traces past 4 MB (9-25 MB) take most of a minute each to rewrite under
        // the sanitizers; test_kineto.cpp's EventsReadFromHintsEqualTheFullParse reads them whole.
        if (text.size() > (4u << 20)) continue;
        Ordered doc = Ordered::parse(text, nullptr, false);
        if (doc.is_discarded()) continue;
        auto& events = doc.is_array() ? doc : doc["traceEvents"];
        if (!events.is_array()) continue;
        if (events.size() > k_events) {
            events.erase(events.begin() + k_events, events.end());
            expect_kineto_paths_agree(doc.dump(), doc, file.string());
        } else {
            expect_kineto_paths_agree(text, doc, file.string());
        }
    }
}

// Generated traces: the fast paths give the full parse's batch, and the run counts what was
// written: kernel executions, communication kernel time, collectives and their bytes.
TEST(TraceDifferential, KinetoOnGeneratedTracesCountsWhatWasWritten) {
    for (std::uint64_t seed = 1; seed <= k_generated; ++seed) {
        const Generated g = generate(seed);
        const std::string what = fmt::format("generated trace {}", seed);
        expect_kineto_paths_agree(g.text, g.doc, what);
        auto b = collect_content("generated.json", g.text);
        ASSERT_TRUE(b) << what << ": " << b.error().to_string();
        EXPECT_EQ(b->format, "kineto") << what;
        const Entity& run = b->entities[0];
        EXPECT_EQ(run.kind, EntityKind::run) << what;
        EXPECT_DOUBLE_EQ(run.value("launches").value_or(-1), g.kernels) << what;
        EXPECT_NEAR(run.value("gpu_time_comm").value_or(-1), g.comm_ns, 1e-6 * std::max(1.0, g.comm_ns)) << what;
        EXPECT_DOUBLE_EQ(run.value("collectives").value_or(0), g.collectives) << what;
        EXPECT_NEAR(run.value("collective_bytes").value_or(0), g.collective_bytes, 1e-9 * std::max(1.0, g.collective_bytes))
            << what;
        std::size_t collective_entities = 0;
        for (const Entity& e : b->entities) collective_entities += e.kind == EntityKind::collective ? 1 : 0;
        EXPECT_EQ(static_cast<double>(collective_entities), g.collectives) << what;
    }
}

}  // namespace perfwatch::test
