#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/vocabulary.hpp"

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

int run_metrics() {
    fmt::print("{:<36} {:<8} {:<22} {}\n", "metric", "unit", "entities", "meaning");
    for (const MetricDef& d : metric_vocabulary())
        fmt::print("{:<36} {:<8} {:<22} {}\n", d.name, d.unit, d.kinds, d.description);
    return 0;
}

class MetricsCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        return app.add_subcommand("metrics", "List the canonical metric vocabulary rules are written in");
    }
    int run(const Context&) override { return run_metrics(); }
};

}  // namespace

std::unique_ptr<Command> make_metrics_command() { return std::make_unique<MetricsCommand>(); }

}  // namespace perfwatch::cli
