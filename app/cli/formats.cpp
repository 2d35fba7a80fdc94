#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "collectors/collector.hpp"

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

// The report formats, then the binary reports the converters turn into one of them.
int run_formats(const std::vector<Converter>& converters) {
    for (const Collector* c : collectors()) fmt::print("{:<18} {}\n", c->id(), c->description());
    fmt::print("\nbinary reports, converted by the vendor tool when it is on PATH (skipped otherwise):\n");
    for (const Converter& c : converters) {
        const std::string program = find_program(c.command.empty() ? "" : c.command[0]);
        fmt::print("{:<18} {} ({})\n", c.extension, describe_command(c, "{input}"),
                   program.empty() ? "not on PATH" : program);
    }
    return 0;
}

class FormatsCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override { return app.add_subcommand("formats", "List the supported report formats"); }
    int run(const Context& c) override { return run_formats(c.config.converters); }
};

}  // namespace

std::unique_ptr<Command> make_formats_command() { return std::make_unique<FormatsCommand>(); }

}  // namespace perfwatch::cli
