#include "app/config.hpp"

#include <sys/stat.h>

#include <yaml-cpp/yaml.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <boost/asio/ip/address.hpp>
#include <filesystem>

#include "core/file.hpp"
#include "notify/sinks.hpp"
#include "core/text.hpp"

namespace perfwatch {

namespace {

// A configuration line as quoted under a diagnostic, with secret values masked: the value of a
// key naming a secret (url, password, token, secret, api_key, *_url of a receiver) and the
// password of any URL's user information.
std::string quoted_line(std::string_view text, int line) {
    std::string out = line_of(text, line);
    const std::size_t key_start = out.find_first_not_of(" \t-");
    const std::size_t colon = out.find(':', key_start == std::string::npos ? 0 : key_start);
    if (key_start != std::string::npos && colon != std::string::npos) {
        const std::string key = ascii_lower(std::string_view(out).substr(key_start, colon - key_start));
        const bool secret = key == "url" || key == "webhook_url" || key == "smtp_url" || key == "api_key" ||
                            key.find("password") != std::string::npos || key.find("token") != std::string::npos ||
                            key.find("secret") != std::string::npos;
        const bool reference = key.ends_with("_file") || key.ends_with("_env");
        if (secret && !reference && out.find_first_not_of(" \t", colon + 1) != std::string::npos)
            return out.substr(0, colon + 1) + " <redacted>";
    }
    // scheme://user:password@host
    for (std::size_t at = out.find("://"); at != std::string::npos; at = out.find("://", at + 3)) {
        const std::size_t host_end = out.find_first_of("/ \t\"'", at + 3);
        const std::size_t sign = out.rfind('@', host_end == std::string::npos ? out.size() : host_end);
        if (sign == std::string::npos || sign < at + 3) continue;
        const std::size_t colon_in = out.find(':', at + 3);
        if (colon_in != std::string::npos && colon_in < sign) out.replace(colon_in + 1, sign - colon_in - 1, "<redacted>");
    }
    return out;
}

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
                // A postgresql:// URI is not a path.
                if (auto v = scalar(kv.second, key))
                    m_out.config.database = v->find("://") != std::string::npos ? *v : resolve(*v);
            } else if (key == "database_password_file") {
                if (auto v = scalar(kv.second, key)) m_out.config.database_password_file = resolve(*v);
            } else if (key == "rules") {
                rules(kv.second);
            } else if (key == "converters") {
                converters(kv.second);
            } else if (key == "path_templates") {
                path_templates(kv.second);
            } else if (key == "watch") {
                watch_list(kv.second);
            } else if (key == "workers") {
                if (auto v = integer(kv.second, key, 0, 256)) m_out.config.workers = *v;
            } else if (key == "lease") {
                if (auto v = duration(kv.second, key)) m_out.config.lease = *v;
            } else if (key == "job_timeout") {
                if (auto v = duration(kv.second, key)) m_out.config.job_timeout = *v;
            } else if (key == "quiet_period") {
                if (auto v = duration(kv.second, key)) m_out.config.quiet_period = *v;
            } else if (key == "shutdown_timeout") {
                if (auto v = duration(kv.second, key)) m_out.config.shutdown_timeout = *v;
            } else if (key == "listen") {
                if (auto v = scalar(kv.second, key)) {
                    if (*v != "off" && !split_listen_address(*v))
                        diag(kv.second.Mark(), fmt::format("'listen' must be ADDRESS:PORT such as 127.0.0.1:9464, "
                                                           "or off; found '{}'", *v));
                    else
                        m_out.config.listen = *v;
                }
            } else if (key == "reports") {
                reports(kv.second);
            } else if (key == "dashboard") {
                dashboard(kv.second);
            } else if (key == "receivers") {
                receivers(kv.second);
            } else if (key == "route") {
                m_out.config.route = route(kv.second, 0);
            } else if (key == "inhibit_rules") {
                inhibit_rules(kv.second);
            } else if (key == "retention") {
                retention(kv.second);
            } else if (key == "reader") {
                reader(kv.second);
            } else if (key == "log_level") {
                if (auto v = scalar(kv.second, key)) {
                    static constexpr std::array k_levels{"debug", "info", "notice", "warning", "error"};
                    if (std::find(k_levels.begin(), k_levels.end(), *v) == k_levels.end())
                        diag(kv.second.Mark(), fmt::format("'log_level' must be debug, info, notice, warning or "
                                                           "error; found '{}'", *v));
                    else
                        m_out.config.log_level = *v;
                }
            } else {
                diag(kv.first.Mark(), fmt::format("unknown setting '{}' (expected database, database_password_file, rules, converters, "
                                                  "path_templates, watch, workers, quiet_period, lease, job_timeout, listen, "
                                                  "shutdown_timeout, log_level, reports, dashboard, receivers, route, inhibit_rules, retention or reader)",
                                                  key));
            }
        }
        check_overlaps();
        check_routes(root);
        return std::move(m_out);
    }

