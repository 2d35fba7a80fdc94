#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "collectors/collector.hpp"

#include "app/cli/command.hpp"
#include "app/cli/common.hpp"

namespace perfwatch::cli {

namespace {

struct IngestOptions {
    std::string db_path;
    LabelSources labels;
    std::vector<std::string> files;
    std::vector<Converter> converters = default_converters();
    ReaderOptions reader;
};

// 0 when every report was stored (or set aside because its converter tool is missing); 2 otherwise.
int run_ingest(const IngestOptions& options) {
    auto db = open_db(options.db_path);
    if (!db) return 2;
    int status = 0;
    for (const std::string& file : options.files) {
        auto ingested = ingest_one(*db, file, options.labels, options.converters, options.reader);
        if (!ingested) {
            print_error(ingested.error());
            if (!ingested.error().skipped) status = 2;
            continue;
        }
        for (auto& [stored, batch] : *ingested) {
            const std::string benchmark = label_value(batch.labels, "benchmark");
            const std::string session = batch.labels.contains("session")
                                            ? fmt::format(" session {}", label_value(batch.labels, "session"))
                                            : "";
            if (stored.inserted)
                fmt::print("run {}: {}{} ({}, {} kernels, {} launches; benchmark '{}'{})\n", stored.run_id, file,
                           session, batch.format, count_kind(batch, EntityKind::kernel),
                           value_text(batch.entities[batch.run_entity()].value("launches").value_or(0)), benchmark,
                           stored.content_run ? fmt::format("; same content as run {}", *stored.content_run) : "");
            else
                fmt::print("run {}: {}{} already stored (same content and labels; benchmark '{}')\n", stored.run_id,
                           file, session, benchmark);
        }
    }
    return status;
}

class IngestCommand final : public Command {
public:
    CLI::App* add(CLI::App& app) override {
        auto* cmd = app.add_subcommand("ingest", "Store profiler reports in the database");
        cmd->add_option("--db", m_options.db_path, "Database: SQLite file or postgresql:// URI (default $PERFWATCH_DB or perfwatch.db)");
        cmd->add_option("--label", m_labels, "Label KEY=VALUE for the runs (repeatable)")->allow_extra_args(false);
        cmd->add_option("files", m_options.files, "Report files")->required();
        return cmd;
    }
    int run(const Context& c) override {
        m_options.db_path = c.db_or_default(m_options.db_path);
        m_options.converters = c.config.converters;
        m_options.reader = c.config.reader;
        m_options.labels.path_templates = c.config.path_templates;
        if (!parse_labels(m_labels, m_options.labels.given)) return 2;
        return run_ingest(m_options);
    }

private:
    IngestOptions m_options;
    std::vector<std::string> m_labels;
};

}  // namespace

std::unique_ptr<Command> make_ingest_command() { return std::make_unique<IngestCommand>(); }

}  // namespace perfwatch::cli
