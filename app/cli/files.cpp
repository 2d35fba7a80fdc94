#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

// `perfwatch files`: the daemon's marks of watched files (path, state, when, reason), those
// quarantined only with `quarantined_only`. Exit 0, or 2 when the database fails.
int run_files_list(const std::string& db_path, bool quarantined_only, const std::string& format) {
    auto db = open_db(db_path);
    if (!db) return 2;
    auto marks = db->file_marks().list(quarantined_only ? std::optional(ReadState::quarantined) : std::nullopt);
    if (!marks) {
        print_error(marks.error());
        return 2;
    }
    if (format == "json") {
        nlohmann::json doc = nlohmann::json::array();
        for (const FileMark& m : *marks)
            doc.push_back({{"path", m.path},
                           {"state", std::string(to_string(m.state))},
                           {"size", m.size},
                           {"mtime_ns", m.mtime_ns},
                           {"run_id", m.run_id ? nlohmann::json(*m.run_id) : nlohmann::json(nullptr)},
                           {"error", m.error},
                           {"quarantined_at", m.quarantined_at.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.quarantined_at)},
                           {"seen_at", m.seen_at}});
        fmt::print("{}\n", doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
        return 0;
    }
    if (marks->empty()) {
        fmt::print("{}\n", quarantined_only ? "no quarantined file" : "no watched file yet");
        return 0;
    }
    for (const FileMark& m : *marks) {
        const bool quarantined = m.state == ReadState::quarantined || m.state == ReadState::retry;
        const std::string& when = quarantined && !m.quarantined_at.empty() ? m.quarantined_at : m.seen_at;
        std::string what;
        if (m.run_id && m.state == ReadState::read) what = fmt::format("run {}", *m.run_id);
        if (!m.error.empty()) what = m.error;
        fmt::print("{:<11} {:<24} {}{}\n", to_string(m.state), when, m.path, what.empty() ? "" : "  " + what);
    }
    return 0;
}

// `perfwatch files retry PATH`: the running daemon reads a quarantined (or failed) file once more
// within a few seconds. Exit 0, or 2 when the file has no such mark.
int run_files_retry(const std::string& db_path, const std::string& path) {
    auto db = open_db(db_path);
    if (!db) return 2;
    // As given, else as the daemon names it (absolute).
    std::string name = path;
    if (auto mark = db->file_marks().get(path); mark && !*mark) {
        std::error_code ec;
        const auto absolute = std::filesystem::absolute(path, ec);
        if (!ec) name = absolute.lexically_normal().string();
    }
    auto was = db->file_marks().request_retry(name);
    if (!was) {
        print_error(was.error());
        return 2;
    }
    fmt::print("{}: {} -> retry: the running daemon reads it once more within a few seconds (should it end the "
               "reader again, it is quarantined again)\n",
               name, to_string(*was));
    return 0;
}

class FilesCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand(
            "files", "The daemon's watched files: state (read, failed, quarantined, ...), when, reason; retry one");
        cmd->require_subcommand(0, 1);
        cmd->fallthrough();
        cmd->add_option("--db", m_db, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or the configuration's)");
        cmd->add_flag("--quarantined", m_quarantined, "Only the quarantined ones (reading them ended the reader)");
        cmd->add_option("--format", m_format, "text or json")->check(CLI::IsMember({"text", "json"}));
        m_retry = cmd->add_subcommand("retry", "Read a quarantined (or failed) file once more: the running daemon takes it");
        m_retry->add_option("path", m_path, "The file, as `perfwatch files` lists it")->required();
        return cmd;
    }
    int run(const Context& c) override {
        const std::string db = c.db_or_default(m_db);
        if (m_retry->parsed()) return run_files_retry(db, m_path);
        return run_files_list(db, m_quarantined, m_format);
    }

private:
    CLI::App* m_retry = nullptr;
    std::string m_db, m_format = "text", m_path;
    bool m_quarantined = false;
};

}  // namespace

std::unique_ptr<Command> make_files_command() { return std::make_unique<FilesCommand>(); }

}  // namespace perfwatch::cli
