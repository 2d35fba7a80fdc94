#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <chrono>
#include <ctime>

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

struct SilenceAdd {
    std::string db_path;
    std::vector<std::string> matchers;  // KEY=VALUE (value may be a glob)
    std::string until;                  // 2026-12-01T08:00:00Z, 2026-12-01, or a duration from now: 4h, 2d
    std::string comment;
};

// silence add / list / expire: 0, or 2 on bad input.
int run_silence_add(const SilenceAdd& options) {
    Silence silence;
    for (const std::string& m : options.matchers) {
        const auto eq = m.find('=');
        if (eq == std::string::npos || eq == 0) {
            fmt::print(stderr, "perfwatch: error: --match '{}' is not KEY=VALUE\n", m);
            return 2;
        }
        silence.matchers[m.substr(0, eq)] = m.substr(eq + 1);
    }
    silence.created_ms = now_ms();
    const auto until = parse_until(options.until, silence.created_ms);
    if (!until || *until <= silence.created_ms) {
        fmt::print(stderr, "perfwatch: error: --until '{}' is not a future time (2026-12-01T08:00:00Z, 2026-12-01) "
                           "or a duration (30m, 4h, 2d)\n",
                   options.until);
        return 2;
    }
    silence.until_ms = *until;
    silence.comment = options.comment;
    auto db = open_db(options.db_path);
    if (!db) return 2;
    auto id = db->silences().add(silence);
    if (!id) {
        print_error(id.error());
        return 2;
    }
    fmt::print("silence {}: {} until {}\n", *id, fmt::join(options.matchers, " "), utc_text(silence.until_ms));
    return 0;
}

int run_silence_list(const std::string& db_path, bool all) {
    auto db = open_db(db_path);
    if (!db) return 2;
    const std::int64_t now = now_ms();
    auto list = db->silences().list(all ? std::nullopt : std::optional<std::int64_t>(now));
    if (!list) {
        print_error(list.error());
        return 2;
    }
    if (list->empty()) fmt::print("no {}silences\n", all ? "" : "active ");
    for (const Silence& s : *list) {
        std::vector<std::string> matchers;
        for (const auto& [k, v] : s.matchers) matchers.push_back(k + "=" + v);
        fmt::print("{:>4}  {:<8} until {}  {}{}\n", s.id, s.until_ms > now ? "active" : "expired", utc_text(s.until_ms),
                   fmt::join(matchers, " "), s.comment.empty() ? "" : "  # " + s.comment);
    }
    return 0;
}

int run_silence_expire(const std::string& db_path, long long id) {
    auto db = open_db(db_path);
    if (!db) return 2;
    auto done = db->silences().expire(id, now_ms());
    if (!done) {
        print_error(done.error());
        return 2;
    }
    if (!*done) {
        fmt::print(stderr, "perfwatch: error: {}: no silence {}\n", db_path, id);
        return 2;
    }
    fmt::print("silence {} expired\n", id);
    return 0;
}

class SilenceCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("silence", "Alert silences: add, list, expire");
        cmd->require_subcommand(1);
        cmd->fallthrough();
        cmd->add_option("--db", m_db, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");
        m_add = cmd->add_subcommand("add", "Stop alerts matching every --match until --until");
        m_add->add_option("--match", m_silence.matchers, "KEY=VALUE on run labels, rule or severity; the "
                                                         "value may be a glob (repeatable)")
            ->required()
            ->allow_extra_args(false);
        m_add->add_option("--until", m_silence.until, "2026-12-01T08:00:00Z, 2026-12-01, or 30m, 4h, 2d")->required();
        m_add->add_option("--comment", m_silence.comment, "Why (shown by silence list)");
        m_list = cmd->add_subcommand("list", "Active silences (--all: expired ones too)");
        m_list->add_flag("--all", m_all, "Include expired silences");
        auto* expire = cmd->add_subcommand("expire", "End a silence now");
        expire->add_option("id", m_id, "Silence id")->required();
        return cmd;
    }
    int run(const Context& c) override {
        const std::string db = c.db_or_default(m_db);
        if (m_add->parsed()) {
            m_silence.db_path = db;
            return run_silence_add(m_silence);
        }
        if (m_list->parsed()) return run_silence_list(db, m_all);
        return run_silence_expire(db, m_id);
    }

private:
    CLI::App* m_add = nullptr;
    CLI::App* m_list = nullptr;
    SilenceAdd m_silence;
    std::string m_db;
    bool m_all = false;
    long long m_id = 0;
};

}  // namespace

std::unique_ptr<Command> make_silence_command() { return std::make_unique<SilenceCommand>(); }

}  // namespace perfwatch::cli