private:
    void diag(const YAML::Mark& m, std::string message) {
        Diagnostic d;
        d.loc = SourceLoc{m_file, m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0};
        d.message = std::move(message);
        d.source_line = d.loc.line > 0 ? quoted_line(m_text, d.loc.line) : std::string();
        m_out.diagnostics.push_back(std::move(d));
    }

    std::optional<std::string> scalar(const YAML::Node& n, std::string_view key) {
        if (!n.IsScalar()) {
            diag(n.Mark(), fmt::format("'{}' must be a single value", key));
            return std::nullopt;
        }
        return n.Scalar();
    }

    // retention: {samples_days: 90, runs_days: 730}
    void retention(const YAML::Node& n) {
        if (!n.IsMap()) {
            diag(n.Mark(), "'retention' must be a mapping with samples_days and/or runs_days");
            return;
        }
        for (const auto& kv : n) {
            const std::string key = kv.first.as<std::string>("");
            if (key == "samples_days") m_out.config.retention_samples_days = integer(kv.second, key, 1, 36500);
            else if (key == "runs_days") m_out.config.retention_runs_days = integer(kv.second, key, 1, 36500);
            else diag(kv.first.Mark(), fmt::format("unknown retention setting '{}' (expected samples_days or runs_days)", key));
        }
    }

    // reader: {isolation: process, memory_mb: 4096, cpu_seconds: 600, wall_seconds: 900, output_mb: 256,
    //          reports_per_process: 100}
    void reader(const YAML::Node& n) {
        if (!n.IsMap()) {
            diag(n.Mark(), "'reader' must be a mapping of isolation, memory_mb, cpu_seconds, wall_seconds, output_mb and "
                           "reports_per_process");
            return;
        }
        ReaderOptions& r = m_out.config.reader;
        const auto set = [&](std::uint64_t& out, const YAML::Node& v, std::string_view key, int high) {
            if (auto got = integer(v, key, 1, high)) out = static_cast<std::uint64_t>(*got);
        };
        for (const auto& kv : n) {
            const std::string key = kv.first.as<std::string>("");
            if (key == "isolation") {
                if (auto v = scalar(kv.second, key)) {
                    if (*v == "process") r.isolation = ReaderIsolation::process;
                    else if (*v == "none") r.isolation = ReaderIsolation::in_process;
                    else diag(kv.second.Mark(), fmt::format("'isolation' must be process or none; found '{}'", *v));
                }
            } else if (key == "memory_mb") {
                set(r.limits.memory_mb, kv.second, key, 1 << 20);
            } else if (key == "cpu_seconds") {
                set(r.limits.cpu_seconds, kv.second, key, 86400);
            } else if (key == "wall_seconds") {
                set(r.limits.wall_seconds, kv.second, key, 86400);
            } else if (key == "output_mb") {
                set(r.limits.output_mb, kv.second, key, 1 << 16);
            } else if (key == "reports_per_process") {
                set(r.reports_per_process, kv.second, key, 1 << 20);
            } else {
                diag(kv.first.Mark(), fmt::format("unknown reader setting '{}' (expected isolation, memory_mb, cpu_seconds, "
                                                  "wall_seconds, output_mb or reports_per_process)",
                                                  key));
            }
        }
    }

    std::optional<int> integer(const YAML::Node& n, std::string_view key, int low, int high) {
        auto v = scalar(n, key);
        if (!v) return std::nullopt;
        int out = 0;
        const auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
        if (ec != std::errc() || p != v->data() + v->size() || out < low || out > high) {
            diag(n.Mark(), fmt::format("'{}' must be a whole number from {} to {}; found '{}'", key, low, high, *v));
            return std::nullopt;
        }
        return out;
    }

    // "500ms", "2s", "1m", "4h", or a plain number of seconds.
    std::optional<std::chrono::milliseconds> duration(const YAML::Node& n, std::string_view key) {
        auto v = scalar(n, key);
        if (!v) return std::nullopt;
        std::string t = *v;
        double scale = 1000;
        if (t.ends_with("ms")) {
            scale = 1;
            t.resize(t.size() - 2);
        } else if (t.ends_with("s")) {
            t.pop_back();
        } else if (t.ends_with("m")) {
            scale = 60000;
            t.pop_back();
        } else if (t.ends_with("h")) {
            scale = 3600000;
            t.pop_back();
        }
        double number = -1;
        const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), number);
        if (ec != std::errc() || p != t.data() + t.size() || number < 0 || t.empty()) {
            diag(n.Mark(), fmt::format("'{}' must be a duration such as 500ms, 2s, 1m or 4h; found '{}'", key, *v));
            return std::nullopt;
        }
        return std::chrono::milliseconds(static_cast<long long>(number * scale));
    }

    std::vector<std::string> string_list(const YAML::Node& n, std::string_view key) {
        std::vector<std::string> out;
        if (n.IsScalar()) {
            out.push_back(n.Scalar());
        } else if (!n.IsSequence()) {
            diag(n.Mark(), fmt::format("'{}' must be a list of globs such as \"*.csv\"", key));
        } else {
            for (const auto& item : n)
                if (auto v = scalar(item, key)) out.push_back(*v);
        }
        return out;
    }

    void watch_list(const YAML::Node& n) {
        if (!n.IsSequence()) {
            diag(n.Mark(), "'watch' must be a list of directories, each a mapping with at least 'path'");
            return;
        }
        for (const auto& item : n) {
            if (!item.IsMap()) {
                diag(item.Mark(), "a watched directory must be a mapping with 'path' (and recursive, include, "
                                  "exclude, labels, path_template)");
                continue;
            }
            WatchSpec spec;
            spec.line = item.Mark().line + 1;
            spec.col = item.Mark().column + 1;
            std::optional<std::string> template_text;
            YAML::Mark template_mark;
            for (const auto& kv : item) {
                const std::string key = kv.first.as<std::string>("");
                if (key == "path") {
                    if (auto v = scalar(kv.second, key)) spec.path = resolve(*v);
                } else if (key == "recursive") {
                    bool value = true;
                    if (!kv.second.IsScalar() || !YAML::convert<bool>::decode(kv.second, value))
                        diag(kv.second.Mark(), "'recursive' must be true or false");
                    spec.recursive = value;
                } else if (key == "include") {
                    spec.include = string_list(kv.second, key);
                } else if (key == "exclude") {
                    spec.exclude = string_list(kv.second, key);
                } else if (key == "labels") {
                    if (!kv.second.IsMap()) {
                        diag(kv.second.Mark(), "'labels' must be a mapping of label names to values");
                        continue;
                    }
                    for (const auto& label : kv.second)
                        if (auto v = scalar(label.second, label.first.as<std::string>("")))
                            spec.labels[label.first.as<std::string>("")] = *v;
                } else if (key == "path_template") {
                    if (auto v = scalar(kv.second, key)) {
                        template_text = *v;
                        template_mark = kv.second.Mark();
                    }
                } else {
                    diag(kv.first.Mark(), fmt::format("unknown watch setting '{}' (expected path, recursive, "
                                                      "include, exclude, labels or path_template)",
                                                      key));
                }
            }
            if (spec.path.empty()) {
                diag(item.Mark(), "a watched directory needs 'path'");
                continue;
            }
            if (!std::filesystem::path(spec.path).is_absolute())
                spec.path = std::filesystem::absolute(spec.path).lexically_normal().string();
            while (spec.path.size() > 1 && spec.path.ends_with('/')) spec.path.pop_back();
            if (template_text) {
                // A relative template is matched from the watched directory down.
                const std::string full =
                    template_text->starts_with('/') ? *template_text : spec.path + "/" + *template_text;
                std::string error;
                if (auto t = PathTemplate::compile(full, error))
                    spec.path_template = std::move(*t);
                else
                    diag(template_mark, fmt::format("path template '{}': {}", *template_text, error));
            }
            m_out.config.watch.push_back(std::move(spec));
        }
    }

    // A secret's value from a file (trailing newline dropped) or an environment variable; the
    // messages name the file or variable, never the value.
    std::optional<std::string> secret(const YAML::Node& n, const std::string& key, const std::string& receiver,
                                      std::string& source) {
        auto v = scalar(n, key);
        if (!v) return std::nullopt;
        if (key.ends_with("_env")) {
            source = "environment variable " + *v;
            const char* value = std::getenv(v->c_str());
            if (value == nullptr || *value == '\0') {
                diag(n.Mark(), fmt::format("receiver '{}': environment variable {} is not set", receiver, *v));
                return std::nullopt;
            }
            return std::string(value);
        }
        const std::string path = resolve(*v);
        source = "file " + path;
        auto text = read_whole_file(path);
        if (!text) {
            diag(n.Mark(), fmt::format("receiver '{}': cannot read {}", receiver, path));
            return std::nullopt;
        }
        std::string value = std::move(*text);
        while (!value.empty() && (value.back() == '\n' || value.back() == '\r' || value.back() == ' ')) value.pop_back();
        return value;
    }

    // A `base_url`: http:// or https://, given a trailing slash.
    std::optional<std::string> base_url(const YAML::Node& n) {
        auto v = scalar(n, "base_url");
        if (!v) return std::nullopt;
        if (!v->starts_with("http://") && !v->starts_with("https://")) {
            diag(n.Mark(), fmt::format("'base_url' must start with http:// or https://; found '{}'", *v));
            return std::nullopt;
        }
        return v->ends_with('/') ? *v : *v + "/";
    }

    void reports(const YAML::Node& n) {
        if (!n.IsMap()) {
            diag(n.Mark(), "'reports' must be a mapping with 'directory' (and 'base_url')");
            return;
        }
        for (const auto& kv : n) {
            const std::string key = kv.first.as<std::string>("");
            if (key == "directory") {
                if (auto v = scalar(kv.second, key)) m_out.config.reports_directory = resolve(*v);
            } else if (key == "base_url") {
                if (auto v = base_url(kv.second)) m_out.config.reports_base_url = *v;
            } else {
                diag(kv.first.Mark(), fmt::format("unknown reports setting '{}' (expected directory or base_url)", key));
            }
        }
        if (!m_out.config.reports_base_url.empty() && m_out.config.reports_directory.empty())
            diag(n.Mark(), "'reports' has a base_url but no 'directory' to write the reports to");
    }

    void dashboard(const YAML::Node& n) {
        if (!n.IsMap()) {
            diag(n.Mark(), "'dashboard' must be a mapping with 'base_url' and/or 'token_file'");
            return;
        }
        for (const auto& kv : n) {
            const std::string key = kv.first.as<std::string>("");
            if (key == "base_url") {
                if (auto v = base_url(kv.second)) m_out.config.dashboard_base_url = *v;
            } else if (key == "token_name") {
                if (auto v = scalar(kv.second, key)) m_out.config.dashboard_token_name = *v;
            } else if (key == "commit_url") {
                if (auto v = scalar(kv.second, key)) {
                    m_out.config.dashboard_commit_url = *v;
                    if ((!v->starts_with("http://") && !v->starts_with("https://")) || v->find("{commit}") == std::string::npos)
                        diag(kv.second.Mark(), fmt::format("'commit_url' must be an http:// or https:// URL holding {{commit}}; "
                                                           "found '{}'",
                                                           *v));
                }
            } else if (key == "token_file") {
                if (auto v = scalar(kv.second, key)) {
                    m_out.config.dashboard_token_file = resolve(*v);
                    if (auto token = read_dashboard_token(m_out.config.dashboard_token_file); !token)
                        diag(kv.second.Mark(), token.error().message);
                }
            } else {
                diag(kv.first.Mark(), fmt::format("unknown dashboard setting '{}' (expected base_url, commit_url, token_file or token_name)", key));
            }
        }
    }

    void receivers(const YAML::Node& n) {
        if (!n.IsSequence()) {
            diag(n.Mark(), "'receivers' must be a list of receivers, each with 'name' and 'type'");
            return;
        }
        for (const auto& item : n) {
            if (!item.IsMap()) {
                diag(item.Mark(), "a receiver must be a mapping with 'name' and 'type'");
                continue;
            }
            Receiver r;
            r.line = item.Mark().line + 1;
            r.name = item["name"] && item["name"].IsScalar() ? item["name"].Scalar() : "";
            bool has_url = false, has_rate = false;
            for (const auto& kv : item) {
                const std::string key = kv.first.as<std::string>("");
                if (key == "name") {
                    if (!kv.second.IsScalar() || kv.second.Scalar().empty()) diag(kv.second.Mark(), "'name' must be a name");
                } else if (key == "type") {
                    if (auto v = scalar(kv.second, key)) {
                        if (find_sink(*v) == nullptr)
                            diag(kv.second.Mark(), fmt::format("receiver '{}': unknown type '{}' (expected {})", r.name,
                                                               *v, fmt::join(receiver_types(), ", ")));
                        else
                            r.type = *v;
                    }
                } else if (key == "url") {
                    diag(kv.second.Mark(), fmt::format("receiver '{}': a webhook URL is a secret: give it with "
                                                       "url_file or url_env, not in the configuration",
                                                       r.name));
                } else if (key == "url_file" || key == "url_env") {
                    has_url = true;
                    if (auto v = secret(kv.second, key, r.name, r.url_source)) r.url = *v;
                } else if (key == "smtp_url") {
                    has_url = true;
                    if (auto v = scalar(kv.second, key)) {
                        r.url = *v;
                        r.url_source = *v;
                        if (!v->starts_with("smtp://") && !v->starts_with("smtps://"))
                            diag(kv.second.Mark(), fmt::format("receiver '{}': smtp_url must start with smtp:// or "
                                                               "smtps://",
                                                               r.name));
                    }
                } else if (key == "token") {
                    diag(kv.second.Mark(), fmt::format("receiver '{}': an API token is a secret: give it with "
                                                       "token_file or token_env, not in the configuration",
                                                       r.name));
                } else if (key == "token_file" || key == "token_env") {
                    if (auto v = secret(kv.second, key, r.name, r.token_source)) r.token = *v;
                } else if (key == "repository") {
                    if (auto v = scalar(kv.second, key)) r.repository = *v;
                } else if (key == "api_url") {
                    if (auto v = scalar(kv.second, key)) {
                        r.api_url = *v;
                        while (r.api_url.ends_with('/')) r.api_url.pop_back();
                        if (!v->starts_with("http://") && !v->starts_with("https://"))
                            diag(kv.second.Mark(), fmt::format("receiver '{}': api_url must start with http:// or "
                                                               "https://; found '{}'",
                                                               r.name, *v));
                    }
                } else if (key == "password") {
                    diag(kv.second.Mark(), fmt::format("receiver '{}': give the password with password_file or "
                                                       "password_env, not in the configuration",
                                                       r.name));
                } else if (key == "password_file" || key == "password_env") {
                    std::string ignored;
                    if (auto v = secret(kv.second, key, r.name, ignored)) r.password = *v;
                } else if (key == "username") {
                    if (auto v = scalar(kv.second, key)) r.username = *v;
                } else if (key == "from") {
                    if (auto v = scalar(kv.second, key)) r.from = *v;
                } else if (key == "to") {
                    r.to = string_list(kv.second, key);
                } else if (key == "starttls") {
                    bool value = true;
                    if (!kv.second.IsScalar() || !YAML::convert<bool>::decode(kv.second, value))
                        diag(kv.second.Mark(), "'starttls' must be true or false");
                    r.starttls = value;
                } else if (key == "allow_unauthenticated") {
                    bool value = false;
                    if (!kv.second.IsScalar() || !YAML::convert<bool>::decode(kv.second, value))
                        diag(kv.second.Mark(), "'allow_unauthenticated' must be true or false");
                    r.allow_unauthenticated = value;
                } else if (key == "path") {
                    if (auto v = scalar(kv.second, key)) r.path = resolve(*v);
                } else if (key == "ca_file") {
                    if (auto v = scalar(kv.second, key)) r.ca_file = resolve(*v);
                } else if (key == "rate_limit") {
                    has_rate = true;
                    if (auto v = duration(kv.second, key)) r.rate_limit = *v;
                } else if (key == "timeout") {
                    if (auto v = duration(kv.second, key)) r.timeout = *v;
                } else if (key == "max_attempts") {
                    if (auto v = integer(kv.second, key, 1, 1000)) r.max_attempts = *v;
                } else {
                    diag(kv.first.Mark(), fmt::format("unknown receiver setting '{}' (expected name, type, url_file, "
                                                      "url_env, smtp_url, from, to, username, password_file, "
                                                      "password_env, starttls, allow_unauthenticated, path, ca_file, "
                                                      "repository, api_url, token_file, token_env, rate_limit, "
                                                      "timeout or max_attempts)",
                                                      key));
                }
            }
            if (r.name.empty()) {
                diag(item.Mark(), "a receiver needs 'name'");
                continue;
            }
            if (r.type.empty()) {
                if (!item["type"]) diag(item.Mark(), fmt::format("receiver '{}' needs 'type'", r.name));
                continue;
            }
            const Sink& sink = *find_sink(r.type);
            for (const std::string& lack : sink.missing(r, has_url))
                diag(item.Mark(), fmt::format("receiver '{}' {}", r.name, lack));
            if (!has_rate) r.rate_limit = sink.default_rate_limit();
            for (const Receiver& other : m_out.config.receivers)
                if (other.name == r.name)
                    diag(item.Mark(), fmt::format("receiver '{}' is defined twice (also at line {})", r.name, other.line));
            m_out.config.receivers.push_back(std::move(r));
        }
    }

    // Label matchers (label, or severity/rule, to a value or glob), as routes and inhibit rules take them.
    std::map<std::string, std::string> matchers(const YAML::Node& n, std::string_view key) {
        std::map<std::string, std::string> out;
        if (!n.IsMap()) {
            diag(n.Mark(), fmt::format("'{}' must be a mapping of labels (or severity, rule) to values", key));
            return out;
        }
        for (const auto& m : n) {
            const std::string label = m.first.as<std::string>("");
            if (auto v = scalar(m.second, label)) {
                if (label == "severity" && !severity_from_string(*v))
                    diag(m.second.Mark(), fmt::format("severity must be info, warning or error; found '{}'", *v));
                out[label] = *v;
            }
        }
        return out;
    }

    void inhibit_rules(const YAML::Node& n) {
        if (!n.IsSequence()) {
            diag(n.Mark(), "'inhibit_rules' must be a list of mappings with source_match, target_match and equal");
            return;
        }
        for (const auto& item : n) {
            if (!item.IsMap()) {
                diag(item.Mark(), "an inhibit rule must be a mapping with source_match, target_match and equal");
                continue;
            }
            InhibitRule rule;
            rule.line = item.Mark().line + 1;
            rule.col = item.Mark().column + 1;
            bool has_source = false, has_target = false;
            for (const auto& kv : item) {
                const std::string key = kv.first.as<std::string>("");
                if (key == "source_match") {
                    rule.source_match = matchers(kv.second, key);
                    has_source = true;
                } else if (key == "target_match") {
                    rule.target_match = matchers(kv.second, key);
                    has_target = true;
                } else if (key == "equal") {
                    if (!kv.second.IsSequence())
                        diag(kv.second.Mark(), "'equal' must be a list of labels (entity, project, ...)");
                    else
                        for (const auto& label : kv.second)
                            if (auto v = scalar(label, key)) rule.equal.push_back(*v);
                } else {
                    diag(kv.first.Mark(), fmt::format("unknown inhibit rule setting '{}' (expected source_match, "
                                                      "target_match or equal)",
                                                      key));
                }
            }
            if (!has_source) diag(item.Mark(), "an inhibit rule needs 'source_match' (the alerts that mute others)");
            if (!has_target) diag(item.Mark(), "an inhibit rule needs 'target_match' (the alerts they mute)");
            m_out.config.inhibit_rules.push_back(std::move(rule));
        }
    }

    std::optional<Route> route(const YAML::Node& n, int depth) {
        if (!n.IsMap()) {
            diag(n.Mark(), "a route must be a mapping (receiver, match, group_by, repeat_interval, continue, routes)");
            return std::nullopt;
        }
        Route r;
        r.line = n.Mark().line + 1;
        for (const auto& kv : n) {
            const std::string key = kv.first.as<std::string>("");
            if (key == "receiver") {
                if (auto v = scalar(kv.second, key)) {
                    r.receiver = *v;
                    m_route_receivers.emplace_back(*v, kv.second.Mark());
                }
            } else if (key == "match") {
                if (depth == 0) diag(kv.first.Mark(), "the top route takes every alert: put 'match' on its routes");
                r.match = matchers(kv.second, key);
            } else if (key == "group_by") {
                r.group_by = string_list(kv.second, key);
            } else if (key == "repeat_interval") {
                if (auto v = duration(kv.second, key)) r.repeat_interval = *v;
            } else if (key == "group_wait") {
                if (auto v = duration(kv.second, key)) r.group_wait = *v;
            } else if (key == "group_interval") {
                if (auto v = duration(kv.second, key)) r.group_interval = *v;
            } else if (key == "continue") {
                bool value = false;
                if (!kv.second.IsScalar() || !YAML::convert<bool>::decode(kv.second, value))
                    diag(kv.second.Mark(), "'continue' must be true or false");
                r.continue_matching = value;
            } else if (key == "routes") {
                if (!kv.second.IsSequence()) {
                    diag(kv.second.Mark(), "'routes' must be a list of routes");
                    continue;
                }
                for (const auto& child : kv.second)
                    if (auto c = route(child, depth + 1)) r.routes.push_back(std::move(*c));
            } else {
                diag(kv.first.Mark(), fmt::format("unknown route setting '{}' (expected receiver, match, group_by, "
                                                  "group_wait, group_interval, repeat_interval, continue or routes)",
                                                  key));
            }
        }
        if (depth == 0 && r.receiver.empty())
            diag(n.Mark(), "the top route needs 'receiver' (where alerts no other route takes go)");
        return r;
    }

    void check_routes(const YAML::Node& root) {
        for (const auto& [name, mark] : m_route_receivers) {
            const auto& list = m_out.config.receivers;
            if (std::none_of(list.begin(), list.end(), [&](const Receiver& r) { return r.name == name; }))
                diag(mark, fmt::format("route names receiver '{}', which 'receivers' does not define", name));
        }
        if (!m_out.config.receivers.empty() && !m_out.config.route)
            diag(root["receivers"].Mark(), "receivers are defined but no 'route' sends alerts to them");
    }

    // inotify watches a directory once: a watched directory inside another is refused.
    void check_overlaps() {
        const auto& list = m_out.config.watch;
        for (std::size_t i = 0; i < list.size(); ++i)
            for (std::size_t j = 0; j < list.size(); ++j) {
                if (i == j) continue;
                const auto& inner = list[i].path;
                const auto& outer = list[j].path;
                const bool same = inner == outer;
                if ((same && i > j) || (!same && inner.starts_with(outer + "/"))) {
                    Diagnostic d;
                    d.loc = SourceLoc{m_file, list[i].line, list[i].col};
                    d.message = same ? fmt::format("'{}' is watched twice (also at line {})", inner, list[j].line)
                                     : fmt::format("'{}' is inside the watched directory '{}' (line {}); watch "
                                                   "the outer one recursively or exclude the inner one",
                                                   inner, outer, list[j].line);
                    d.source_line = quoted_line(m_text, d.loc.line);
                    m_out.diagnostics.push_back(std::move(d));
                }
            }
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
    std::vector<std::pair<std::string, YAML::Mark>> m_route_receivers;
};

}  // namespace

