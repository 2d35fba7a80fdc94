#pragma once

#include <chrono>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "notify/alerts.hpp"

namespace perfwatch {

// What one delivery attempt came to.
struct Delivery {
    enum class Outcome { sent, retry, permanent };
    Outcome outcome = Outcome::sent;
    long http_status = 0;
    std::optional<std::chrono::seconds> retry_after;  // from a 429 or 503 Retry-After header
    std::string error;  // never holds a secret (no URL, no password)
};

// One kind of receiver, one file under notify/sinks/ and one row of the sink table (sinks.cpp).
// It says what its receivers must configure, renders a group's message for its medium (all
// report content through notify/escape) and delivers it: 2xx sent; 429, 408, 5xx and network
// errors retried; other 4xx permanent.
class Sink {
public:
    virtual ~Sink() = default;
    // The receiver type in the configuration (`type: slack`).
    virtual std::string_view type() const = 0;
    // What a receiver of this type lacks, one sentence each ("needs url_file or url_env (the
    // webhook URL)"); empty when complete. `url_given`: url_file/url_env/smtp_url was set (its
    // value may have failed to read, which is diagnosed apart).
    virtual std::vector<std::string> missing(const Receiver& receiver, bool url_given) const = 0;
    // True when every run routed to it is told, one without alerts too, and a repeat of an alert
    // is no reason to leave it out (a commit status per commit, a comment edited in place).
    virtual bool every_run() const { return false; }
    // The least time between two messages when the receiver sets no rate_limit.
    virtual std::chrono::milliseconds default_rate_limit() const { return std::chrono::milliseconds(0); }
    // The message as the receiver gets it (the HTTP body, the mail's text part, the appended line).
    virtual std::string body(const AlertGroup& group, const std::string& key) const = 0;
    virtual Delivery deliver(const Receiver& receiver, const AlertGroup& group, const std::string& key) const = 0;
};

// The sink table, one row per receiver type (slack, teams, mattermost, discord, webhook, email,
// jsonl, stdout, github, gitlab).
std::span<const Sink* const> sinks();
// nullptr for an unknown type.
const Sink* find_sink(std::string_view type);
// The receiver types, in the order of the sink table.
const std::vector<std::string>& receiver_types();

// The message bodies, for tests and the jsonl/stdout sinks.
std::string slack_message(const AlertGroup& group);
std::string teams_message(const AlertGroup& group);
std::string mattermost_message(const AlertGroup& group);
std::string webhook_message(const AlertGroup& group, const std::string& key);
// The Subject of an alert email (before MIME encoding): one line, mentions and links inert.
std::string email_subject(const AlertGroup& group);
std::string email_text(const AlertGroup& group);
std::string email_html(const AlertGroup& group);
// Slack mrkdwn escaping: & < > become entities.
std::string slack_escape(std::string_view text);

// The wait before attempt `attempts + 1`: Retry-After when given, else exponential from 2 s
// (capped at 10 min) with jitter in [half, full].
std::chrono::milliseconds retry_delay(int attempts, std::optional<std::chrono::seconds> retry_after,
                                      std::mt19937_64& rng);

}  // namespace perfwatch
