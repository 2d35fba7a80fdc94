// libFuzzer's custom mutator for the trace targets (Kineto, Chrome traces): an input that parses
// as a trace (a JSON array of events, or an object with a "traceEvents" array) is changed event by
// event, as real traces differ from each other: events duplicated, dropped, reordered, kernels
// renamed to communication kernels, moved across streams and devices, other categories and
// phases, times perturbed, args fields (correlation, launch configuration, collective args) added
// or removed, written back compact or pretty-printed. Anything else, and one mutation in four,
// goes to libFuzzer's own byte mutator, which keeps fuzzing the scanner's byte handling.
// Linked into the fuzz_ executables of those targets only (the replay executables have no
// libFuzzer to fall back to).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

using Json = nlohmann::json;
using Rng = std::mt19937_64;

std::size_t pick(Rng& rng, std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng() % n); }
bool one_in(Rng& rng, std::size_t n) { return pick(rng, n) == 0; }
template <typename T, std::size_t N>
const T& any_of(Rng& rng, const T (&items)[N]) {
    return items[pick(rng, N)];
}

// Deeper documents are left to the byte mutator: nlohmann's dump recurses.
bool shallow(std::string_view text) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        else if (c == '[' || c == '{') {
            if (++depth > 64) return false;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return true;
}

// The events array of a trace document; null when `doc` is not a trace.
Json* events_of(Json& doc) {
    if (doc.is_array()) return &doc;
    if (doc.is_object()) {
        auto it = doc.find("traceEvents");
        if (it != doc.end() && it->is_array()) return &*it;
    }
    return nullptr;
}

Json parse_trace(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    if (size == 0 || !shallow(text)) return Json(nullptr);
    Json doc = Json::parse(text, nullptr, false);
    if (doc.is_discarded() || events_of(doc) == nullptr) return Json(nullptr);
    return doc;
}

constexpr const char* k_comm_kernels[] = {
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
    "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)",
    "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long, "
    "unsigned int**, unsigned long, unsigned long)",
    "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, "
    "vllm::Signal*, __nv_bfloat16*, int, int)",
    "rcclGenericKernel<1, false>(ncclDevComm*, unsigned long, ncclWork*)",
    "ncclDevFunc_AllReduce_RING_LL_Sum_bf16",
};
constexpr const char* k_other_names[] = {
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float)",
    "ampere_sgemm_128x64_tn", "Memcpy HtoD (Pageable -> Device)", "Memset (Device)", "cudaLaunchKernel",
    "cudaMemcpyAsync", "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventQuery", "ProfilerStep#3",
    "aten::mm", "nccl:all_reduce", "record_param_comms", "Runtime Triggered Module Loading", "Event Sync",
    "hipLaunchKernel", "", "k\xc3\xa9rnel"};
constexpr const char* k_cats[] = {"kernel", "Kernel", "gpu_memcpy", "gpu_memset", "Memcpy", "Memset",
                                  "cuda_runtime", "cuda_driver", "Runtime", "cpu_op", "Operator",
                                  "user_annotation", "gpu_user_annotation", "cuda_sync", "overhead",
                                  "python_function", "ac2g", "Trace", ""};
constexpr const char* k_phases[] = {"X", "X", "X", "i", "s", "f", "B", "E", "M", "C", "x", ""};
constexpr const char* k_dtypes[] = {"Float", "Half", "BFloat16", "Double", "Long", "Int", "Byte", "Bool",
                                    "Float8_e4m3fn", "ComplexDouble", "float", "", "Unknown"};
constexpr const char* k_collectives[] = {"allreduce", "all_reduce", "allgather", "reduce_scatter", "send", "recv",
                                         "barrier", "all_to_all", "broadcast", ""};

// A number such as traces hold, or one at their edges.
Json a_number(Rng& rng, std::int64_t typical) {
    switch (pick(rng, 10)) {
    case 0: return 0;
    case 1: return -1;
    case 2: return static_cast<std::int64_t>(pick(rng, 1u << 20)) - 1000;
    case 3: return 1e17 + static_cast<double>(pick(rng, 1000));
    case 4: return static_cast<double>(typical) + static_cast<double>(pick(rng, 1000)) / 7.0;
    case 5: return std::to_string(typical);  // a number written as a string
    case 6: return 9007199254740993.0;
    default: return typical + static_cast<std::int64_t>(pick(rng, 16));
    }
}

// The value `key` of `j` as an integer, when it has one.
std::int64_t int_of(const Json& j, const char* key, std::int64_t fallback) {
    if (!j.is_object()) return fallback;
    auto it = j.find(key);
    if (it != j.end() && it->is_number_integer()) return it->get<std::int64_t>();
    return fallback;
}

