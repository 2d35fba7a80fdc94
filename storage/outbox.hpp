#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace perfwatch {

namespace sql {
class Connection;
}

// One message of the durable alert outbox: an alert group for one receiver, delivered at least
// once and at most once more after a crash, always with the same idempotency key.
// Where an outbox message stands: waiting for (another) attempt, delivered, or given up.
enum class MessageState { pending, sent, failed };
std::string_view to_string(MessageState state);
std::optional<MessageState> message_state_from_string(std::string_view text);

struct OutboxMessage {
    std::int64_t id = 0;
    std::string key;  // idempotency key; enqueueing the same key twice keeps one message
    std::string receiver;
    std::int64_t run_id = 0;
    std::string payload;             // the alert group as JSON; each sink renders it
    std::vector<std::string> fingerprints;  // the alerts it carries, for repeat_interval (enqueue only)
    MessageState state = MessageState::pending;
    int attempts = 0;
    std::int64_t next_attempt_ms = 0;  // Unix time in ms
    std::string last_error;
    std::int64_t created_ms = 0;
    // A route with group_wait/group_interval: the message's group (status, receiver and group_by
    // values), and whether later runs of the group may still join it (until it is handed to a
    // sender; it is sent as it is then).
    std::string group_key;
    bool open = false;
    // Enqueue only: join the open message `join_id` by replacing its payload with `payload`
    // (both runs' alerts); should it have closed meanwhile, this message is enqueued alone with
    // `own_payload`.
    std::int64_t join_id = 0;
    std::string own_payload;
};

// The durable alert outbox, one part of the store: what notify/ uses and nothing else. Messages are
// enqueued with their run (Db::complete_run), then claimed, attempted and recorded here.
class Outbox {
public:
    // `name` names the database in errors.
    Outbox(sql::Connection& db, std::string name) : m_db(&db), m_name(std::move(name)) {}

    // Inserts `messages` (a key already there is skipped; one with a join_id joins that open
    // message instead) and records their alert fingerprints, inside the caller's transaction.
    // Returns how many were new. Throws sql::SqlError (the caller's transaction is guarded).
    std::size_t enqueue(const std::vector<OutboxMessage>& messages);
    // When an alert with `fingerprint` was last enqueued for `receiver` (Unix ms).
    Result<std::optional<std::int64_t>> fingerprint_sent_at(const std::string& receiver,
                                                          const std::string& fingerprint) const;
    // Claims a pending message for `owner` until `until_ms`: false when another daemon holds an
    // unlapsed lease on it (it sends it) or it is no longer pending. Every attempt ends the lease.
    Result<bool> claim_message(std::int64_t id, const std::string& owner, std::int64_t until_ms, std::int64_t now_ms);
    // Pending messages due at `now_ms` and not leased by anyone but `owner`, oldest first.
    Result<std::vector<OutboxMessage>> due_messages(std::int64_t now_ms, std::size_t limit,
                                                    const std::string& owner = {}) const;
    // The newest messages in any state.
    Result<std::vector<OutboxMessage>> newest(std::size_t limit) const;
    // When the next pending message is due (or its lease lapses, whichever is later).
    Result<std::optional<std::int64_t>> next_due_ms() const;
    // Records an attempt: sent, failed for good, or pending again at `next_attempt_ms`.
    Result<void> message_attempted(std::int64_t id, MessageState state, std::int64_t next_attempt_ms,
                                   const std::string& error, std::int64_t now_ms);
    Result<std::int64_t> outbox_depth() const;
    // The open (still joinable) pending message of a group, oldest first.
    Result<std::optional<OutboxMessage>> open_group_message(const std::string& receiver,
                                                            const std::string& group_key) const;
    // When the group's last message went out (or, pending, is to go out); nullopt when none did.
    Result<std::optional<std::int64_t>> group_last_ms(const std::string& receiver, const std::string& group_key) const;
    // No run joins the message any more (it is being sent).
    Result<void> close_message(std::int64_t id);

private:
    sql::Connection* m_db;
    std::string m_name;
};

}  // namespace perfwatch
