#include "app/rule_tests.hpp"

#include <yaml-cpp/yaml.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>

#include "collectors/collector.hpp"
#include "engine/evaluate.hpp"
#include "engine/pipeline.hpp"
#include "storage/db.hpp"
#include "engine/rules.hpp"
#include "core/vocabulary.hpp"

namespace perfwatch {

namespace {

struct Expectation {
    std::string rule, entity, message, message_contains;
    std::optional<Severity> severity;
    std::string where;
};

class TestFile {
public:
    TestFile(std::string path, RuleTestSummary& summary) : m_path(std::move(path)), m_summary(summary) {}

    void run() {
        YAML::Node root;
        try {
            root = YAML::LoadFile(m_path);
        } catch (const YAML::BadFile&) {
            broken(fmt::format("{}: cannot read the test file", m_path));
            return;
        } catch (const YAML::Exception& e) {
            broken(fmt::format("{}:{}:{}: invalid YAML: {}", m_path, e.mark.line + 1, e.mark.column + 1, e.msg));
            return;
        }
        if (!root.IsMap() || !root["tests"] || !root["tests"].IsSequence()) {
            broken(fmt::format("{}: expected a mapping with a 'tests' list", m_path));
            return;
        }
        for (const auto& kv : root) {
            const std::string key = kv.first.as<std::string>("");
            if (key != "tests" && key != "rule_files")
                broken(fmt::format("{}: unknown key '{}' (expected rule_files, tests)", where(kv.first), key));
        }
        std::vector<std::string> rule_files;
        if (const auto rf = root["rule_files"]) {
            if (!rf.IsSequence()) {
                broken(fmt::format("{}: 'rule_files' must be a list of paths", where(rf)));
                return;
            }
            for (const auto& f : rf) rule_files.push_back(resolve(f.as<std::string>("")));
        }
        m_rules = compile_rules(load_rule_files(rule_files));
        for (const Diagnostic& d : m_rules.diagnostics)
            if (d.level == Diagnostic::Level::error) broken(d.to_string());
        if (m_summary.broken) return;
        for (const auto& t : root["tests"]) test(t);
    }

private:
    std::string where(const YAML::Node& n) const {
        return fmt::format("{}:{}:{}", m_path, n.Mark().line + 1, n.Mark().column + 1);
    }

    void broken(std::string message) {
        m_summary.broken = true;
        m_summary.messages.push_back(std::move(message));
    }

    std::string resolve(const std::string& p) const {
        if (p.empty() || std::filesystem::path(p).is_absolute()) return p;
        return (std::filesystem::path(m_path).parent_path() / p).lexically_normal().string();
    }

    // A metric value as written: a number, or a number with a unit ("5ms", "80%", "2MB").
    std::optional<double> number(const YAML::Node& n, std::string& error) const {
        if (!n.IsScalar()) {
            error = "a metric value must be a number";
            return std::nullopt;
        }
        std::vector<ExprError> errs;
        auto e = Expression::compile(n.Scalar(), errs);
        const std::optional<double> v = e ? constant_number(*e) : std::nullopt;
        if (!v) error = fmt::format("'{}' is not a number with an optional unit", n.Scalar());
        return v;
    }

    // The run a test evaluates: a report collected from disk, or entities written in the test.
    // nullopt with `problem` set; `skip` when the corpus is not here.
    std::optional<StoredRun> input(const YAML::Node& t, std::string& problem, bool& skip) {
        auto run = read_run(t, problem, skip);
        if (!run) return run;
        if (const auto labels = t["labels"]) {
            if (!labels.IsMap()) {
                problem = fmt::format("{}: 'labels' must map label names to values", where(labels));
                return std::nullopt;
            }
            for (const auto& kv : labels) run->batch.labels[kv.first.as<std::string>("")] = kv.second.as<std::string>("");
        }
        return run;
    }

