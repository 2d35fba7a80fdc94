#include "tests/webhook_receiver.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace perfwatch::test {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

Receiver::~Receiver() {
    m_stop = true;
    boost::system::error_code ignored;
    // Wake the blocking accept.
    tcp::socket s(m_io);
    s.connect(m_acceptor.local_endpoint(), ignored);
    m_thread.join();
}

void Receiver::serve() {
    while (!m_stop) {
        tcp::socket socket(m_io);
        boost::system::error_code ec;
        m_acceptor.accept(socket, ec);
        if (ec || m_stop) continue;
        beast::flat_buffer buffer;
        http::request<http::string_body> req;
        http::read(socket, buffer, req, ec);
        if (ec) continue;
        std::size_t n = 0;
        {
            std::lock_guard lock(m_mutex);
            n = m_received.size();
            m_received.push_back({std::string(req.target()), std::string(req["Idempotency-Key"]), req.body(), 0,
                                  std::chrono::steady_clock::now()});
        }
        const Answer a = m_answer(n);
        std::this_thread::sleep_for(a.delay);
        http::response<http::string_body> res{static_cast<http::status>(a.status), 11};
        if (!a.retry_after.empty()) res.set(http::field::retry_after, a.retry_after);
        res.body() = "ok";
        res.prepare_payload();
        http::write(socket, res, ec);
        std::lock_guard lock(m_mutex);
        m_received[n].status = a.status;
    }
}

}  // namespace perfwatch::test
