#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <csignal>

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"
#include "app/daemon.hpp"
#include "web/http_server.hpp"
#include "web/page.hpp"

namespace perfwatch::cli {

namespace {

// `perfwatch serve`: the dashboard alone over a database (a fleet's PostgreSQL history from any
// host), until SIGINT or SIGTERM. Read-only unless a token file is given. Exit 0 after a stop,
// 2 when the database or the address cannot be opened.
int run_serve(const std::string& db_path, const std::string& listen, const std::string& token_file, Config config) {
    const auto address = split_listen_address(listen);
    if (!address) {
        fmt::print(stderr, "perfwatch: error: --listen must be ADDRESS:PORT such as 127.0.0.1:9464; found '{}'\n", listen);
        return 2;
    }
    if (!token_file.empty()) config.dashboard_token_file = token_file;
    auto dashboard = open_dashboard(db_path, config);
    if (!dashboard) {
        print_error(dashboard.error());
        return 2;
    }
    std::signal(SIGPIPE, SIG_IGN);
    boost::asio::io_context io;
    auto& pages = **dashboard;
    HttpServer server(io, [&](const HttpRequest& request) {
        if (auto refused = pages.refuse_host(request)) return std::move(*refused);
        if (auto page = pages.handle(request)) return std::move(*page);
        return web::error_response(404, "no such page");
    });
    auto bound = server.listen(address->first, address->second);
    if (!bound) {
        print_error(bound.error());
        return 2;
    }
    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code&, int) {
        server.stop();
        io.stop();
    });
    fmt::print("dashboard of {} at http://{}/ ({})\n", pages.db().name(), *bound,
               config.dashboard_token_file.empty() ? "read-only" : "actions need the token");
    std::fflush(stdout);
    io.run();
    return 0;
}

class ServeCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("serve", "Serve the dashboard over a database (no watching, no alerts)");
        cmd->add_option("--db", m_db, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");
        cmd->add_option("--listen", m_listen, "ADDRESS:PORT to serve on (default 127.0.0.1:9464; port 0: any free one)");
        cmd->add_option("--token-file", m_token_file,
                        "File whose first line is the token that accept, silence and pin need (default: the configuration's "
                        "dashboard token_file; none: read-only)");
        return cmd;
    }
    int run(const Context& c) override { return run_serve(c.db_or_default(m_db), m_listen, m_token_file, c.config); }

private:
    std::string m_db;
    std::string m_listen = "127.0.0.1:9464";
    std::string m_token_file;
};

}  // namespace

std::unique_ptr<Command> make_serve_command() { return std::make_unique<ServeCommand>(); }

}  // namespace perfwatch::cli
