#include "engine/rules.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <set>
#include <sstream>

namespace perfwatch {

namespace {

constexpr std::array<std::string_view, 9> k_rule_keys{"id",      "title",        "severity",
                                                      "scope",   "when",         "message",
                                                      "estimated_speedup", "tool_finding", "min_share"};


class Reader {
public:
    Reader(const std::string& file, std::string_view text) : m_file(file), m_text(text) {}

    RuleFile run() {
        m_out.text = std::string(m_text);
        YAML::Node root;
        try {
            root = YAML::Load(std::string(m_text));
        } catch (const YAML::ParserException& e) {
            diag(e.mark, "", fmt::format("invalid YAML: {}", e.msg));
            return std::move(m_out);
        }
        if (!root || root.IsNull()) return std::move(m_out);  // an empty file holds no rules
        YAML::Node list;
        if (root.IsMap()) {
            for (const auto& kv : root) {
                const std::string key = kv.first.as<std::string>();
                if (key != "rules") diag(kv.first.Mark(), "", fmt::format("unknown top-level key '{}' (expected 'rules')", key));
            }
            list = root["rules"];
        } else if (root.IsSequence()) {
            list = root;
        }
        if (!list || !list.IsSequence()) {
            diag(root.Mark(), "", "expected a list of rules under 'rules:'");
            return std::move(m_out);
        }
        for (const auto& item : list) rule(item);
        return std::move(m_out);
    }

private:
    SourceLoc loc(const YAML::Mark& m) const { return SourceLoc{m_file, m.line + 1, m.column + 1}; }

    void diag(const YAML::Mark& m, const std::string& rule_id, std::string message,
              Diagnostic::Level level = Diagnostic::Level::error) {
        Diagnostic d;
        d.level = level;
        d.loc = loc(m);
        if (m.line < 0) d.loc.line = d.loc.col = 0;
        d.rule_id = rule_id;
        d.message = std::move(message);
        d.source_line = d.loc.line > 0 ? line_of(m_text, d.loc.line) : std::string();
        m_out.diagnostics.push_back(std::move(d));
    }

    std::optional<std::string> scalar(const YAML::Node& n, const std::string& id, std::string_view key) {
        if (!n.IsScalar()) {
            diag(n.Mark(), id, fmt::format("'{}' must be a single value", key));
            return std::nullopt;
        }
        return n.Scalar();
    }

    SourceText source_text(const YAML::Node& n, std::string text) {
        SourceText s;
        s.loc = loc(n.Mark());
        const std::string line = line_of(m_text, s.loc.line);
        const std::size_t col = static_cast<std::size_t>(n.Mark().column);
        const char first = col < line.size() ? line[col] : ' ';
        if (first == '"' || first == '\'') s.offset_shift = 1;
        if (first == '|' || first == '>' || text.find('\n') != std::string::npos) s.single_line = false;
        s.text = std::move(text);
        return s;
    }

    void rule(const YAML::Node& item) {
        if (!item.IsMap()) {
            diag(item.Mark(), "", "each rule must be a mapping with id, severity, scope, when and message");
            return;
        }
        RuleSpec r;
        r.loc = loc(item.Mark());
        if (const auto id = item["id"]; id && id.IsScalar()) r.id = id.Scalar();
        if (r.id.empty()) diag(item.Mark(), "", "rule has no 'id'");

        for (const auto& kv : item) {
            const std::string key = kv.first.Scalar();
            const YAML::Node& v = kv.second;
            if (key == "labels") {
                if (!v.IsMap()) {
                    diag(v.Mark(), r.id, "'labels' must be a mapping of names to values");
                    continue;
                }
                for (const auto& l : v) r.labels[l.first.Scalar()] = l.second.IsScalar() ? l.second.Scalar() : "";
                continue;
            }
            if (std::find(k_rule_keys.begin(), k_rule_keys.end(), key) == k_rule_keys.end()) {
                diag(kv.first.Mark(), r.id,
                     fmt::format("unknown key '{}' (expected one of: id, title, severity, scope, when, message, "
                                 "estimated_speedup, tool_finding, min_share, labels)",
                                 key));
                continue;
            }
            auto text = scalar(v, r.id, key);
            if (!text) continue;
            if (key == "title") {
                r.title = *text;
            } else if (key == "severity") {
                if (auto s = severity_from_string(*text))
                    r.severity = *s;
                else
                    diag(v.Mark(), r.id, fmt::format("severity '{}' is not one of info, warning, error", *text));
            } else if (key == "scope") {
                auto k = entity_kind_from_string(*text);
                if (k)
                    r.scope = *k;
                else
                    diag(v.Mark(), r.id,
                         fmt::format("scope '{}' is not one of run, kernel, launch, device, nvtx_range, api_call, "
                                     "memcpy",
                                     *text));
            } else if (key == "when") {
                r.when = source_text(v, *text);
            } else if (key == "message") {
                r.message = source_text(v, *text);
            } else if (key == "estimated_speedup") {
                r.estimated_speedup = source_text(v, *text);
            } else if (key == "tool_finding") {
                r.tool_finding = source_text(v, *text);
            } else if (key == "min_share") {
                r.min_share = source_text(v, *text);
            }
        }
        if (!r.id.empty()) {
            if (r.when.text.empty()) diag(item.Mark(), r.id, "rule has no 'when' condition");
            if (r.message.text.empty()) diag(item.Mark(), r.id, "rule has no 'message'");
            if (!m_ids.insert(r.id).second) diag(item.Mark(), r.id, "duplicate rule id in this file");
        }
        if (r.title.empty()) r.title = r.id;
        m_out.rules.push_back(std::move(r));
    }

