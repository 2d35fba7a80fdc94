#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

// Validates a configuration file: prints every diagnostic; 0 when valid, 1 otherwise.
int run_config_check(const std::string& path) {
    ConfigLoad load = load_config(path);
    if (load.ok()) {
        for (Diagnostic& d : check_watch_directories(load.config)) load.diagnostics.push_back(std::move(d));
        const RuleSet rules = compile_rules(load_rule_files(load.config.rules));
        load.diagnostics.insert(load.diagnostics.end(), rules.diagnostics.begin(), rules.diagnostics.end());
    }
    for (const Diagnostic& d : load.diagnostics) fmt::print(stderr, "{}\n", d.to_string());
    if (has_errors(load.diagnostics)) return 1;
    fmt::print("{}: ok ({} rule file(s), {} converter(s), {} watched director{}{})\n", path, load.config.rules.size(),
               load.config.converters.size(), load.config.watch.size(), load.config.watch.size() == 1 ? "y" : "ies",
               load.config.database ? ", database " + *load.config.database : "");
    return 0;
}

class ConfigCheckCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("config", "Configuration tools");
        cmd->require_subcommand(1);
        auto* check = cmd->add_subcommand("check", "Validate a configuration file; exit 1 on errors");
        check->add_option("file", m_path, "Configuration file")->required();
        return cmd;
    }
    Needs needs() const override { return Needs::nothing; }
    int run(const Context&) override { return run_config_check(m_path); }

private:
    std::string m_path;
};

}  // namespace

std::unique_ptr<Command> make_config_check_command() { return std::make_unique<ConfigCheckCommand>(); }

}  // namespace perfwatch::cli
