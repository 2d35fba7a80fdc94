#include "tests/http_peer.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>

namespace perfwatch::test {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

HttpPeer::HttpPeer(std::function<PeerReply(const PeerRequest&)> handle)
    : m_handle(std::move(handle)), m_acceptor(m_io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)) {
    m_thread = std::thread([this] { serve(); });
}

HttpPeer::~HttpPeer() {
    m_stop = true;
    boost::system::error_code ignored;
    tcp::socket s(m_io);  // wakes the blocking accept
    s.connect(m_acceptor.local_endpoint(), ignored);
    m_thread.join();
}

void HttpPeer::serve() {
    while (!m_stop) {
        tcp::socket socket(m_io);
        boost::system::error_code ec;
        m_acceptor.accept(socket, ec);
        if (ec || m_stop) continue;
        beast::flat_buffer buffer;
        // Several requests may come over one connection.
        while (!m_stop) {
            http::request<http::string_body> req;
            http::read(socket, buffer, req, ec);
            if (ec) break;
            PeerRequest r{std::string(req.method_string()), std::string(req.target()), {}, req.body(),
                          std::chrono::steady_clock::now()};
            for (const auto& field : req) {
                std::string name(field.name_string());
                for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                r.headers[name] = std::string(field.value());
            }
            const PeerReply a = m_handle(r);
            {
                std::lock_guard lock(m_mutex);
                m_requests.emplace_back(r, a.status);
            }
            http::response<http::string_body> res{static_cast<http::status>(a.status), 11};
            for (const auto& [name, value] : a.headers) res.set(name, value);
            if (!a.body.empty()) res.set(http::field::content_type, "application/json");
            res.body() = a.body;
            res.keep_alive(req.keep_alive());
            res.prepare_payload();
            http::write(socket, res, ec);
            if (ec || !req.keep_alive()) break;
        }
    }
}

}  // namespace perfwatch::test