    const std::string& m_file;
    std::string_view m_text;
    RuleFile m_out;
    std::set<std::string> m_ids;
};

// Diagnostic for an error at `offset` inside a rule field's text.
Diagnostic field_diag(const RuleSpec& r, const SourceText& s, const ExprError& e, const std::string& file_text,
                      std::string_view field) {
    Diagnostic d;
    d.loc = s.loc;
    if (s.single_line) d.loc.col += s.offset_shift + static_cast<int>(e.offset);
    d.rule_id = r.id;
    d.message = fmt::format("{}: {}", field, e.message);
    d.source_line = line_of(file_text, d.loc.line);
    return d;
}

}  // namespace

std::string line_of(std::string_view text, int line) {
    int current = 1;
    std::size_t pos = 0;
    while (current < line && pos != std::string_view::npos) {
        pos = text.find('\n', pos);
        if (pos != std::string_view::npos) ++pos;
        ++current;
    }
    if (pos == std::string_view::npos || pos > text.size()) return {};
    const std::size_t end = text.find('\n', pos);
    return std::string(text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
}

std::string Diagnostic::to_string() const {
    std::string out;
    const std::string_view lvl = level == Level::error ? "error" : "warning";
    if (loc.line > 0)
        out = fmt::format("{}:{}:{}: {}: ", loc.file, loc.line, loc.col, lvl);
    else
        out = fmt::format("{}: {}: ", loc.file, lvl);
    if (!rule_id.empty()) out += fmt::format("rule '{}': ", rule_id);
    out += message;
    if (!source_line.empty()) {
        out += "\n  " + source_line + "\n  ";
        std::string caret;
        for (int i = 1; i < loc.col && static_cast<std::size_t>(i - 1) < source_line.size(); ++i)
            caret.push_back(source_line[static_cast<std::size_t>(i - 1)] == '\t' ? '\t' : ' ');
        out += caret + "^";
    }
    return out;
}

RuleFile parse_rule_text(const std::string& file, std::string_view text) { return Reader(file, text).run(); }

RuleFile parse_rule_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        RuleFile f;
        Diagnostic d;
        d.loc.file = path;
        d.message = "cannot read rule file";
        f.diagnostics.push_back(std::move(d));
        return f;
    }
    std::ostringstream buf;
    buf << in.rdbuf();
    return parse_rule_text(path, buf.str());
}

bool RuleSet::has_errors() const {
    return std::any_of(diagnostics.begin(), diagnostics.end(),
                       [](const Diagnostic& d) { return d.level == Diagnostic::Level::error; });
}

RuleSet compile_rules(const std::vector<RuleFile>& files) {
    RuleSet set;
    for (const RuleFile& file : files) {
        for (const Diagnostic& d : file.diagnostics) set.diagnostics.push_back(d);
        for (const RuleSpec& spec : file.rules) {
            if (spec.id.empty() || spec.when.text.empty() || spec.message.text.empty()) continue;
            const std::string& text = file.text;
            bool ok = true;
            auto report = [&](const SourceText& s, const std::vector<ExprError>& errs, std::string_view field) {
                for (const ExprError& e : errs) set.diagnostics.push_back(field_diag(spec, s, e, text, field));
                ok = ok && errs.empty();
            };
            std::vector<ExprError> errs;
            auto when = Expression::compile(spec.when.text, errs);
            if (when && when->type() != ValueType::boolean)
                errs.push_back({0, fmt::format("condition must be true or false, this is a {}", to_string(when->type()))});
            report(spec.when, errs, "when");
            errs.clear();
            auto message = Template::compile(spec.message.text, errs);
            report(spec.message, errs, "message");
            std::optional<Expression> speedup;
            if (spec.estimated_speedup) {
                errs.clear();
                speedup = Expression::compile(spec.estimated_speedup->text, errs);
                if (speedup && speedup->type() != ValueType::number)
                    errs.push_back({0, "estimated_speedup must be a number (percent)"});
                report(*spec.estimated_speedup, errs, "estimated_speedup");
            }
            std::optional<std::regex> tool_re;
            if (spec.tool_finding) {
                try {
                    tool_re.emplace(spec.tool_finding->text, std::regex::ECMAScript | std::regex::icase);
                } catch (const std::regex_error& e) {
                    report(*spec.tool_finding, {{0, fmt::format("invalid regular expression: {}", e.what())}},
                           "tool_finding");
                }
            }
            std::optional<double> min_share;
            if (spec.min_share) {
                errs.clear();
                auto e = Expression::compile(spec.min_share->text, errs);
                if (e && (e->type() != ValueType::number || !e->metrics_read().empty()))
                    errs.push_back({0, "min_share must be a constant percentage such as 1%"});
                if (e && errs.empty()) {
                    struct NoScope final : EvalScope {
                        std::optional<double> metric(std::string_view) const override { return {}; }
                        std::optional<double> run_metric(std::string_view) const override { return {}; }
                        std::optional<std::string> attribute(std::string_view) const override { return {}; }
                    };
                    const Value v = e->evaluate(NoScope{});
                    if (const double* d = std::get_if<double>(&v)) min_share = *d;
                }
                report(*spec.min_share, errs, "min_share");
            }
            if (!ok || !when || !message) continue;
            CompiledRule rule{spec, std::move(*when), std::move(*message), std::move(speedup), std::move(tool_re),
                              min_share};
            auto it = std::find_if(set.rules.begin(), set.rules.end(),
                                   [&](const CompiledRule& c) { return c.spec.id == spec.id; });
            if (it != set.rules.end())
                *it = std::move(rule);
            else
                set.rules.push_back(std::move(rule));
        }
    }
    return set;
}

}  // namespace perfwatch
