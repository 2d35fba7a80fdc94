#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace perfwatch::test {

struct Received {
    std::string target;
    std::string key;  // Idempotency-Key
    std::string body;
    unsigned status = 0;  // what it was answered
    std::chrono::steady_clock::time_point at;
};

// A real HTTP peer on loopback. `answer(n)` gives the status (and Retry-After) of the n-th request
// (0-based) and may block to simulate a slow receiver.
class Receiver {
public:
    struct Answer {
        unsigned status = 200;
        std::string retry_after;
        std::chrono::milliseconds delay{0};
    };

    explicit Receiver(std::function<Answer(std::size_t)> answer)
        : m_answer(std::move(answer)), m_acceptor(m_io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)) {
        m_thread = std::thread([this] { serve(); });
    }
    ~Receiver();
    unsigned short port() const { return m_acceptor.local_endpoint().port(); }
    std::vector<Received> received() const {
        std::lock_guard lock(m_mutex);
        return m_received;
    }

private:
    void serve();

    std::function<Answer(std::size_t)> m_answer;
    boost::asio::io_context m_io;
    boost::asio::ip::tcp::acceptor m_acceptor;
    std::thread m_thread;
    std::atomic<bool> m_stop{false};
    mutable std::mutex m_mutex;
    std::vector<Received> m_received;
};

}  // namespace perfwatch::test
