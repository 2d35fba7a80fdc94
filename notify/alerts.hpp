#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.hpp"
#include "storage/outbox.hpp"
#include "storage/regressions.hpp"
#include "storage/silences.hpp"
#include "core/error.hpp"
#include "core/model.hpp"

namespace perfwatch {

// Where alerts go (one `receivers` entry of the configuration). Secrets (the webhook URL, the
// SMTP password) are read from a file or an environment variable; `*_source` says which, for
// messages, so that no log line ever holds the secret itself.
struct Receiver {
    std::string name;
    std::string type;  // a row of the sink table (notify/sinks.hpp)
    std::string url;   // webhook URL, or the SMTP server (smtp://host:587, smtps://host:465)
    std::string url_source;
    std::string path;  // jsonl: the file appended to
    std::string from;
    std::vector<std::string> to;
    std::string username;
    std::string password;
    bool starttls = true;  // email: STARTTLS required unless `starttls: false`
    // email with a username: a server that offers no AUTH gets nothing, unless this is set.
    bool allow_unauthenticated = false;
    std::string ca_file;   // extra CA bundle for HTTPS / SMTP TLS
    // github / gitlab: the repository ("owner/name"; GitLab: the project's path or numeric id),
    // the REST API's root (GitHub Enterprise, a self-managed GitLab) and the API token.
    std::string repository;
    std::string api_url;
    std::string token;
    std::string token_source;  // "file PATH" or "env NAME", for messages
    std::chrono::milliseconds rate_limit{0};  // at least this long between two messages
    std::chrono::milliseconds timeout{10000};
    int max_attempts = 12;  // then the message is failed and reported
    int line = 0;
};

// A node of the route tree: an alert goes down the first child whose `match` it satisfies (all
// of them with `continue`), and is delivered by the deepest matching node. Unset fields inherit.
struct Route {
    std::map<std::string, std::string> match;  // run or finding labels; `severity`: at least; `rule`: glob
    std::string receiver;
    std::optional<std::vector<std::string>> group_by;
    std::optional<std::chrono::milliseconds> repeat_interval;
    // Runs of one group arriving within group_wait of the first go out as one message; runs of
    // that group arriving later within group_interval of a message make one follow-up.
    std::optional<std::chrono::milliseconds> group_wait;
    std::optional<std::chrono::milliseconds> group_interval;
    bool continue_matching = false;
    std::vector<Route> routes;
    int line = 0;
};

// One alert inside a group message.
struct AlertItem {
    std::string rule;
    std::string title;
    Severity severity = Severity::info;
    std::string entity_kind;
    std::string entity_name;
    std::string message;
    std::map<std::string, double> metrics;
    std::optional<double> impact;
    std::string source;  // the report it came from, in a message of several runs (else empty)
    std::optional<FindingComparison> comparison;  // a regression's levels and bisection ends
    std::string url;  // the regression's page on the dashboard, when one is published
};

// What one message carries: the alerts of one run for one receiver and group.
struct AlertGroup {
    std::string receiver;
    std::string status = "firing";  // firing, or resolved (a regression went away)
    std::string group_key;          // receiver plus the group_by label values
    std::map<std::string, std::string> group_labels;
    std::int64_t run_id = 0;
    std::string source;
    std::map<std::string, std::string> run_labels;
    std::vector<AlertItem> alerts;  // largest estimated impact first, then severity
    std::size_t omitted = 0;        // alerts left out of a long message
    std::string report_url;         // the run's HTML report, when the daemon publishes them
    std::string commit_url;         // the run's commit on the code host (dashboard.commit_url), when configured
    std::int64_t repeat_interval_ms = 0;  // of the route that chose the receiver (not serialized)
    std::int64_t group_wait_ms = 0;       // likewise
    std::int64_t group_interval_ms = 0;
    std::vector<std::string> sources;     // every report of a message that carries several runs
    // Told even with no alert left, every alert kept whatever its repeat_interval (a receiver
    // whose sink wants every run; not serialized).
    bool every_run = false;

