#include "app/config.hpp"

#include <yaml-cpp/yaml.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <filesystem>

#include "storage/file.hpp"

namespace perfwatch {

namespace {

class ConfigReader {
public:
    ConfigReader(std::string file, std::string_view text) : m_file(std::move(file)), m_text(text) {}

    ConfigLoad run() {
        m_out.config.path = m_file;
        YAML::Node root;
        try {
            root = YAML::Load(std::string(m_text));
        } catch (const YAML::Exception& e) {
            diag(e.mark, fmt::format("invalid YAML: {}", e.msg));
            return std::move(m_out);
        }
        if (!root || root.IsNull()) return std::move(m_out);
        if (!root.IsMap()) {
            diag(root.Mark(), "expected a mapping of settings (database, rules, converters)");
            return std::move(m_out);
        }
        for (const auto& kv : root) {
            const std::string key = kv.first.as<std::string>("");
            if (key == "database") {
                if (auto v = scalar(kv.second, key)) m_out.config.database = resolve(*v);
            } else if (key == "rules") {
                rules(kv.second);
            } else if (key == "converters") {
                converters(kv.second);
            } else if (key == "path_templates") {
                path_templates(kv.second);
            } else {
                diag(kv.first.Mark(), fmt::format("unknown setting '{}' (expected database, rules, converters or "
                                                  "path_templates)",
                                                  key));
            }
        }
        return std::move(m_out);
    }

private:
    void diag(const YAML::Mark& m, std::string message) {
        Diagnostic d;
        d.loc = SourceLoc{m_file, m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0};
        d.message = std::move(message);
        d.source_line = d.loc.line > 0 ? line_of(m_text, d.loc.line) : std::string();
        m_out.diagnostics.push_back(std::move(d));
    }

    std::optional<std::string> scalar(const YAML::Node& n, std::string_view key) {
        if (!n.IsScalar()) {
            diag(n.Mark(), fmt::format("'{}' must be a single value", key));
            return std::nullopt;
        }
        return n.Scalar();
    }

    std::string resolve(const std::string& p) const {
        if (p.empty() || std::filesystem::path(p).is_absolute() || m_file.empty()) return p;
        const std::filesystem::path dir = std::filesystem::path(m_file).parent_path();
        return dir.empty() ? p : (dir / p).lexically_normal().string();
    }

    void rules(const YAML::Node& n) {
        if (n.IsScalar()) {
            m_out.config.rules.push_back(resolve(n.Scalar()));
            return;
        }
        if (!n.IsSequence()) {
            diag(n.Mark(), "'rules' must be a list of rule files");
            return;
        }
        for (const auto& item : n)
            if (auto v = scalar(item, "rules")) m_out.config.rules.push_back(resolve(*v));
    }

    void path_templates(const YAML::Node& n) {
        if (!n.IsSequence()) {
            diag(n.Mark(), "'path_templates' must be a list of templates such as /builds/{project}/{commit}/**");
            return;
        }
        for (const auto& item : n) {
            auto v = scalar(item, "path_templates");
            if (!v) continue;
            std::string error;
            if (auto t = PathTemplate::compile(*v, error))
                m_out.config.path_templates.push_back(std::move(*t));
            else
                diag(item.Mark(), fmt::format("path template '{}': {}", *v, error));
        }
    }

    void converters(const YAML::Node& n) {
        if (!n.IsSequence()) {
            diag(n.Mark(), "'converters' must be a list of {extension, command} entries");
            return;
        }
        for (const auto& item : n) {
            if (!item.IsMap()) {
                diag(item.Mark(), "a converter must be a mapping with 'extension' and 'command'");
                continue;
            }
            Converter c;
            bool has_command = false;
            for (const auto& kv : item) {
                const std::string key = kv.first.as<std::string>("");
                if (key == "extension") {
                    if (auto v = scalar(kv.second, key)) c.extension = *v;
                } else if (key == "command") {
                    has_command = true;  // a malformed one is reported here, not again as missing
                    if (!kv.second.IsSequence() || kv.second.size() == 0) {
                        diag(kv.second.Mark(), "'command' must be a non-empty list: the program, then its "
                                               "arguments (no shell; use \"{input}\" and \"{output}\")");
                        continue;
                    }
                    for (const auto& arg : kv.second)
                        if (auto v = scalar(arg, "command")) c.command.push_back(*v);
                } else if (key == "output_suffix") {
                    if (auto v = scalar(kv.second, key)) c.output_suffix = *v;
                } else if (key == "timeout") {
                    if (auto v = scalar(kv.second, key)) {
                        std::string t = *v;
                        if (t.ends_with("s")) t.pop_back();
                        int seconds = 0;
                        const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), seconds);
                        if (ec != std::errc() || p != t.data() + t.size() || seconds <= 0)
                            diag(kv.second.Mark(), fmt::format("'timeout' must be a number of seconds such as 600s, "
                                                               "found '{}'", *v));
                        else
                            c.timeout_s = seconds;
                    }
                } else {
                    diag(kv.first.Mark(), fmt::format("unknown converter setting '{}' (expected extension, command, "
                                                      "output_suffix or timeout)", key));
                }
            }
            if (c.extension.empty() || !c.extension.starts_with('.')) {
                diag(item.Mark(), "a converter needs 'extension', starting with a dot (\".nsys-rep\")");
                continue;
            }
            if (!has_command) {
                diag(item.Mark(), fmt::format("converter for {} has no 'command'", c.extension));
                continue;
            }
            auto& list = m_out.config.converters;
            std::erase_if(list, [&](const Converter& old) { return old.extension == c.extension; });
            list.insert(list.begin(), std::move(c));
        }
    }

    std::string m_file;
    std::string_view m_text;
    ConfigLoad m_out;
};

}  // namespace

bool ConfigLoad::ok() const { return !has_errors(diagnostics); }

ConfigLoad parse_config_text(const std::string& file, std::string_view text) { return ConfigReader(file, text).run(); }

ConfigLoad load_config(const std::string& path) {
    auto text = read_whole_file(path);
    if (text) return parse_config_text(path, *text);
    ConfigLoad out;
    Diagnostic d;
    d.loc.file = path;
    d.message = "cannot read the configuration: " + text.error().message;
    out.diagnostics.push_back(std::move(d));
    return out;
}

}  // namespace perfwatch
