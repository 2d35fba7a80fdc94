#include "engine/rules.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <set>

#include "core/file.hpp"
#include "core/vocabulary.hpp"

namespace perfwatch {

namespace {

constexpr std::array<std::string_view, 10> k_rule_keys{"id",      "title",        "severity",
                                                      "scope",   "when",         "message",
                                                      "estimated_speedup", "tool_finding", "min_share", "min_impact"};
constexpr std::string_view k_all_keys =
    "id, title, severity, scope, when, message, estimated_speedup, tool_finding, min_share, min_impact, labels, let, append, "
    "enabled, override, baseline, resolve_after, fix";


class Reader {
public:
    Reader(const std::string& file, std::string_view text) : m_file(file), m_text(text) {}

    RuleFile run() {
        m_out.file = m_file;
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
                // A key that is not a plain name (a sequence or mapping used as a key) is unknown too.
                const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "(not a plain name)";
                if (key == "macros") macros(kv.second);
                else if (key == "lists") lists(kv.second);
                else if (key != "rules")
                    diag(kv.first.Mark(), "",
                         fmt::format("unknown top-level key '{}' (expected rules, macros or lists)", key));
            }
            list = root["rules"];
            if (!list) return std::move(m_out);  // a file of macros and lists only
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

    void macros(const YAML::Node& n) {
        if (!n.IsMap()) {
            diag(n.Mark(), "", "'macros' must map names to expressions");
            return;
        }
        for (const auto& kv : n) {
            const std::string name = kv.first.Scalar();
            if (!valid_name(kv.first, name, "macro")) continue;
            if (auto text = scalar(kv.second, "", "macro " + name))
                m_out.macros.push_back(MacroSpec{name, source_text(kv.second, *text)});
        }
    }

    void lists(const YAML::Node& n) {
        if (!n.IsMap()) {
            diag(n.Mark(), "", "'lists' must map names to lists of strings");
            return;
        }
        for (const auto& kv : n) {
            const std::string name = kv.first.Scalar();
            if (!valid_name(kv.first, name, "list")) continue;
            if (!kv.second.IsSequence()) {
                diag(kv.second.Mark(), "", fmt::format("list '{}' must be a sequence of strings", name));
                continue;
            }
            ListSpec l{name, {}, loc(kv.first.Mark())};
            for (const auto& item : kv.second)
                if (auto v = scalar(item, "", "list " + name)) l.items.push_back(*v);
            m_out.lists.push_back(std::move(l));
        }
    }

    bool valid_name(const YAML::Node& key, const std::string& name, std::string_view what) {
        const bool ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                        std::all_of(name.begin(), name.end(), [](char c) {
                            return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                        });
        if (!ok) diag(key.Mark(), "", fmt::format("{} name '{}' must be an identifier ([A-Za-z_][A-Za-z0-9_]*)", what, name));
        return ok;
    }

