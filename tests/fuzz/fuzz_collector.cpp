// libFuzzer target for one collector, named by PERFWATCH_FUZZ_COLLECTOR (a format id), or, for
// "detect", format detection followed by whichever collector recognizes the input. Any input may
// be refused with an Error; none may crash, hang, leak or trip a sanitizer.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "collectors/collector.hpp"

namespace {

const perfwatch::Collector* the_collector() {
    static const perfwatch::Collector* k_collector = [] {
        for (const perfwatch::Collector* c : perfwatch::collectors())
            if (c->id() == PERFWATCH_FUZZ_COLLECTOR) return c;
        return static_cast<const perfwatch::Collector*>(nullptr);
    }();
    return k_collector;
}

// Collectors that open their report by path (SQLite) read the input from a scratch file,
// removed at exit.
const std::string& scratch_path() {
    static const std::string k_path = "/tmp/perfwatch-fuzz-" + std::to_string(::getpid()) + ".input";
    static const bool k_removed_at_exit = std::atexit([] { std::remove(k_path.c_str()); }) == 0;
    (void)k_removed_at_exit;
    return k_path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    if (std::string_view(PERFWATCH_FUZZ_COLLECTOR) == "detect") {
        (void)perfwatch::collect_content("fuzz-input", input);
        return 0;
    }
    const perfwatch::Collector* c = the_collector();
    if (c == nullptr) {
        std::fprintf(stderr, "no collector named %s\n", PERFWATCH_FUZZ_COLLECTOR);
        std::abort();
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
