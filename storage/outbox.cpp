#include "storage/outbox.hpp"

#include <fmt/format.h>

#include "storage/sql.hpp"

namespace perfwatch {

using sql::guarded;
using sql::query_int;
using sql::Statement;

std::size_t Outbox::enqueue(const std::vector<OutboxMessage>& messages) {
    Statement ins(*m_db,
                          "INSERT INTO outbox(key, receiver, run_id, payload, next_attempt_ms, created_ms, "
                          "group_key, open) VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(key) DO NOTHING");
    Statement join(*m_db, "UPDATE outbox SET payload = ? WHERE id = ? AND open = 1 AND state = 'pending'");
    Statement fp(*m_db,
                         "INSERT INTO alert_fingerprints(receiver, fingerprint, last_ms) VALUES(?,?,?) "
                         "ON CONFLICT(receiver, fingerprint) DO UPDATE SET last_ms = excluded.last_ms");
    std::size_t added = 0;
    for (const OutboxMessage& m : messages) {
        bool joined = false;
        if (m.join_id > 0) {
            join.bind(1, m.payload);
            join.bind(2, m.join_id);
            joined = join.exec() > 0;
            join.reset();
        }
        if (!joined) {
            ins.bind(1, m.key);
            ins.bind(2, m.receiver);
            ins.bind(3, m.run_id);
            ins.bind(4, m.join_id > 0 ? m.own_payload : m.payload);
            ins.bind(5, m.next_attempt_ms);
            ins.bind(6, m.created_ms);
            ins.bind(7, m.group_key);
            ins.bind(8, m.open ? 1 : 0);
            added += static_cast<std::size_t>(ins.exec());
            ins.reset();
        }
        for (const std::string& f : m.fingerprints) {
            fp.bind(1, m.receiver);
            fp.bind(2, f);
            fp.bind(3, m.created_ms);
            fp.exec();
            fp.reset();
        }
    }
    return added;
}

Result<bool> Outbox::claim_message(std::int64_t id, const std::string& owner, std::int64_t until_ms, std::int64_t now_ms) {
    return guarded(m_name, [&]() -> Result<bool> {
        Statement st(*m_db, "UPDATE outbox SET claimed_by = ?, lease_until_ms = ? WHERE id = ? AND state = 'pending' "
                            "AND (lease_until_ms IS NULL OR lease_until_ms <= ? OR claimed_by = ?)");
        st.bind(1, owner);
        st.bind(2, until_ms);
        st.bind(3, id);
        st.bind(4, now_ms);
        st.bind(5, owner);
        return st.exec() > 0;
    });
}

Result<std::optional<std::int64_t>> Outbox::fingerprint_sent_at(const std::string& receiver,
                                                          const std::string& fingerprint) const {
    return guarded(m_name, [&]() -> Result<std::optional<std::int64_t>> {
        Statement st(*m_db, "SELECT last_ms FROM alert_fingerprints WHERE receiver = ? AND fingerprint = ?");
        st.bind(1, receiver);
        st.bind(2, fingerprint);
        if (!st.step()) return std::optional<std::int64_t>{};
        return std::optional<std::int64_t>{st.column(0).as_int64()};
    });
}

namespace {

OutboxMessage read_message(Statement& st) {
    OutboxMessage m;
    m.id = st.column(0).as_int64();
    m.key = st.column(1).as_string();
    m.receiver = st.column(2).as_string();
    m.run_id = st.column(3).is_null() ? 0 : st.column(3).as_int64();
    m.payload = st.column(4).as_string();
    m.state = message_state_from_string(st.column(5).as_string()).value_or(MessageState::pending);
    m.attempts = st.column(6).as_int();
    m.next_attempt_ms = st.column(7).as_int64();
    m.last_error = st.column(8).as_string();
    m.created_ms = st.column(9).as_int64();
    m.group_key = st.column(10).as_string();
    m.open = st.column(11).as_int() != 0;
    return m;
}

constexpr const char* k_outbox_columns =
    "id, key, receiver, run_id, payload, state, attempts, next_attempt_ms, last_error, created_ms, group_key, open";

}  // namespace

Result<std::vector<OutboxMessage>> Outbox::due_messages(std::int64_t now_ms, std::size_t limit,
                                                    const std::string& owner) const {
    return guarded(m_name, [&]() -> Result<std::vector<OutboxMessage>> {
        Statement st(*m_db, fmt::format("SELECT {} FROM outbox WHERE state = 'pending' AND next_attempt_ms <= ? "
                                                "AND (lease_until_ms IS NULL OR lease_until_ms <= ? OR claimed_by = ?) "
                                                "ORDER BY next_attempt_ms, id LIMIT ?",
                                                k_outbox_columns));
        st.bind(1, now_ms);
        st.bind(2, now_ms);
        st.bind(3, owner);
        st.bind(4, static_cast<std::int64_t>(limit));
        std::vector<OutboxMessage> out;
        while (st.step()) out.push_back(read_message(st));
        return out;
    });
}

Result<std::vector<OutboxMessage>> Outbox::newest(std::size_t limit) const {
    return guarded(m_name, [&]() -> Result<std::vector<OutboxMessage>> {
        Statement st(*m_db, fmt::format("SELECT {} FROM outbox ORDER BY id DESC LIMIT ?", k_outbox_columns));
        st.bind(1, static_cast<std::int64_t>(limit));
        std::vector<OutboxMessage> out;
        while (st.step()) out.push_back(read_message(st));
        return out;
    });
}

Result<std::optional<std::int64_t>> Outbox::next_due_ms() const {
    return guarded(m_name, [&]() -> Result<std::optional<std::int64_t>> {
        Statement st(*m_db, "SELECT min(CASE WHEN lease_until_ms > next_attempt_ms THEN lease_until_ms "
                                 "ELSE next_attempt_ms END) FROM outbox WHERE state = 'pending'");
        if (!st.step() || st.column(0).is_null()) return std::optional<std::int64_t>{};
        return std::optional<std::int64_t>{st.column(0).as_int64()};
    });
}

std::string_view to_string(MessageState state) {
    switch (state) {
        case MessageState::pending: return "pending";
        case MessageState::sent: return "sent";
        case MessageState::failed: return "failed";
    }
    return "pending";
}

std::optional<MessageState> message_state_from_string(std::string_view text) {
    for (MessageState s : {MessageState::pending, MessageState::sent, MessageState::failed})
        if (to_string(s) == text) return s;
    return std::nullopt;
}

Result<void> Outbox::message_attempted(std::int64_t id, MessageState state, std::int64_t next_attempt_ms,
                                   const std::string& error, std::int64_t now_ms) {
    return guarded(m_name, [&]() -> Result<void> {
        Statement st(*m_db,
                             "UPDATE outbox SET state = ?, attempts = attempts + 1, next_attempt_ms = ?, last_error = ?, "
                     "claimed_by = NULL, lease_until_ms = NULL, "
                             "done_ms = CASE WHEN ? = 'pending' THEN NULL ELSE ? END WHERE id = ?");
        const std::string text(to_string(state));
        st.bind(1, text);
        st.bind(2, next_attempt_ms);
        st.bind(3, error);
        st.bind(4, text);
        st.bind(5, now_ms);
        st.bind(6, id);
        st.exec();
        return {};
    });
}

Result<std::optional<OutboxMessage>> Outbox::open_group_message(const std::string& receiver,
                                                            const std::string& group_key) const {
    return guarded(m_name, [&]() -> Result<std::optional<OutboxMessage>> {
        Statement st(*m_db, fmt::format("SELECT {} FROM outbox WHERE receiver = ? AND group_key = ? AND "
                                                "state = 'pending' AND open = 1 ORDER BY id LIMIT 1",
                                                k_outbox_columns));
        st.bind(1, receiver);
        st.bind(2, group_key);
        if (!st.step()) return std::optional<OutboxMessage>{};
        return std::optional<OutboxMessage>{read_message(st)};
    });
}

Result<std::optional<std::int64_t>> Outbox::group_last_ms(const std::string& receiver, const std::string& group_key) const {
    return guarded(m_name, [&]() -> Result<std::optional<std::int64_t>> {
        Statement st(*m_db,
                             "SELECT max(CASE WHEN state = 'sent' THEN done_ms ELSE next_attempt_ms END) FROM outbox "
                             "WHERE receiver = ? AND group_key = ? AND open = 0 AND state IN ('sent', 'pending')");
        st.bind(1, receiver);
        st.bind(2, group_key);
        if (!st.step() || st.column(0).is_null()) return std::optional<std::int64_t>{};
        return std::optional<std::int64_t>{st.column(0).as_int64()};
    });
}

Result<void> Outbox::close_message(std::int64_t id) {
    return guarded(m_name, [&]() -> Result<void> {
        Statement st(*m_db, "UPDATE outbox SET open = 0 WHERE id = ?");
        st.bind(1, id);
        st.exec();
        return {};
    });
}

Result<std::int64_t> Outbox::outbox_depth() const {
    return guarded(m_name, [&]() -> Result<std::int64_t> {
        return query_int(*m_db, "SELECT count(*) FROM outbox WHERE state = 'pending'");
    });
}

}  // namespace perfwatch
