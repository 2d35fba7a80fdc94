#include "notify/alerts.hpp"

#include "notify/comparison_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace perfwatch {

namespace {

using Labels = std::map<std::string, std::string>;

bool glob(const std::string& pattern, const std::string& text) {
    return fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

// The labels an alert is routed on: the run's, the rule's, then `rule` and `severity`.
Labels alert_labels(const StoredRun& run, const std::map<std::string, std::string>& rule_labels,
                    const std::string& rule, Severity severity) {
    Labels out = run.batch.labels;
    for (const auto& [k, v] : rule_labels) out[k] = v;
    out["rule"] = rule;
    out["severity"] = std::string(to_string(severity));
    return out;
}

bool matches(const std::map<std::string, std::string>& match, const Labels& labels, Severity severity) {
    for (const auto& [key, want] : match) {
        if (key == "severity") {
            const auto least = severity_from_string(want);
            if (!least || severity < *least) return false;
            continue;
        }
        const auto it = labels.find(key);
        if (it == labels.end() || !glob(want, it->second)) return false;
    }
    return true;
}

struct Delivery {
    std::string receiver;
    std::vector<std::string> group_by;
    std::int64_t repeat_interval_ms = 0;
    std::int64_t group_wait_ms = 0;
    std::int64_t group_interval_ms = 0;
};

// The receivers an alert goes to: the deepest matching nodes (settings inherited down the tree).
void route_alert(const Route& node, const Labels& labels, Severity severity, Delivery inherited,
                 std::vector<Delivery>& out) {
    if (!node.receiver.empty()) inherited.receiver = node.receiver;
    if (node.group_by) inherited.group_by = *node.group_by;
    if (node.repeat_interval) inherited.repeat_interval_ms = node.repeat_interval->count();
    if (node.group_wait) inherited.group_wait_ms = node.group_wait->count();
    if (node.group_interval) inherited.group_interval_ms = node.group_interval->count();
    bool taken = false;
    for (const Route& child : node.routes) {
        if (!matches(child.match, labels, severity)) continue;
        route_alert(child, labels, severity, inherited, out);
        taken = true;
        if (!child.continue_matching) break;
    }
    if (!taken && !inherited.receiver.empty()) out.push_back(std::move(inherited));
}

std::uint64_t fnv1a(std::string_view text) {
    std::uint64_t h = 1469598103934665603ull;
    for (const char c : text) {
        h ^= static_cast<unsigned char>(c);
        h *= 1099511628211ull;
    }
    return h;
}

}  // namespace

ResolvedAlert resolved_alert(const RegressionState& state, Severity severity) {
    return {state.rule, severity, std::string(to_string(state.entity_kind)), state.entity_name,
            fmt::format("{} is back to its baseline ({}; regression opened at run {})", state.metric, state.resolution,
                        state.opened_run)};
}

std::string AlertGroup::title() const {
    if (run_id == 0 && alerts.size() == 1 && alerts.front().rule == k_quarantine_rule)
        return fmt::format("perfwatch: quarantined {} (not read again until retried)", alerts.front().entity_name);
    std::string what;
    if (status == "resolved") {
        what = fmt::format("resolved: {} regression{}", alerts.size() + omitted, alerts.size() + omitted == 1 ? "" : "s");
    } else {
        std::map<Severity, std::size_t> counts;
        for (const AlertItem& a : alerts) ++counts[a.severity];
        what = fmt::format("{} finding{}", alerts.size() + omitted, alerts.size() + omitted == 1 ? "" : "s");
        std::vector<std::string> parts;
        for (const Severity s : {Severity::error, Severity::warning})
            if (counts[s] > 0) parts.push_back(fmt::format("{} {}{}", counts[s], to_string(s), counts[s] == 1 ? "" : "s"));
        if (!parts.empty()) what += " (" + fmt::format("{}", fmt::join(parts, ", ")) + ")";
    }
    std::string where;
    const std::string project = label_value(run_labels, "project"), branch = label_value(run_labels, "branch");
    if (!project.empty() || !branch.empty())
        where += " in " + project + (project.empty() || branch.empty() ? "" : "/") + branch;
    if (const std::string commit = label_value(run_labels, "commit"); !commit.empty()) where += " @ " + commit;
    if (const std::string gpu = label_value(run_labels, "gpu"); !gpu.empty()) where += " on " + gpu;
    if (where.empty()) where = fmt::format(" in run {}", run_id);
    if (sources.size() > 1) where += fmt::format(" from {} reports", sources.size());
    return "perfwatch: " + what + where;
}

std::string AlertGroup::key() const {
    return fmt::format("perfwatch-{}-{}-{:016x}", run_id, status, fnv1a(receiver + "\n" + group_key));
}

std::string to_json(const AlertGroup& g) {
    nlohmann::json alerts = nlohmann::json::array();
    for (const AlertItem& a : g.alerts) {
        alerts.push_back({{"rule", a.rule},
                          {"title", a.title},
                          {"severity", std::string(to_string(a.severity))},
                          {"entity", {{"kind", a.entity_kind}, {"name", a.entity_name}}},
                          {"message", a.message},
                          {"metrics", a.metrics},
                          {"impact", a.impact ? nlohmann::json(*a.impact) : nlohmann::json(nullptr)},
                          {"source", a.source}});
        if (a.comparison) alerts.back()["comparison"] = comparison_json(*a.comparison);
        if (!a.url.empty()) alerts.back()["url"] = a.url;
    }
    nlohmann::json doc = {{"receiver", g.receiver},   {"status", g.status},       {"group_key", g.group_key},
                          {"group_labels", g.group_labels}, {"run", g.run_id},     {"source", g.source},
                          {"labels", g.run_labels},   {"title", g.title()},       {"alerts", alerts},
                          {"omitted", g.omitted},     {"report_url", g.report_url}, {"sources", g.sources}};
    if (!g.commit_url.empty()) doc["commit_url"] = g.commit_url;
    return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<AlertGroup> alert_group_from_json(const std::string& text) {
    try {
        const auto doc = nlohmann::json::parse(text);
        AlertGroup g;
        g.receiver = doc.at("receiver").get<std::string>();
        g.status = doc.at("status").get<std::string>();
        g.group_key = doc.at("group_key").get<std::string>();
        g.group_labels = doc.at("group_labels").get<Labels>();
        g.run_id = doc.at("run").get<std::int64_t>();
        g.source = doc.at("source").get<std::string>();
        g.run_labels = doc.at("labels").get<Labels>();
        g.omitted = doc.at("omitted").get<std::size_t>();
        g.report_url = doc.value("report_url", std::string());
        g.commit_url = doc.value("commit_url", std::string());
        g.sources = doc.value("sources", std::vector<std::string>());
        for (const auto& a : doc.at("alerts")) {
            AlertItem item;
            item.rule = a.at("rule").get<std::string>();
            item.title = a.at("title").get<std::string>();
            item.severity = severity_from_string(a.at("severity").get<std::string>()).value_or(Severity::info);
            item.entity_kind = a.at("entity").at("kind").get<std::string>();
            item.entity_name = a.at("entity").at("name").get<std::string>();
            item.message = a.at("message").get<std::string>();
            item.metrics = a.at("metrics").get<std::map<std::string, double>>();
            if (!a.at("impact").is_null()) item.impact = a.at("impact").get<double>();
            item.source = a.value("source", std::string());
            if (a.contains("comparison")) item.comparison = comparison_from_json(a.at("comparison"));
            item.url = a.value("url", std::string());
            g.alerts.push_back(std::move(item));
        }
        return g;
    } catch (const nlohmann::json::exception& e) {
        return fail("outbox", 0, fmt::format("unreadable alert payload: {}", e.what()));
    }
}

std::vector<AlertGroup> group_alerts(const Route& root, const StoredRun& run, const std::vector<Finding>& findings,
                                     const std::vector<ResolvedAlert>& resolved, std::size_t max_alerts,
                                     const std::vector<Silence>& silences, std::size_t* silenced,
                                     const std::vector<InhibitRule>& inhibit, std::size_t* inhibited) {
    // The labels inhibit rules see: an alert's, with its entity.
    std::vector<Labels> inhibit_labels;
    for (const Finding& f : findings) {
        Labels l = alert_labels(run, f.labels, f.rule, f.severity);
        l["entity_kind"] = std::string(to_string(f.entity_kind));
        l["entity"] = f.entity_name;
        inhibit_labels.push_back(std::move(l));
    }
    const auto muted_by_rule = [&](std::size_t target) {
        for (const InhibitRule& r : inhibit) {
            if (!matches(r.target_match, inhibit_labels[target], findings[target].severity)) continue;
            for (std::size_t source = 0; source < findings.size(); ++source) {
                if (source == target || !matches(r.source_match, inhibit_labels[source], findings[source].severity))
                    continue;
                const bool same = std::all_of(r.equal.begin(), r.equal.end(), [&](const std::string& label) {
                    return label_value(inhibit_labels[source], label) == label_value(inhibit_labels[target], label);
                });
                if (same) return true;
            }
        }
        return false;
    };
    std::map<std::string, AlertGroup> groups;  // by status + group key
    auto add = [&](const Labels& labels, Severity severity, const std::string& status, AlertItem item) {
        const bool muted = std::any_of(silences.begin(), silences.end(), [&](const Silence& s) {
            return std::all_of(s.matchers.begin(), s.matchers.end(), [&](const auto& m) {
                const auto it = labels.find(m.first);
                return it != labels.end() && glob(m.second, it->second);
            });
        });
        if (muted) {
            if (silenced != nullptr) ++*silenced;
            return;
        }
        std::vector<Delivery> deliveries;
        route_alert(root, labels, severity, Delivery{}, deliveries);
        for (const Delivery& d : deliveries) {
            Labels group_labels;
            std::string key = d.receiver;
            for (const std::string& k : d.group_by) {
                group_labels[k] = label_value(labels, k);
                key += fmt::format("|{}={}", k, group_labels[k]);
            }
            AlertGroup& g = groups[status + "\n" + key];
            if (g.receiver.empty()) {
                g.receiver = d.receiver;
                g.status = status;
                g.group_key = key;
                g.group_labels = std::move(group_labels);
                g.run_id = run.id;
                g.source = run.batch.source;
                g.run_labels = run.batch.labels;
                g.repeat_interval_ms = d.repeat_interval_ms;
                g.group_wait_ms = d.group_wait_ms;
                g.group_interval_ms = d.group_interval_ms;
            }
            g.alerts.push_back(item);
        }
    };
    for (std::size_t i = 0; i < findings.size(); ++i) {
        const Finding& f = findings[i];
        if (!inhibit.empty() && muted_by_rule(i)) {
            if (inhibited != nullptr) ++*inhibited;
            continue;
        }
        add(alert_labels(run, f.labels, f.rule, f.severity), f.severity, "firing",
            AlertItem{f.rule, f.title, f.severity, std::string(to_string(f.entity_kind)), f.entity_name, f.message,
                      f.metrics, f.impact, {}, f.comparison, {}});
    }
    for (const ResolvedAlert& r : resolved)
        add(alert_labels(run, {}, r.rule, r.severity), r.severity, "resolved",
            AlertItem{r.rule, "Regression resolved", r.severity, r.entity_kind, r.entity_name, r.message, {}, {}, {}, {}, {}});
    std::vector<AlertGroup> out;
    for (auto& [key, g] : groups) {
        // As `check` ranks findings: estimated impact, then severity.
        std::stable_sort(g.alerts.begin(), g.alerts.end(), [](const AlertItem& a, const AlertItem& b) {
            const double ia = a.impact.value_or(-1), ib = b.impact.value_or(-1);
            if (ia != ib) return ia > ib;
            return a.severity > b.severity;
        });
        if (g.alerts.size() > max_alerts) {
            g.omitted = g.alerts.size() - max_alerts;
            g.alerts.resize(max_alerts);
        }
        out.push_back(std::move(g));
    }
    return out;
}

void add_every_run_groups(const Route& root, const StoredRun& run, const std::set<std::string>& every_run,
                          std::vector<AlertGroup>& groups) {
    if (every_run.empty()) return;
    std::set<std::string> told;
    for (AlertGroup& g : groups)
        if (every_run.contains(g.receiver) && g.status == "firing") {
            g.every_run = true;
            told.insert(g.receiver);
        }
    const Labels labels = alert_labels(run, {}, "", Severity::info);
    std::vector<Delivery> deliveries;
    route_alert(root, labels, Severity::info, Delivery{}, deliveries);
    for (const Delivery& d : deliveries) {
        if (!every_run.contains(d.receiver) || !told.insert(d.receiver).second) continue;
        AlertGroup g;
        g.receiver = d.receiver;
        g.group_key = d.receiver;
        for (const std::string& k : d.group_by) {
            g.group_labels[k] = label_value(labels, k);
            g.group_key += fmt::format("|{}={}", k, g.group_labels[k]);
        }
        g.run_id = run.id;
        g.source = run.batch.source;
        g.run_labels = run.batch.labels;
        g.every_run = true;
        groups.push_back(std::move(g));
    }
}

std::string alert_fingerprint(const AlertGroup& group, const AlertItem& alert) {
    return fmt::format("{:016x}", fnv1a(group.group_key + "\n" + alert.rule + "\n" + alert.entity_kind + "\n" +
                                        alert.entity_name));
}

void join_groups(AlertGroup& into, const AlertGroup& later, std::size_t max_alerts) {
    if (into.sources.empty()) {
        into.sources.push_back(into.source);
        for (AlertItem& a : into.alerts)
            if (a.source.empty()) a.source = into.source;
    }
    if (std::find(into.sources.begin(), into.sources.end(), later.source) == into.sources.end())
        into.sources.push_back(later.source);
    for (AlertItem a : later.alerts) {
        if (a.source.empty()) a.source = later.source;
        into.alerts.push_back(std::move(a));
    }
    into.omitted += later.omitted;
    std::stable_sort(into.alerts.begin(), into.alerts.end(), [](const AlertItem& a, const AlertItem& b) {
        const double ia = a.impact.value_or(-1), ib = b.impact.value_or(-1);
        if (ia != ib) return ia > ib;
        return a.severity > b.severity;
    });
    if (into.alerts.size() > max_alerts) {
        into.omitted += into.alerts.size() - max_alerts;
        into.alerts.resize(max_alerts);
    }
    if (into.report_url.empty()) into.report_url = later.report_url;
    if (into.commit_url.empty()) into.commit_url = later.commit_url;
}

std::vector<OutboxMessage> quarantine_messages(const Route& root, const std::string& path, const std::string& reason,
                                               const std::string& at, std::int64_t now_ms,
                                               const std::vector<Silence>& silences) {
    const std::string rule(k_quarantine_rule);
    const Labels labels = {{"rule", rule}, {"severity", std::string(to_string(Severity::error))}, {"path", path}};
    const bool muted = std::any_of(silences.begin(), silences.end(), [&](const Silence& s) {
        return std::all_of(s.matchers.begin(), s.matchers.end(), [&](const auto& m) {
            const auto it = labels.find(m.first);
            return it != labels.end() && glob(m.second, it->second);
        });
    });
    if (muted) return {};
    std::vector<Delivery> deliveries;
    route_alert(root, labels, Severity::error, Delivery{}, deliveries);
    std::vector<OutboxMessage> out;
    for (const Delivery& d : deliveries) {
        AlertGroup g;
        g.receiver = d.receiver;
        g.group_key = fmt::format("{}|quarantined={}@{}", d.receiver, path, at);
        for (const std::string& k : d.group_by) g.group_labels[k] = label_value(labels, k);
        g.source = path;
        g.alerts.push_back(AlertItem{rule, "Report file quarantined", Severity::error, "file", path,
                                     fmt::format("{}; not read again until `perfwatch files retry` (or it changes)", reason),
                                     {}, {}, {}, {}, {}});
        OutboxMessage m;
        m.key = g.key();
        m.receiver = g.receiver;
        m.payload = to_json(g);
        m.next_attempt_ms = now_ms;
        m.created_ms = now_ms;
        out.push_back(std::move(m));
    }
    return out;
}

Result<std::vector<OutboxMessage>> outbox_messages(const Outbox& outbox, std::vector<AlertGroup> groups, std::int64_t now_ms) {
    std::vector<OutboxMessage> out;
    for (AlertGroup& g : groups) {
        std::vector<std::string> fingerprints;
        if (g.status == "firing" && !g.every_run) {
            std::vector<AlertItem> kept;
            for (AlertItem& a : g.alerts) {
                const std::string fp = alert_fingerprint(g, a);
                auto last = outbox.fingerprint_sent_at(g.receiver, fp);
                if (!last) return std::unexpected(last.error());
                if (*last && g.repeat_interval_ms > 0 && now_ms - **last < g.repeat_interval_ms) continue;
                fingerprints.push_back(fp);
                kept.push_back(std::move(a));
            }
            g.alerts = std::move(kept);
            if (g.alerts.empty()) continue;
        }
        OutboxMessage m;
        m.key = g.key();
        m.receiver = g.receiver;
        m.run_id = g.run_id;
        m.payload = to_json(g);
        m.fingerprints = std::move(fingerprints);
        m.next_attempt_ms = now_ms;
        m.created_ms = now_ms;
        if (g.group_wait_ms > 0 || g.group_interval_ms > 0) {
            m.group_key = g.status + "|" + g.group_key;
            m.open = true;
            auto open = outbox.open_group_message(m.receiver, m.group_key);
            if (!open) return std::unexpected(open.error());
            if (auto joined = *open ? alert_group_from_json((*open)->payload) : Result<AlertGroup>{}; *open && joined) {
                join_groups(*joined, g);
                m.join_id = (*open)->id;
                m.own_payload = std::move(m.payload);
                m.payload = to_json(*joined);
            } else {
                auto last = outbox.group_last_ms(m.receiver, m.group_key);
                if (!last) return std::unexpected(last.error());
                m.next_attempt_ms = *last && now_ms < **last + g.group_interval_ms ? **last + g.group_interval_ms
                                                                                    : now_ms + g.group_wait_ms;
            }
        }
        out.push_back(std::move(m));
    }
    return out;
}

}  // namespace perfwatch