    std::optional<StoredRun> read_run(const YAML::Node& t, std::string& problem, bool& skip) {
        StoredRun run;
        run.id = 1;
        if (const auto r = t["report"]) {
            std::string path = r.as<std::string>("");
            if (path.starts_with("corpus:")) {
                const char* corpus = std::getenv("PERFWATCH_CORPUS");
                const std::string file = corpus != nullptr ? std::string(corpus) + "/" + path.substr(7) : std::string();
                if (file.empty() || !std::filesystem::exists(file)) {
                    skip = true;
                    problem = fmt::format("skipped: {} needs the corpus ($PERFWATCH_CORPUS is {})", path,
                                          corpus != nullptr ? "set, but the file is not there" : "not set");
                    return std::nullopt;
                }
                path = file;
            } else {
                path = resolve(path);
            }
            auto batch = collect_file(path, default_converters());
            if (!batch) {
                problem = "cannot read the report: " + batch.error().to_string();
                return std::nullopt;
            }
            run.batch = std::move(*batch);
            return run;
        }
        const auto list = t["entities"];
        if (!list || !list.IsSequence()) {
            problem = "a test needs 'report' or a list of 'entities'";
            return std::nullopt;
        }
        RunBatch& b = run.batch;
        b.format = "rules-test";
        b.run_entity();
        for (const auto& item : list) {
            if (!item.IsMap()) {
                problem = fmt::format("{}: an entity is a mapping with kind, name, metrics", where(item));
                return std::nullopt;
            }
            const auto kind = entity_kind_from_string(item["kind"].as<std::string>("kernel"));
            if (!kind) {
                problem = fmt::format("{}: unknown entity kind '{}'", where(item["kind"]), item["kind"].as<std::string>(""));
                return std::nullopt;
            }
            for (const auto& kv : item) {
                const std::string key = kv.first.as<std::string>("");
                if (key != "kind" && key != "name" && key != "metrics" && key != "attributes" && key != "parent") {
                    problem = fmt::format("{}: unknown entity key '{}' (expected kind, name, metrics, attributes, "
                                          "parent)",
                                          where(kv.first), key);
                    return std::nullopt;
                }
            }
            Entity* e = nullptr;
            if (*kind == EntityKind::run) {
                e = &b.entities[b.run_entity()];
            } else {
                b.entities.emplace_back();
                e = &b.entities.back();
                e->kind = *kind;
                e->name = item["name"].as<std::string>("");
                e->parent = 0;
                if (const auto parent = item["parent"]) {
                    const std::string p = parent.as<std::string>("");
                    for (std::size_t i = 0; i + 1 < b.entities.size(); ++i)
                        if (b.entities[i].name == p && b.entities[i].kind != EntityKind::run)
                            e->parent = static_cast<std::int64_t>(i);
                }
            }
            if (const auto metrics = item["metrics"]) {
                for (const auto& m : metrics) {
                    const std::string name = m.first.as<std::string>("");
                    std::string error;
                    const auto v = number(m.second, error);
                    if (!v) {
                        problem = fmt::format("{}: metric '{}': {}", where(m.second), name, error);
                        return std::nullopt;
                    }
                    const MetricDef* def = find_metric_def(name);
                    e->set(Metric{name, *v, def != nullptr ? std::string(def->unit) : "count", "", ""});
                }
            }
            if (const auto attrs = item["attributes"])
                for (const auto& a : attrs) e->attributes[a.first.as<std::string>("")] = a.second.as<std::string>("");
        }
        return run;
    }

    std::vector<Expectation> expectations(const YAML::Node& t, std::string& problem) {
        std::vector<Expectation> out;
        const auto list = t["expect"];
        if (!list) return out;
        if (!list.IsSequence()) {
            problem = fmt::format("{}: 'expect' must be a list", where(list));
            return out;
        }
        for (const auto& item : list) {
            Expectation e;
            e.where = where(item);
            if (item.IsScalar()) {
                e.rule = item.Scalar();
            } else {
                for (const auto& kv : item) {
                    const std::string key = kv.first.as<std::string>("");
                    const std::string value = kv.second.as<std::string>("");
                    if (key == "rule") e.rule = value;
                    else if (key == "entity") e.entity = value;
                    else if (key == "message") e.message = value;
                    else if (key == "message_contains") e.message_contains = value;
                    else if (key == "severity") e.severity = severity_from_string(value);
                    else problem = fmt::format("{}: unknown expectation key '{}' (expected rule, entity, severity, "
                                               "message, message_contains)",
                                               where(kv.first), key);
                }
            }
            if (e.rule.empty()) problem = fmt::format("{}: an expectation needs 'rule'", e.where);
            out.push_back(std::move(e));
        }
        return out;
    }

    bool loaded(const std::string& id) const {
        return std::any_of(m_rules.rules.begin(), m_rules.rules.end(), [&](const auto& r) { return r.spec.id == id; });
    }

    static std::string describe(const Finding& f) {
        return fmt::format("'{}' on {} '{}': {}", f.rule, to_string(f.entity_kind), f.entity_name, f.message);
    }

