#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace perfwatch::test {

// One request as a real HTTP peer read it; header names lower-cased.
struct PeerRequest {
    std::string method;
    std::string target;
    std::map<std::string, std::string> headers;
    std::string body;
    std::chrono::steady_clock::time_point at{};  // when it was read
};

struct PeerReply {
    unsigned status = 200;
    std::map<std::string, std::string> headers;
    std::string body;
};

// A REST peer on loopback: every request goes to `handle` (on the peer's thread, one at a time),
// which answers it; every request and its status are kept in order.
class HttpPeer {
public:
    explicit HttpPeer(std::function<PeerReply(const PeerRequest&)> handle);
    ~HttpPeer();
    unsigned short port() const { return m_acceptor.local_endpoint().port(); }
    std::vector<std::pair<PeerRequest, unsigned>> requests() const {
        std::lock_guard lock(m_mutex);
        return m_requests;
    }

private:
    void serve();

    std::function<PeerReply(const PeerRequest&)> m_handle;
    boost::asio::io_context m_io;
    boost::asio::ip::tcp::acceptor m_acceptor;
    std::thread m_thread;
    std::atomic<bool> m_stop{false};
    mutable std::mutex m_mutex;
    std::vector<std::pair<PeerRequest, unsigned>> m_requests;
};

}  // namespace perfwatch::test
