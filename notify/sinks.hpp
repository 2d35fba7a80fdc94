#pragma once

#include <chrono>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>

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

// One kind of receiver. Delivers a group's message and classifies the result: 2xx sent; 429,
// 408, 5xx and network errors retried; other 4xx permanent.
class Sink {
public:
    virtual ~Sink() = default;
    virtual std::string_view type() const = 0;
    virtual Delivery deliver(const Receiver& receiver, const AlertGroup& group, const std::string& key) const = 0;
};

// The sinks, one per receiver type: slack, teams, mattermost, webhook, email, jsonl, stdout.
std::span<const Sink* const> sinks();
const Sink* find_sink(std::string_view type);

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