    // "perfwatch: 3 findings (1 error) in llm/main @ abc123 on NVIDIA H100".
    std::string title() const;
    // The idempotency key of its message.
    std::string key() const;
};

std::string to_json(const AlertGroup& group);

// Adds the alerts of `later` (another run of the same group) to `into`: each alert names its
// report, the worst `max_alerts` are kept, and `sources` lists every report.
void join_groups(AlertGroup& into, const AlertGroup& later, std::size_t max_alerts = 50);
Result<AlertGroup> alert_group_from_json(const std::string& text);

// A regression that went away with a run: sent as a resolved message.
// While an alert matching `source_match` fires, alerts matching `target_match` whose `equal`
// labels have the same values are not sent (Alertmanager's inhibit rules). Matchers are as a
// route's `match`; labels are the run's and the rule's, plus `rule`, `severity`, `entity_kind`
// and `entity` (the entity's name). An alert never inhibits itself.
struct InhibitRule {
    std::map<std::string, std::string> source_match;
    std::map<std::string, std::string> target_match;
    std::vector<std::string> equal;
    int line = 0;
    int col = 0;
};

struct ResolvedAlert {
    std::string rule;
    Severity severity = Severity::warning;
    std::string entity_kind;
    std::string entity_name;
    std::string message;
};

// The alert that a regression went away: "duration_median is back to its baseline (back inside
// the band; regression opened at run 7)".
ResolvedAlert resolved_alert(const RegressionState& state, Severity severity);

// Routes the findings (and resolved regressions) of one run through `root` and groups them
// per receiver and group_by values: one group per receiver and group. At most `max_alerts` per
// group are carried (the worst); the rest are counted in `omitted`.
// Alerts matching one of `silences` are left out (counted in `silenced` when given), and so are
// firing alerts an `inhibit` rule mutes (counted in `inhibited`).
std::vector<AlertGroup> group_alerts(const Route& root, const StoredRun& run, const std::vector<Finding>& findings,
                                     const std::vector<ResolvedAlert>& resolved, std::size_t max_alerts = 50,
                                     const std::vector<Silence>& silences = {}, std::size_t* silenced = nullptr,
                                     const std::vector<InhibitRule>& inhibit = {}, std::size_t* inhibited = nullptr);

// For the receivers named in `every_run` (their sinks want every run: a commit status per
// commit): their groups in `groups` are marked every_run, and where the route tree gives one of
// them the run (routed on the run's labels at severity info) but no group holds an alert for
// it, an empty firing group is added, so a clean run is told too.
void add_every_run_groups(const Route& root, const StoredRun& run, const std::set<std::string>& every_run,
                          std::vector<AlertGroup>& groups);

// Identifies the same alert across runs: rule, entity and group.
std::string alert_fingerprint(const AlertGroup& group, const AlertItem& alert);

// The rule id of the alert that a watched file was quarantined.
inline constexpr std::string_view k_quarantine_rule = "file-quarantined";

// The messages telling that the watched file `path` was quarantined at `at` (UTC) for `reason`:
// one error alert of rule k_quarantine_rule (entity kind "file", named by the path) routed through
// `root` on the labels rule, severity and path, one message per receiver, due at `now_ms`; none
// when a silence matches. The key holds the path and `at`: a restart never tells it twice, a file
// quarantined again after a retry is told again.
std::vector<OutboxMessage> quarantine_messages(const Route& root, const std::string& path, const std::string& reason,
                                               const std::string& at, std::int64_t now_ms,
                                               const std::vector<Silence>& silences = {});

// Outbox messages for `groups`, leaving out firing alerts enqueued for the same receiver within
// their route's repeat_interval (looked up in `db`); a group left empty sends nothing. Under a
// route with group_wait/group_interval a message joins its group's open message when there is
// one, and is otherwise due group_wait from now, or group_interval after the group's last one.
Result<std::vector<OutboxMessage>> outbox_messages(const Outbox& outbox, std::vector<AlertGroup> groups, std::int64_t now_ms);

}  // namespace perfwatch
