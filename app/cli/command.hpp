#pragma once

#include <memory>
#include <span>
#include <string>

#include "app/config.hpp"

namespace CLI {
class App;
}

namespace perfwatch::cli {

// What a parsed command reads before it runs.
enum class Needs {
    nothing,      // its own arguments only (config check, rules lint, rules test)
    config_path,  // the --config path, loading it itself (the daemon)
    config,       // the loaded configuration (most commands)
};

// What every command may use besides its own options.
struct Context {
    std::string config_path;  // --config, else $PERFWATCH_CONFIG; "" when neither
    Config config;            // loaded when the command needs it
    // `given` (--db), else $PERFWATCH_DB, else the configuration's database, else perfwatch.db.
    std::string db_or_default(const std::string& given) const;
};

// One command of the command line, in its own file under app/cli/: it adds its subcommand and
// options to the parser (bound to its members), then runs when parsed.
class Command {
public:
    virtual ~Command() = default;
    // Adds the subcommand to `app`; returns it (the dispatcher asks it whether it was parsed).
    virtual CLI::App* add(CLI::App& app) = 0;
    virtual Needs needs() const { return Needs::config; }
    // The process exit status.
    virtual int run(const Context& context) = 0;
};

// The command table (app/cli/table.cpp), one row per top-level command, in help order.
std::span<const std::unique_ptr<Command>> commands();

}  // namespace perfwatch::cli