    void test(const YAML::Node& t) {
        ++m_summary.tests;
        const std::string name = t["name"] ? t["name"].as<std::string>("") : fmt::format("#{}", m_summary.tests);
        const std::string at = fmt::format("{}: test '{}'", where(t), name);
        std::string problem;
        bool skip = false;
        auto run = input(t, problem, skip);
        if (!run) {
            skip_or_fail(at, problem, skip);
            return;
        }
        const std::vector<Expectation> expected = expectations(t, problem);
        std::vector<std::string> absent;
        if (const auto a = t["absent"]) {
            if (!a.IsSequence()) problem = fmt::format("{}: 'absent' must be a list of rule ids", where(a));
            else
                for (const auto& id : a) absent.push_back(id.as<std::string>(""));
        }
        if (!problem.empty()) {
            fail(at, problem);
            return;
        }
        if (expected.empty() && absent.empty()) {
            fail(at, "a test needs 'expect' or 'absent'");
            return;
        }

        auto evaluated = evaluate_with_history(t, *run, name, problem, skip);
        if (!evaluated) {
            skip_or_fail(at, problem, skip);
            return;
        }
        const Evaluation& ev = *evaluated;
        std::vector<std::string> failures;
        std::set<std::string> rules_expected;
        for (const Expectation& e : expected) rules_expected.insert(e.rule);
        for (const std::string& id : rules_expected)
            if (!loaded(id)) failures.push_back(fmt::format("no enabled rule '{}' is loaded", id));
        for (const std::string& id : absent)
            if (!loaded(id)) failures.push_back(fmt::format("no enabled rule '{}' is loaded", id));

        std::vector<bool> used(ev.findings.size(), false);
        for (const Expectation& e : expected) {
            bool matched = false;
            for (std::size_t i = 0; i < ev.findings.size() && !matched; ++i) {
                const Finding& f = ev.findings[i];
                if (used[i] || f.rule != e.rule) continue;
                if (!e.entity.empty() && f.entity_name != e.entity) continue;
                if (e.severity && f.severity != *e.severity) continue;
                if (!e.message.empty() && f.message != e.message) continue;
                if (!e.message_contains.empty() && f.message.find(e.message_contains) == std::string::npos) continue;
                used[i] = matched = true;
            }
            if (matched) continue;
            std::string got;
            for (const Finding& f : ev.findings)
                if (f.rule == e.rule) got += "\n      got " + describe(f);
            failures.push_back(fmt::format("{}: expected '{}'{}{}{}{}", e.where, e.rule,
                                           e.entity.empty() ? "" : " on '" + e.entity + "'",
                                           e.severity ? fmt::format(" ({})", to_string(*e.severity)) : "",
                                           e.message.empty() ? "" : " with message \"" + e.message + "\"",
                                           e.message_contains.empty() ? "" : " with a message containing \"" +
                                                                                 e.message_contains + "\"") +
                               (got.empty() ? fmt::format(" but it did not fire") : got));
        }
        for (std::size_t i = 0; i < ev.findings.size(); ++i) {
            const Finding& f = ev.findings[i];
            if (!used[i] && rules_expected.contains(f.rule)) failures.push_back("unexpected finding " + describe(f));
            if (std::find(absent.begin(), absent.end(), f.rule) != absent.end())
                failures.push_back("expected no finding of '" + f.rule + "', got " + describe(f));
        }
        if (!failures.empty()) {
            std::string text;
            for (const std::string& f : failures) text += "\n    " + f;
            fail(at, text);
            return;
        }
        for (const std::string& id : rules_expected) m_summary.fired.push_back(id);
    }

    // Stores the test's `baseline:` runs (oldest first) and then its run in a fresh in-memory
    // database and runs the pipeline on it, so history functions see those runs.
    std::optional<Evaluation> evaluate_with_history(const YAML::Node& t, StoredRun run, const std::string& test,
                                                    std::string& problem, bool& skip) {
        auto db = Db::open(":memory:");
        if (!db) {
            problem = db.error().to_string();
            return std::nullopt;
        }
        std::size_t index = 0;
        auto store = [&](StoredRun& r) -> std::optional<std::int64_t> {
            // Unique per test and position, so the same report may stand for several runs.
            r.batch.sha256 = fmt::format("rules-test:{}:{}:{}", m_path, test, index++);
            if (r.batch.source.empty()) r.batch.source = fmt::format("{} test '{}' run {}", m_path, test, index);
            auto stored = db->store(r.batch);
            if (!stored) {
                problem = stored.error().to_string();
                return std::nullopt;
            }
            return stored->run_id;
        };
        if (const auto list = t["baseline"]) {
            if (!list.IsSequence()) {
                problem = fmt::format("{}: 'baseline' must be a list of runs (report or entities, labels)", where(list));
                return std::nullopt;
            }
            for (const auto& item : list) {
                auto b = input(item, problem, skip);
                if (!b || !store(*b)) return std::nullopt;
            }
        }
        const auto id = store(run);
        if (!id) return std::nullopt;
        auto stored = db->load(*id);
        if (!stored || !*stored) {
            problem = stored ? "the run vanished from the test database" : stored.error().to_string();
            return std::nullopt;
        }
        auto outcome = process_run(*db, m_rules, **stored);
        if (!outcome) {
            problem = outcome.error().to_string();
            return std::nullopt;
        }
        return std::move(outcome->evaluation);
    }

    // A test whose input is missing: skipped (the corpus is not here) or failed.
    void skip_or_fail(const std::string& at, const std::string& problem, bool skip) {
        if (!skip) {
            fail(at, problem);
            return;
        }
        ++m_summary.skipped;
        m_summary.messages.push_back(fmt::format("{}: {}", at, problem));
    }

    void fail(const std::string& at, const std::string& why) {
        ++m_summary.failed;
        m_summary.messages.push_back(fmt::format("{}: FAILED{}{}", at, why.starts_with('\n') ? "" : ": ", why));
    }

    std::string m_path;
    RuleTestSummary& m_summary;
    RuleSet m_rules;
};

}  // namespace

RuleTestSummary run_rule_tests(const std::vector<std::string>& paths) {
    RuleTestSummary summary;
    for (const std::string& p : paths) TestFile(p, summary).run();
    std::sort(summary.fired.begin(), summary.fired.end());
    summary.fired.erase(std::unique(summary.fired.begin(), summary.fired.end()), summary.fired.end());
    return summary;
}

}  // namespace perfwatch
