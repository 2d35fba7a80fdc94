#include "notify/dispatcher.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace perfwatch {

Dispatcher::Dispatcher(Outbox& outbox, std::string owner) : m_outbox(outbox), m_owner(std::move(owner)) {}

Dispatcher::Plan Dispatcher::plan(std::span<const Receiver> receivers, std::chrono::milliseconds lease,
                                  std::int64_t now_ms) {
    Plan plan;
    auto due = m_outbox.due_messages(now_ms, 64, m_owner);
    if (!due) {
        plan.error = due.error();
        return plan;
    }
    const auto wake_at = [&](std::int64_t t) { plan.wake_ms = plan.wake_ms == 0 ? t : std::min(plan.wake_ms, t); };
    for (OutboxMessage& m : *due) {
        if (m_sending_to.contains(m.receiver)) continue;
        if (auto it = m_next_send_ms.find(m.receiver); it != m_next_send_ms.end() && it->second > now_ms) {
            wake_at(it->second);
            continue;
        }
        const auto receiver = std::find_if(receivers.begin(), receivers.end(),
                                           [&](const Receiver& r) { return r.name == m.receiver; });
        auto group = alert_group_from_json(m.payload);
        if (receiver == receivers.end() || !group) {
            std::string why = receiver == receivers.end()
                                  ? fmt::format("receiver '{}' is no longer configured", m.receiver)
                                  : group.error().message;
            if (auto r = m_outbox.message_attempted(m.id, MessageState::failed, m.next_attempt_ms, why, now_ms); !r) {
                plan.error = r.error();
                return plan;
            }
            plan.given_up.push_back({std::move(m), std::move(why)});
            continue;
        }
        // One daemon of a fleet sends it; the others skip it while the lease holds.
        auto claimed = m_outbox.claim_message(m.id, m_owner, now_ms + lease.count(), now_ms);
        if (!claimed) {
            plan.error = claimed.error();
            return plan;
        }
        if (!*claimed) continue;
        // From here it is sent as it is: later runs of its group make a follow-up.
        if (m.open)
            if (auto closed = m_outbox.close_message(m.id); !closed) {
                plan.error = closed.error();
                return plan;
            }
        m_sending_to.insert(m.receiver);
        m_next_send_ms[m.receiver] = now_ms + receiver->rate_limit.count();
        plan.sends.push_back({std::move(m), *receiver, std::move(*group)});
    }
    auto next = m_outbox.next_due_ms();
    if (!next) plan.error = next.error();
    // While a send is in flight, its end plans again.
    else if (*next && m_sending_to.empty()) wake_at(**next);
    return plan;
}

Result<Dispatcher::Outcome> Dispatcher::record(const Send& send, const Delivery& d, std::int64_t now_ms) {
    const OutboxMessage& m = send.message;
    m_sending_to.erase(m.receiver);
    Outcome out;
    Result<void> saved;
    if (d.outcome == Delivery::Outcome::sent) {
        out.recorded = Recorded::sent;
        saved = m_outbox.message_attempted(m.id, MessageState::sent, m.next_attempt_ms, "", now_ms);
    } else if (d.outcome == Delivery::Outcome::retry && m.attempts + 1 < send.receiver.max_attempts) {
        out.recorded = Recorded::retry;
        out.retry_in = retry_delay(m.attempts + 1, d.retry_after, m_rng);
        saved = m_outbox.message_attempted(m.id, MessageState::pending, now_ms + out.retry_in.count(), d.error, now_ms);
    } else {
        out.recorded = Recorded::failed;
        saved = m_outbox.message_attempted(m.id, MessageState::failed, m.next_attempt_ms, d.error, now_ms);
    }
    if (!saved) return std::unexpected(saved.error());
    return out;
}

}  // namespace perfwatch
