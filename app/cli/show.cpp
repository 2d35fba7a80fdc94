#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/vocabulary.hpp"

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

struct ShowOptions {
    std::string db_path;
    long long run_id = 0;
    std::string format = "text";
};

std::string show_text(const StoredRun& run) {
    const RunBatch& b = run.batch;
    std::string out = fmt::format("run {}\n  source:   {}\n  format:   {}", run.id, b.source, b.format);
    if (!b.format_detail.empty()) out += fmt::format(" ({})", b.format_detail);
    out += fmt::format("\n  sha256:   {}\n", b.sha256);
    if (!b.tool_version.empty()) out += fmt::format("  version:  {}\n", b.tool_version);
    if (b.captured_at) out += fmt::format("  captured: {}\n", *b.captured_at);
    out += fmt::format("  ingested: {}\n", run.ingested_at);
    for (const auto& [k, v] : b.labels) out += fmt::format("  label:    {}={}\n", k, v);
    for (const auto& n : b.notes) out += fmt::format("  note:     {}\n", n);
    for (const Entity& e : b.entities) {
        const bool child = e.kind == EntityKind::launch;
        const std::string pad = child ? "    " : "  ";
        out += fmt::format("\n{}{} '{}'\n", pad, to_string(e.kind), e.name);
        for (const auto& [k, v] : e.attributes) out += fmt::format("{}  {:<34} {}\n", pad, k, v);
        for (const Metric& m : e.metrics) {
            out += fmt::format("{}  {:<34} {:>16} {:<8}", pad, m.name(), value_text(m.value), m.unit());
            if (!m.tool_name().empty())
                out += fmt::format(" ({}{}{})", m.tool_name(), m.tool_unit().empty() ? "" : ", ", m.tool_unit());
            out += '\n';
        }
        for (const ToolFinding& f : e.tool_findings) {
            out += fmt::format("{}  {} {}", pad, f.type, f.rule.empty() ? f.section : f.rule);
            if (f.speedup_pct)
                out += fmt::format(" (est. {}speedup {}%)", f.speedup_type.empty() ? "" : f.speedup_type + " ",
                                   value_text(*f.speedup_pct));
            out += fmt::format(": {}\n", f.text);
        }
    }
    return out;
}

std::string show_json(const StoredRun& run) {
    const RunBatch& b = run.batch;
    nlohmann::json doc = {{"id", run.id},
                          {"source", b.source},
                          {"sha256", b.sha256},
                          {"format", b.format},
                          {"format_detail", b.format_detail},
                          {"tool_version", b.tool_version},
                          {"captured_at", b.captured_at ? nlohmann::json(*b.captured_at) : nlohmann::json(nullptr)},
                          {"ingested_at", run.ingested_at},
                          {"labels", b.labels},
                          {"notes", b.notes}};
    nlohmann::json entities = nlohmann::json::array();
    for (const Entity& e : b.entities) {
        nlohmann::json metrics = nlohmann::json::object(), units = nlohmann::json::object(),
                       tool = nlohmann::json::object();
        for (const Metric& m : e.metrics) {
            metrics[m.name()] = m.value;
            units[m.name()] = m.unit();
            if (!m.tool_name().empty()) tool[m.name()] = {{"name", m.tool_name()}, {"unit", m.tool_unit()}};
        }
        nlohmann::json attributes = nlohmann::json::object();
        for (const auto& [k, v] : e.attributes) attributes[k.str()] = v;
        nlohmann::json findings = nlohmann::json::array();
        for (const ToolFinding& f : e.tool_findings)
            findings.push_back({{"rule", f.rule},
                                {"type", f.type},
                                {"section", f.section},
                                {"text", f.text},
                                {"speedup_type", f.speedup_type},
                                {"speedup_pct", f.speedup_pct ? nlohmann::json(*f.speedup_pct) : nlohmann::json(nullptr)}});
        nlohmann::json je = {{"kind", std::string(to_string(e.kind))},
                             {"name", e.name},
                             {"metrics", metrics},
                             {"units", units},
                             {"tool_metrics", tool},
                             {"attributes", attributes},
                             {"tool_findings", findings}};
        if (e.parent >= 0) je["parent"] = e.parent;
        entities.push_back(std::move(je));
    }
    doc["entities"] = std::move(entities);
    return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

int run_show(const ShowOptions& options) {
    auto db = open_db(options.db_path);
    if (!db) return 2;
    auto run = db->load(options.run_id);
    if (!run) {
        print_error(run.error());
        return 2;
    }
    if (!*run) {
        fmt::print(stderr, "perfwatch: error: {}: no run {}\n", db->name(), options.run_id);
        return 2;
    }
    fmt::print("{}", options.format == "json" ? show_json(**run) : show_text(**run));
    return 0;
}

class ShowCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("show", "Print a stored run: labels, entities, metrics");
        cmd->add_option("--db", m_options.db_path, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or perfwatch.db)");
        cmd->add_option("run", m_options.run_id, "Run id")->required();
        cmd->add_option("--format", m_options.format, "text or json")->check(CLI::IsMember({"text", "json"}));
        return cmd;
    }
    int run(const Context& c) override {
        m_options.db_path = c.db_or_default(m_options.db_path);
        return run_show(m_options);
    }

private:
    ShowOptions m_options;
};

}  // namespace

std::unique_ptr<Command> make_show_command() { return std::make_unique<ShowCommand>(); }

}  // namespace perfwatch::cli
