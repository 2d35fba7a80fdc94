// libFuzzer target for the rule language: YAML rule files through the parser and the compiler
// (expressions, templates, macros, lists), then the compiled rules over a small fixed run.
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/evaluate.hpp"
#include "engine/rules.hpp"

namespace {

const perfwatch::StoredRun& sample_run() {
    static const perfwatch::StoredRun k_run = [] {
        perfwatch::StoredRun run;
        run.id = 1;
        run.batch.format = "fuzz";
        const std::size_t r = run.batch.run_entity();
        run.batch.entities[r].set({"gpu_time", 3e6, "ns", "", ""});
        run.batch.entities[r].set({"launches", 3, "count", "", ""});
        for (int i = 0; i < 3; ++i) {
            perfwatch::Entity k;
            k.kind = perfwatch::EntityKind::kernel;
            k.name = "kernel_" + std::to_string(i);
            k.parent = static_cast<std::int64_t>(r);
            k.set({"duration", 1e6 * (i + 1), "ns", "", ""});
            k.set({"duration_total", 1e6 * (i + 1), "ns", "", ""});
            k.set({"achieved_occupancy", 12.5 * (i + 1), "percent", "", ""});
            k.set({"registers_per_thread", 64.0 * (i + 1), "count", "", ""});
            k.attributes["device"] = "device 0";
            run.batch.entities.push_back(std::move(k));
        }
        return run;
    }();
    return k_run;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::vector<perfwatch::RuleFile> files{perfwatch::parse_rule_text("fuzz.yaml", text)};
    const perfwatch::RuleSet rules = perfwatch::compile_rules(files);
    for (const perfwatch::Diagnostic& d : rules.diagnostics) (void)d.headline(true);
    if (!rules.has_errors()) (void)perfwatch::evaluate_run(rules, sample_run());
    return 0;
}
