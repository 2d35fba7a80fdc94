#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/convert.hpp"
#include "collectors/labels.hpp"
#include "engine/rules.hpp"

namespace perfwatch {

// perfwatch's configuration file (YAML). Relative paths are taken from the file's directory.
struct Config {
    std::string path;                     // the file read; empty for the defaults
    std::optional<std::string> database;  // SQLite file
    std::vector<std::string> rules;       // rule files loaded after the shipped packs
    // Binary report converters: the defaults, with entries of the file replacing those of the
    // same extension and adding others.
    std::vector<Converter> converters = default_converters();
    // Labels from report paths: the first template that matches gives them.
    std::vector<PathTemplate> path_templates;
};

struct ConfigLoad {
    Config config;
    std::vector<Diagnostic> diagnostics;  // every problem, as file:line:col with the line and a caret
    bool ok() const;
};

// Reads a configuration; unknown keys and wrong types are errors, all of them collected.
ConfigLoad parse_config_text(const std::string& file, std::string_view text);
ConfigLoad load_config(const std::string& path);

}  // namespace perfwatch
