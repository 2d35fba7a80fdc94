#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <vector>

#include "app/cli/command.hpp"
#include "app/config.hpp"

// Parses the command line and runs the command parsed (app/cli/: one file per command).
int main(int argc, char** argv) {
    CLI::App app{"perfwatch: catches GPU performance problems and regressions in profiler reports"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "perfwatch 0.1.0");
    app.fallthrough();
    perfwatch::cli::Context context;
    app.add_option("--config", context.config_path, "Configuration file (default $PERFWATCH_CONFIG)");
    std::vector<std::pair<CLI::App*, perfwatch::cli::Command*>> added;
    for (const auto& command : perfwatch::cli::commands()) added.emplace_back(command->add(app), command.get());

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return 2;
    }

    for (const auto& [sub, command] : added) {
        if (!sub->parsed()) continue;
        const perfwatch::cli::Needs needs = command->needs();
        if (needs == perfwatch::cli::Needs::nothing) return command->run(context);
        if (context.config_path.empty())
            if (const char* env = std::getenv("PERFWATCH_CONFIG"); env != nullptr) context.config_path = env;
        if (needs == perfwatch::cli::Needs::config && !context.config_path.empty()) {
            perfwatch::ConfigLoad load = perfwatch::load_config(context.config_path);
            for (const auto& d : load.diagnostics) fmt::print(stderr, "{}\n", d.to_string());
            if (!load.ok()) return 2;
            context.config = std::move(load.config);
        }
        if (needs == perfwatch::cli::Needs::config) perfwatch::export_password_file(context.config);
        return command->run(context);
    }
    return 2;
}