Json& args_of(Json& e) {
    if (!e.contains("args") || !e["args"].is_object()) e["args"] = Json::object();
    return e["args"];
}

// One change to `args`: a field added, changed or removed.
void mutate_args(Json& args, const Json& events, Rng& rng) {
    switch (pick(rng, 13)) {
    case 0: {  // a correlation ID shared with another event, so that launches meet their kernels
        const Json& other = events[pick(rng, events.size())];
        if (other.is_object() && other.contains("args") && other["args"].is_object() &&
            other["args"].contains("correlation"))
            args["correlation"] = other["args"]["correlation"];
        else args["correlation"] = a_number(rng, 100);
        break;
    }
    case 1: args["External id"] = a_number(rng, 50); break;
    case 2:
    case 3: {
        Json dims = Json::array();
        const std::size_t n = one_in(rng, 4) ? pick(rng, 5) : 3;
        for (std::size_t i = 0; i < n; ++i) dims.push_back(one_in(rng, 8) ? Json("1") : a_number(rng, 128));
        args[one_in(rng, 2) ? "grid" : "block"] = dims;
        break;
    }
    case 4: args["In msg nelems"] = a_number(rng, 1 << 20); break;
    case 5: args["Out msg nelems"] = a_number(rng, 1 << 20); break;
    case 6: args["Collective name"] = any_of(rng, k_collectives); break;
    case 7: args["dtype"] = any_of(rng, k_dtypes); break;
    case 8: args[one_in(rng, 2) ? "device" : "stream"] = a_number(rng, static_cast<std::int64_t>(pick(rng, 8))); break;
    case 9:
        args[any_of(rng, {"est. achieved occupancy %", "registers per thread", "shared memory", "blocks per SM",
                          "warps per SM", "bytes", "Group size", "Process Group Name", "queued", "context"})] =
            a_number(rng, 32);
        break;
    case 10: {
        Json occ = {{"activeBlocksPerMultiprocessor", a_number(rng, 4)},
                    {"limitingFactors", one_in(rng, 2) ? "REGISTERS|WARPS" : "SHARED"},
                    {"blockLimitRegs", a_number(rng, 2147483647)}};
        args["occupancy"] = occ;
        break;
    }
    default:
        if (!args.empty()) {
            auto it = args.begin();
            std::advance(it, static_cast<std::ptrdiff_t>(pick(rng, args.size())));
            const std::string key = it.key();
            args.erase(key);
        }
        break;
    }
}

// One change to the events array.
void mutate_events(Json& events, Rng& rng) {
    if (events.empty()) {
        events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", any_of(rng, k_comm_kernels)}, {"pid", 0},
                          {"tid", 7}, {"ts", 1000}, {"dur", 10}, {"args", {{"device", 0}, {"stream", 7}}}});
        return;
    }
    const std::size_t i = pick(rng, events.size());
    Json& e = events[i];
    switch (pick(rng, 16)) {
    case 0: {  // duplicated, here or elsewhere
        const Json copy = e;
        events.insert(events.begin() + static_cast<std::ptrdiff_t>(pick(rng, events.size() + 1)), copy);
        return;
    }
    case 1: events.erase(events.begin() + static_cast<std::ptrdiff_t>(i)); return;
    case 2: std::swap(events[i], events[pick(rng, events.size())]); return;
    case 3: {  // moved, a block of events reversed
        const std::size_t j = i + pick(rng, std::min<std::size_t>(16, events.size() - i));
        std::reverse(events.begin() + static_cast<std::ptrdiff_t>(i), events.begin() + static_cast<std::ptrdiff_t>(j));
        return;
    }
    default: break;
    }
    if (!e.is_object()) {
        e = Json::object();
        return;
    }
    switch (pick(rng, 12)) {
    case 0:
    case 1:  // a communication kernel, on whatever stream it was (a compute stream, often)
        e["name"] = any_of(rng, k_comm_kernels);
        if (one_in(rng, 2)) e["cat"] = "kernel";
        if (one_in(rng, 2)) e["ph"] = "X";
        break;
    case 2: e["name"] = any_of(rng, k_other_names); break;
    case 3: {  // another stream or device
        Json& args = args_of(e);
        const char* key = one_in(rng, 2) ? "stream" : "device";
        args[key] = a_number(rng, int_of(args, key, 7));
        if (one_in(rng, 2)) e[one_in(rng, 2) ? "tid" : "pid"] = args[key];
        break;
    }
    case 4: e["cat"] = any_of(rng, k_cats); break;
    case 5: e["ph"] = any_of(rng, k_phases); break;
    case 6:
    case 7: {  // times moved
        const char* key = one_in(rng, 2) ? "ts" : "dur";
        if (one_in(rng, 8)) {
            e.erase(key);
        } else if (e.contains(key) && e[key].is_number() && !one_in(rng, 4)) {
            const double v = e[key].get<double>();
            e[key] = v + (static_cast<double>(pick(rng, 2001)) - 1000.0) / (one_in(rng, 2) ? 1.0 : 1000.0);
        } else {
            e[key] = a_number(rng, 1000);
        }
        break;
    }
    case 8: {  // a field of the event removed
        static constexpr const char* k_fields[] = {"ph", "cat", "name", "ts", "dur", "args", "pid", "tid"};
        e.erase(any_of(rng, k_fields));
        break;
    }
    default: mutate_args(args_of(e), events, rng); break;
    }
}

