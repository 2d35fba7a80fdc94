// libFuzzer target for one collector, named by the executable's own name (fuzz_ncu-csv and
// fuzz_replay_ncu-csv are links to one executable: a format id after "fuzz_" or "fuzz_replay_"),
// or, for "detect", format detection followed by whichever collector recognizes the input. Any
// input may be refused with an Error; none may crash, hang, leak or trip a sanitizer.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "collectors/collector.hpp"

namespace {

// The collector LLVMFuzzerInitialize picked; none for "detect".
const perfwatch::Collector* g_collector = nullptr;

// Collectors that open their report by path (SQLite) read the input from a scratch file,
// removed at exit.
const std::string& scratch_path() {
    static const std::string k_path = "/tmp/perfwatch-fuzz-" + std::to_string(::getpid()) + ".input";
    static const bool k_removed_at_exit = std::atexit([] { std::remove(k_path.c_str()); }) == 0;
    (void)k_removed_at_exit;
    return k_path;
}

}  // namespace

// Picks the collector from argv[0]'s file name; an unknown one stops the process.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    std::string_view name = *argc > 0 ? (*argv)[0] : "";
    if (const auto slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
    for (std::string_view prefix : {"fuzz_replay_", "fuzz_"}) {
        if (name.starts_with(prefix)) {
            name.remove_prefix(prefix.size());
            break;
        }
    }
    if (name == "detect") return 0;
    for (const perfwatch::Collector* c : perfwatch::collectors())
        if (c->id() == name) g_collector = c;
    if (g_collector == nullptr) {
        std::fprintf(stderr, "no collector named '%.*s': run this executable as fuzz_FORMAT or fuzz_replay_FORMAT\n",
                     static_cast<int>(name.size()), name.data());
        std::abort();
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const perfwatch::Collector* c = g_collector;
    if (c == nullptr) {
        (void)perfwatch::collect_content("fuzz-input", input);
        return 0;
    }
    if (c->input() == perfwatch::CollectorInput::path) {
        {
            std::ofstream out(scratch_path(), std::ios::binary | std::ios::trunc);
            out.write(input.data(), static_cast<std::streamsize>(input.size()));
        }
        (void)c->collect(scratch_path(), {});
        return 0;
    }
    (void)c->collect("fuzz-input", input);
    return 0;
}