std::vector<Diagnostic> check_watch_directories(const Config& config) {
    std::vector<Diagnostic> out;
    std::string text;
    if (!config.path.empty())
        if (auto t = read_whole_file(config.path)) text = std::move(*t);
    for (const WatchSpec& w : config.watch) {
        std::error_code ec;
        if (std::filesystem::is_directory(w.path, ec)) continue;
        Diagnostic d;
        d.loc = SourceLoc{config.path, w.line, w.col};
        d.message = fmt::format("watched directory '{}' does not exist or is not a directory", w.path);
        d.source_line = quoted_line(text, w.line);
        out.push_back(std::move(d));
    }
    return out;
}

Result<std::string> read_dashboard_token(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return fail(path, 0, "cannot read the dashboard token file");
    if ((st.st_mode & 077) != 0)
        return fail(path, 0, "the dashboard token file may be read by other users (chmod 600 it)");
    auto text = read_whole_file(path);
    if (!text) return fail(path, 0, "cannot read the dashboard token file");
    std::string token = text->substr(0, text->find('\n'));
    while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
    if (token.size() < 16) return fail(path, 0, "the dashboard token must be at least 16 characters");
    return token;
}

std::optional<std::pair<std::string, unsigned short>> split_listen_address(const std::string& text) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) return std::nullopt;
    std::string host = text.substr(0, colon);
    if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
    const std::string port_text = text.substr(colon + 1);
    unsigned port = 0;
    const auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || p != port_text.data() + port_text.size() || port > 65535) return std::nullopt;
    boost::system::error_code bad;
    boost::asio::ip::make_address(host, bad);
    if (bad) return std::nullopt;
    return std::pair{host, static_cast<unsigned short>(port)};
}

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

void export_password_file(const Config& config) {
    if (!config.database_password_file.empty()) ::setenv("PERFWATCH_DB_PASSWORD_FILE", config.database_password_file.c_str(), 0);
}

}  // namespace perfwatch