// One change to the document's other members (a document that is an array has none).
void mutate_members(Json& doc, Rng& rng) {
    if (!doc.is_object()) return;
    switch (pick(rng, 4)) {
    case 0: doc["distributedInfo"] = {{"rank", a_number(rng, 0)}, {"world_size", a_number(rng, 8)}, {"backend", "nccl"}}; break;
    case 1: {
        Json dev = {{"id", a_number(rng, static_cast<std::int64_t>(pick(rng, 8)))},
                    {"name", one_in(rng, 2) ? "NVIDIA H100" : "AMD Instinct MI300X"},
                    {"numSms", a_number(rng, 132)},
                    {"maxThreadsPerMultiprocessor", a_number(rng, 2048)},
                    {"warpSize", a_number(rng, 32)},
                    {"computeMajor", 9},
                    {"computeMinor", 0}};
        if (!doc.contains("deviceProperties") || !doc["deviceProperties"].is_array())
            doc["deviceProperties"] = Json::array();
        doc["deviceProperties"].push_back(dev);
        break;
    }
    case 2: doc["schemaVersion"] = a_number(rng, 1); break;
    default: doc.erase(one_in(rng, 2) ? "deviceProperties" : "distributedInfo"); break;
    }
}

// `doc` written into `data` when it fits in `max_size`: its size, else 0.
std::size_t write(const Json& doc, Rng& rng, std::uint8_t* data, std::size_t max_size) {
    const std::string out = doc.dump(one_in(rng, 2) ? -1 : 1, ' ', false, Json::error_handler_t::replace);
    if (out.size() > max_size) return 0;
    std::memcpy(data, out.data(), out.size());
    return out.size();
}

}  // namespace

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                               unsigned int seed) {
    Rng rng(seed);
    if (one_in(rng, 4)) return LLVMFuzzerMutate(data, size, max_size);
    Json doc = parse_trace(data, size);
    if (doc.is_null()) return LLVMFuzzerMutate(data, size, max_size);
    Json& events = *events_of(doc);
    // Past half the size limit, events are dropped first: small inputs run faster and shrink to
    // the events that matter.
    if (size > max_size / 2)
        for (std::size_t drop = 1 + pick(rng, 8); drop > 0 && !events.empty(); --drop)
            events.erase(events.begin() + static_cast<std::ptrdiff_t>(pick(rng, events.size())));
    const std::size_t changes = 1 + pick(rng, 4);
    for (std::size_t c = 0; c < changes; ++c) {
        if (one_in(rng, 10)) mutate_members(doc, rng);
        else mutate_events(events, rng);
    }
    const std::size_t written = write(doc, rng, data, max_size);
    return written > 0 ? written : LLVMFuzzerMutate(data, size, max_size);
}

// Events of the second trace spliced into the first at a random place (nothing when either is
// not a trace).
extern "C" std::size_t LLVMFuzzerCustomCrossOver(const std::uint8_t* data1, std::size_t size1, const std::uint8_t* data2,
                                                 std::size_t size2, std::uint8_t* out, std::size_t max_out_size,
                                                 unsigned int seed) {
    Rng rng(seed);
    Json first = parse_trace(data1, size1);
    Json second = parse_trace(data2, size2);
    if (first.is_null() || second.is_null()) return 0;
    Json& into = *events_of(first);
    const Json& from = *events_of(second);
    if (from.empty()) return 0;
    const std::size_t begin = pick(rng, from.size());
    const std::size_t count = 1 + pick(rng, std::min<std::size_t>(8, from.size() - begin));
    const std::size_t at = pick(rng, into.size() + 1);
    into.insert(into.begin() + static_cast<std::ptrdiff_t>(at), from.begin() + static_cast<std::ptrdiff_t>(begin),
                from.begin() + static_cast<std::ptrdiff_t>(begin + count));
    return write(first, rng, out, max_out_size);
}
