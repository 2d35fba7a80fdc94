#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

// The newest outbox messages: state, attempts, receiver, title and last error.
int run_outbox(const std::string& db_path, std::size_t limit) {
    auto db = open_db(db_path);
    if (!db) return 2;
    auto messages = db->outbox().newest(limit);
    if (!messages) {
        print_error(messages.error());
        return 2;
    }
    if (messages->empty()) fmt::print("the outbox is empty\n");
    for (const OutboxMessage& m : *messages) {
        auto group = alert_group_from_json(m.payload);
        fmt::print("{:>5}  {:<7} {:>2} attempt(s)  {:<16} run {:<5} {}\n", m.id, to_string(m.state), m.attempts, m.receiver,
                   m.run_id, group ? group->title() : "(unreadable payload)");
        if (!m.last_error.empty()) fmt::print("       last error: {}\n", m.last_error);
        if (m.state == MessageState::pending && m.attempts > 0)
            fmt::print("       next attempt: {}\n", utc_text(m.next_attempt_ms));
    }
    return 0;
}

class OutboxCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("outbox", "The newest alert messages: state, attempts, last error");
        cmd->add_option("--db", m_db, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");
        cmd->add_option("--limit", m_limit, "How many (default 20)");
        return cmd;
    }
    int run(const Context& c) override { return run_outbox(c.db_or_default(m_db), m_limit); }

private:
    std::string m_db;
    std::size_t m_limit = 20;
};

}  // namespace

std::unique_ptr<Command> make_outbox_command() { return std::make_unique<OutboxCommand>(); }

}  // namespace perfwatch::cli
