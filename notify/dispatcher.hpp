#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "notify/alerts.hpp"
#include "notify/sinks.hpp"
#include "storage/outbox.hpp"

namespace perfwatch {

// The outbox's delivery stage: which due messages go now (one in flight per receiver, no faster
// than its rate limit, claimed for a lease so one daemon of a fleet sends each) and what an
// attempt's outcome makes of a message (sent, pending again after the retry delay, failed for
// good). It decides and records; the caller runs the sends on its own threads and logs.
class Dispatcher {
public:
    // `owner` names this daemon in its claims.
    Dispatcher(Outbox& outbox, std::string owner);

    // A message to send now, with its receiver and its alert group.
    struct Send {
        OutboxMessage message;
        Receiver receiver;
        AlertGroup group;
    };
    // A message that can never go (its receiver is gone, its payload unreadable): marked failed.
    struct GivenUp {
        OutboxMessage message;
        std::string why;
    };
    struct Plan {
        std::vector<Send> sends;
        std::vector<GivenUp> given_up;
        std::int64_t wake_ms = 0;  // when to plan again (0: when a send ends, or never)
        std::optional<Error> error;  // the database failed: planning stopped there (the sends stand)
    };

    // Claims (for `lease`) and returns what goes now among the due messages; marks the hopeless
    // ones failed.
    Plan plan(std::span<const Receiver> receivers, std::chrono::milliseconds lease, std::int64_t now_ms);

    // What became of an attempt.
    enum class Recorded { sent, retry, failed };
    struct Outcome {
        Recorded recorded = Recorded::sent;
        std::chrono::milliseconds retry_in{0};  // retry: the wait before the next attempt
    };
    // Records the outcome of sending `send` (and frees its receiver for the next message).
    Result<Outcome> record(const Send& send, const Delivery& delivery, std::int64_t now_ms);

    std::size_t in_flight() const { return m_sending_to.size(); }

private:
    Outbox& m_outbox;
    std::string m_owner;
    std::set<std::string> m_sending_to;               // receivers with a send in flight
    std::map<std::string, std::int64_t> m_next_send_ms;  // per receiver: its rate limit
    std::mt19937_64 m_rng{std::random_device{}()};
};

}  // namespace perfwatch