    // baseline: {branch: main, runs: 10, match: [project, batch_size]}
    void baseline(const YAML::Node& v, RuleSpec& r) {
        if (!v.IsMap()) {
            diag(v.Mark(), r.id, "'baseline' must be a mapping with branch, runs and match");
            return;
        }
        BaselineSpec b;
        for (const auto& kv : v) {
            const std::string key = kv.first.Scalar();
            const YAML::Node& x = kv.second;
            if (key == "branch") {
                if (auto t = scalar(x, r.id, "baseline branch"); t && !t->empty()) b.branch = *t;
            } else if (key == "runs") {
                int runs = 0;
                if (!x.IsScalar() || !YAML::convert<int>::decode(x, runs) || runs < 1 || runs > 1000)
                    diag(x.Mark(), r.id, "baseline 'runs' must be a number between 1 and 1000");
                else
                    b.runs = static_cast<std::size_t>(runs);
            } else if (key == "match") {
                if (!x.IsSequence()) {
                    diag(x.Mark(), r.id, "baseline 'match' must be a list of label names");
                    continue;
                }
                for (const auto& item : x)
                    if (auto t = scalar(item, r.id, "baseline match")) b.match.push_back(*t);
            } else {
                diag(kv.first.Mark(), r.id, fmt::format("unknown baseline key '{}' (expected branch, runs, match)", key));
            }
        }
        r.baseline = std::move(b);
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
            r.keys.insert(key);
            if (key == "let") {
                if (!v.IsMap()) {
                    diag(v.Mark(), r.id, "'let' must map names to expressions");
                    continue;
                }
                for (const auto& l : v) {
                    const std::string name = l.first.Scalar();
                    if (!valid_name(l.first, name, "let")) continue;
                    if (auto t = scalar(l.second, r.id, "let " + name)) r.lets.emplace_back(name, source_text(l.second, *t));
                }
                continue;
            }
            if (key == "append") {
                if (auto t = scalar(v, r.id, key)) r.appends.push_back(source_text(v, *t));
                continue;
            }
            if (key == "enabled" || key == "override") {
                bool flag = false;
                if (!v.IsScalar() || !YAML::convert<bool>::decode(v, flag)) {
                    diag(v.Mark(), r.id, fmt::format("'{}' must be true or false", key));
                    continue;
                }
                if (key == "enabled") r.enabled = flag;
                else r.patch = flag;
                continue;
            }
            if (key == "baseline") {
                baseline(v, r);
                continue;
            }
            if (key == "resolve_after") {
                int runs = 0;
                if (!v.IsScalar() || !YAML::convert<int>::decode(v, runs) || runs < 1 || runs > 1000)
                    diag(v.Mark(), r.id, "'resolve_after' must be a number of runs between 1 and 1000");
                else
                    r.resolve_after = static_cast<std::size_t>(runs);
                continue;
            }
            if (key == "fix") {
                const auto t = scalar(v, r.id, key);
                if (t && *t == "run") r.fix = FixScope::run;
                else if (t && *t == "entity") r.fix = FixScope::entity;
                else if (t) diag(v.Mark(), r.id, fmt::format("'fix' must be entity or run, not '{}'", *t));
                continue;
            }
            if (key == "labels") {
                if (!v.IsMap()) {
                    diag(v.Mark(), r.id, "'labels' must be a mapping of names to values");
                    continue;
                }
                for (const auto& l : v) r.labels[l.first.Scalar()] = l.second.IsScalar() ? l.second.Scalar() : "";
                continue;
            }
            if (std::find(k_rule_keys.begin(), k_rule_keys.end(), key) == k_rule_keys.end()) {
                diag(kv.first.Mark(), r.id, fmt::format("unknown key '{}' (expected one of: {})", key, k_all_keys));
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
            } else if (key == "min_impact") {
                r.min_impact = source_text(v, *text);
            }
        }
        if (r.keys.contains("append") || (r.keys.contains("enabled") && !r.keys.contains("when"))) r.patch = true;
        if (!r.id.empty() && !r.patch) {
            if (r.when.text.empty()) diag(item.Mark(), r.id, "rule has no 'when' condition");
            if (r.message.text.empty()) diag(item.Mark(), r.id, "rule has no 'message'");
        }
        if (!r.id.empty()) {
            if (!m_ids.insert(r.id).second) diag(item.Mark(), r.id, "duplicate rule id in this file");
        }
        if (r.title.empty() && !r.patch) r.title = r.id;
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

std::string Diagnostic::headline(bool with_level) const {
    std::string out = loc.line > 0 ? fmt::format("{}:{}:{}: ", loc.file, loc.line, loc.col) : loc.file + ": ";
    if (with_level) out += level == Level::error ? "error: " : "warning: ";
    if (!rule_id.empty()) out += fmt::format("rule '{}': ", rule_id);
    return out + message;
}

std::string Diagnostic::to_string() const {
    std::string out = headline();
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
    auto text = read_whole_file(path);
    if (text) return parse_rule_text(path, *text);
    RuleFile f;
    f.file = path;
    Diagnostic d;
    d.loc.file = path;
    d.message = "cannot read the rule file: " + text.error().message;
    f.diagnostics.push_back(std::move(d));
    return f;
}

bool has_errors(const std::vector<Diagnostic>& diagnostics) {
    return std::any_of(diagnostics.begin(), diagnostics.end(),
                       [](const Diagnostic& d) { return d.level == Diagnostic::Level::error; });
}

bool RuleSet::has_errors() const { return perfwatch::has_errors(diagnostics); }

std::size_t RuleSet::error_count() const {
    return static_cast<std::size_t>(std::count_if(diagnostics.begin(), diagnostics.end(), [](const Diagnostic& d) {
        return d.level == Diagnostic::Level::error;
    }));
}

namespace {

Diagnostic at(const SourceLoc& loc, const std::string& rule_id, std::string message, const std::string& file_text,
              Diagnostic::Level level = Diagnostic::Level::error) {
    Diagnostic d;
    d.level = level;
    d.loc = loc;
    d.rule_id = rule_id;
    d.message = std::move(message);
    d.source_line = loc.line > 0 ? line_of(file_text, loc.line) : std::string();
    return d;
}

// Applies a patch entry to the rule it names: the keys it gives replace, lets merge by name.
void apply_patch(RuleSpec& base, const RuleSpec& patch) {
    const auto& k = patch.keys;
    if (k.contains("title")) base.title = patch.title;
    if (k.contains("severity")) base.severity = patch.severity;
    if (k.contains("scope")) base.scope = patch.scope;
    if (k.contains("when")) base.when = patch.when;
    if (k.contains("message")) base.message = patch.message;
    if (k.contains("estimated_speedup")) base.estimated_speedup = patch.estimated_speedup;
    if (k.contains("tool_finding")) base.tool_finding = patch.tool_finding;
    if (k.contains("min_share")) base.min_share = patch.min_share;
    if (k.contains("min_impact")) base.min_impact = patch.min_impact;
    if (k.contains("labels"))
        for (const auto& [key, value] : patch.labels) base.labels[key] = value;
    if (k.contains("enabled")) base.enabled = patch.enabled;
    if (k.contains("baseline")) base.baseline = patch.baseline;
    if (k.contains("resolve_after")) base.resolve_after = patch.resolve_after;
    if (k.contains("fix")) base.fix = patch.fix;
    for (const auto& [name, text] : patch.lets) {
        auto it = std::find_if(base.lets.begin(), base.lets.end(), [&](const auto& l) { return l.first == name; });
        if (it != base.lets.end()) it->second = text;
        else base.lets.emplace_back(name, text);
    }
    for (const SourceText& a : patch.appends) base.appends.push_back(a);
    base.overridden_at.push_back(patch.loc);
}

// What a let or macro of this name would hide: "metric or keyword", "attribute", or nothing.
std::string_view hidden_by(const std::string& name) {
    static const std::set<std::string> k_words{"and", "or", "not", "in", "true", "false", "run"};
    if (k_words.contains(name) || find_metric_def(name) != nullptr) return "metric or keyword";
    if (is_attribute_name(name)) return "attribute";
    return {};
}

}  // namespace

RuleSet compile_rules(const std::vector<RuleFile>& files) {
    RuleSet set;
    std::map<std::string, const std::string*> texts;
    for (const RuleFile& file : files) texts[file.file] = &file.text;
    auto text_of = [&](const SourceLoc& loc) -> const std::string& {
        static const std::string k_none;
        auto it = texts.find(loc.file);
        return it == texts.end() ? k_none : *it->second;
    };

    // Lists and macros of every file, in file order; a later definition replaces an earlier one.
    Definitions defs;
    std::vector<std::pair<std::string, SourceLoc>> macro_locs;
    for (const RuleFile& file : files) {
        for (const Diagnostic& d : file.diagnostics) set.diagnostics.push_back(d);
        for (const ListSpec& l : file.lists) {
            defs.define_list(l.name, l.items);
            macro_locs.emplace_back(l.name, l.loc);
        }
        for (const MacroSpec& m : file.macros) {
            if (const std::string_view hidden = hidden_by(m.name); !hidden.empty()) {
                set.diagnostics.push_back(at(m.text.loc, "",
                                             fmt::format("macro '{}' would hide the {} of that name", m.name, hidden),
                                             file.text));
                continue;
            }
            std::vector<ExprError> errs;
            if (!defs.define(m.name, m.text.text, errs)) {
                defs.define_broken(m.name);
                RuleSpec none;
                for (const ExprError& e : errs) set.diagnostics.push_back(field_diag(none, m.text, e, file.text, "macro " + m.name));
            }
            macro_locs.emplace_back(m.name, m.text.loc);
        }
    }

    // The effective specs: later files replace rules by id or patch them.
    std::vector<RuleSpec> effective;
    for (const RuleFile& file : files) {
        for (const RuleSpec& spec : file.rules) {
            if (spec.id.empty()) continue;
            auto it = std::find_if(effective.begin(), effective.end(), [&](const RuleSpec& r) { return r.id == spec.id; });
            if (spec.patch) {
                if (it == effective.end()) {
                    set.diagnostics.push_back(at(spec.loc, spec.id,
                                                 "no rule of this id in an earlier file to override (override, append "
                                                 "and enabled change a rule loaded before this file)",
                                                 file.text));
                    continue;
                }
                apply_patch(*it, spec);
            } else if (it != effective.end()) {
                std::vector<SourceLoc> history = it->overridden_at;
                history.push_back(spec.loc);
                *it = spec;
                it->overridden_at = std::move(history);
            } else {
                effective.push_back(spec);
            }
        }
    }

    for (const RuleSpec& spec : effective) {
        if (!spec.enabled) {
            set.disabled.push_back(spec);
            continue;
        }
        if (spec.when.text.empty() || spec.message.text.empty()) continue;
        bool ok = true;
        auto report = [&](const SourceText& s, const std::vector<ExprError>& errs, std::string_view field) {
            for (const ExprError& e : errs) set.diagnostics.push_back(field_diag(spec, s, e, text_of(s.loc), field));
            ok = ok && errs.empty();
        };
        Definitions local = defs;
        for (const auto& [name, text] : spec.lets) {
            if (const std::string_view hidden = hidden_by(name); !hidden.empty()) {
                set.diagnostics.push_back(
                    at(text.loc, spec.id, fmt::format("let '{}' would hide the {} of that name", name, hidden),
                       text_of(text.loc)));
                ok = false;
                continue;
            }
            std::vector<ExprError> errs;
            if (!local.define(name, text.text, errs)) local.define_broken(name);
            report(text, errs, "let " + name);
        }
        std::vector<ExprError> errs;
        auto when = Expression::compile(spec.when.text, errs, &local);
        if (when && when->type() != ValueType::boolean)
            errs.push_back({0, fmt::format("condition must be true or false, this is a {}", to_string(when->type()))});
        report(spec.when, errs, "when");
        std::vector<Expression> conditions;
        if (when) conditions.push_back(std::move(*when));
        for (const SourceText& a : spec.appends) {
            errs.clear();
            auto extra = Expression::compile(a.text, errs, &local);
            if (extra && extra->type() != ValueType::boolean) errs.push_back({0, "an appended condition must be true or false"});
            report(a, errs, "append");
            if (extra) conditions.push_back(std::move(*extra));
        }
        errs.clear();
        auto message = Template::compile(spec.message.text, errs, &local);
        report(spec.message, errs, "message");
        std::optional<Expression> speedup;
        if (spec.estimated_speedup) {
            errs.clear();
            speedup = Expression::compile(spec.estimated_speedup->text, errs, &local);
            if (speedup && speedup->type() != ValueType::number)
                errs.push_back({0, "estimated_speedup must be a number (percent)"});
            report(*spec.estimated_speedup, errs, "estimated_speedup");
        }
        std::optional<std::regex> tool_re;
        if (spec.tool_finding) {
            try {
                tool_re.emplace(spec.tool_finding->text, std::regex::ECMAScript | std::regex::icase);
            } catch (const std::regex_error& e) {
                report(*spec.tool_finding, {{0, fmt::format("invalid regular expression: {}", e.what())}}, "tool_finding");
            }
        }
        std::optional<double> min_share;
        if (spec.min_share) {
            errs.clear();
            auto e = Expression::compile(spec.min_share->text, errs, &local);
            if (e && (e->type() != ValueType::number || !e->metrics_read().empty()))
                errs.push_back({0, "min_share must be a constant percentage such as 1%"});
            if (e && errs.empty()) min_share = constant_number(*e);
            report(*spec.min_share, errs, "min_share");
        }
        double min_impact = k_default_min_impact_pct;
        if (spec.min_impact) {
            errs.clear();
            auto e = Expression::compile(spec.min_impact->text, errs, &local);
            if (e && (e->type() != ValueType::number || !e->metrics_read().empty()))
                errs.push_back({0, "min_impact must be a constant percentage such as 0.5% (0: every finding on its own)"});
            if (e && errs.empty()) min_impact = constant_number(*e).value_or(k_default_min_impact_pct);
            report(*spec.min_impact, errs, "min_impact");
        }
        defs.merge_used(local);
        if (!ok || conditions.size() != 1 + spec.appends.size() || !message) continue;

        for (const std::string& name : local.unused()) {
            auto let = std::find_if(spec.lets.begin(), spec.lets.end(), [&](const auto& l) { return l.first == name; });
            if (let != spec.lets.end())
                set.diagnostics.push_back(at(let->second.loc, spec.id, fmt::format("let '{}' is never used", name),
                                             text_of(let->second.loc), Diagnostic::Level::warning));
        }
        Expression condition = Expression::all_of(conditions);
        for (const std::string& m : message->required_metrics()) {
            if (m.starts_with("run.") || condition.metrics_read().contains(m)) continue;
            set.diagnostics.push_back(at(spec.message.loc, spec.id,
                                         fmt::format("message prints '{}', which the condition does not read: it shows "
                                                     "\"n/a\" when a report lacks it (test it in `when` or wrap it in "
                                                     "[[ ]])",
                                                     m),
                                         text_of(spec.message.loc), Diagnostic::Level::warning));
        }
        const bool history = condition.uses_history() || message->uses_history() ||
                             (speedup && speedup->uses_history());
        std::vector<RegressionCheck> checks = condition.regression_checks();
        set.rules.push_back(CompiledRule{spec, std::move(condition), std::move(*message), std::move(speedup),
                                         std::move(tool_re), min_share, min_impact, history, std::move(checks)});
    }
    // Macros and lists no rule reads.
    for (const std::string& name : defs.unused()) {
        auto it = std::find_if(macro_locs.rbegin(), macro_locs.rend(), [&](const auto& m) { return m.first == name; });
        if (it != macro_locs.rend())
            set.diagnostics.push_back(at(it->second, "", fmt::format("'{}' is defined but no rule uses it", name),
                                         text_of(it->second), Diagnostic::Level::warning));
    }
    return set;
}

std::vector<std::string> expand_rule_paths(const std::vector<std::string>& paths) {
    std::vector<std::string> out;
    for (const std::string& path : paths) {
        std::error_code ec;
        if (!std::filesystem::is_directory(path, ec)) {
            out.push_back(path);
            continue;
        }
        std::vector<std::string> found;
        for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
            const std::string ext = entry.path().extension().string();
            if ((ext == ".yaml" || ext == ".yml") && entry.is_regular_file(ec)) found.push_back(entry.path().string());
        }
        std::sort(found.begin(), found.end());
        out.insert(out.end(), found.begin(), found.end());
    }
    return out;
}

std::vector<RuleFile> load_rule_files(const std::vector<std::string>& paths) {
    std::vector<RuleFile> files;
    for (const auto& [name, text] : shipped_rule_packs()) files.push_back(parse_rule_text(name, text));
    for (const std::string& path : expand_rule_paths(paths)) files.push_back(parse_rule_file(path));
    return files;
}

}  // namespace perfwatch
