// libFuzzer target for the daemon's configuration parser (YAML with watch entries, receivers,
// routes, durations, listen addresses): diagnostics, never a crash.
#include <cstdint>
#include <string_view>

#include "app/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    (void)perfwatch::parse_config_text("/tmp/perfwatch-fuzz/config.yaml", text);
    return 0;
}
