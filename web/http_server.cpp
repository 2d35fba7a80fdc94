#include "web/http_server.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include <chrono>
#include <memory>

namespace perfwatch {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

class Session : public std::enable_shared_from_this<Session> {
public:
    Session(tcp::socket socket, const HttpHandler& handler) : m_stream(std::move(socket)), m_handler(handler) {}

    void start() {
        m_parser.header_limit(64 * 1024);
        m_parser.body_limit(16 * 1024);
        m_stream.expires_after(std::chrono::seconds(10));
        http::async_read(m_stream, m_buffer, m_parser,
                         [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
    }

private:
    void on_read(beast::error_code ec) {
        if (ec) return;  // the peer went away or sent garbage: nothing to answer
        const auto& req = m_parser.get();
        auto header = [&](http::field f) {
            const auto it = req.find(f);
            return it == req.end() ? std::string() : std::string(it->value());
        };
        HttpRequest request;
        request.method = std::string(req.method_string());
        request.target = std::string(req.target());
        request.body = req.body();
        request.host = header(http::field::host);
        request.origin = header(http::field::origin);
        request.authorization = header(http::field::authorization);
        request.content_type = header(http::field::content_type);
        if (const auto it = req.find("Sec-Fetch-Site"); it != req.end()) request.sec_fetch_site = std::string(it->value());
        const HttpResponse r = m_handler(request);
        m_response.version(req.version());
        m_response.result(r.status);
        m_response.set(http::field::server, "perfwatch");
        m_response.set(http::field::content_type, r.content_type);
        for (const auto& [name, value] : r.headers) m_response.set(name, value);
        m_response.keep_alive(false);
        m_response.body() = r.body;
        m_response.prepare_payload();
        http::async_write(m_stream, m_response, [self = shared_from_this()](beast::error_code, std::size_t) {
            beast::error_code ignored;
            self->m_stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
        });
    }

    beast::tcp_stream m_stream;
    const HttpHandler& m_handler;
    beast::flat_buffer m_buffer;
    http::request_parser<http::string_body> m_parser;
    http::response<http::string_body> m_response;
};

}  // namespace

HttpServer::HttpServer(boost::asio::io_context& io, HttpHandler handler)
    : m_io(io), m_acceptor(io), m_handler(std::move(handler)) {}

Result<std::string> HttpServer::listen(const std::string& address, unsigned short port) {
    const std::string where = fmt::format("{}:{}", address, port);
    boost::system::error_code ec;
    const auto ip = boost::asio::ip::make_address(address, ec);
    if (ec) return fail(where, 0, fmt::format("not an IP address: {}", ec.message()));
    const tcp::endpoint endpoint(ip, port);
    m_acceptor.open(endpoint.protocol(), ec);
    if (!ec) m_acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) m_acceptor.bind(endpoint, ec);
    if (!ec) m_acceptor.listen(boost::asio::socket_base::max_listen_connections, ec);
    if (ec) {
        boost::system::error_code ignored;
        m_acceptor.close(ignored);
        return fail(where, 0, fmt::format("cannot listen: {}", ec.message()));
    }
    accept();
    const auto bound = m_acceptor.local_endpoint();
    return bound.address().is_v6() ? fmt::format("[{}]:{}", bound.address().to_string(), bound.port())
                                    : fmt::format("{}:{}", bound.address().to_string(), bound.port());
}

void HttpServer::stop() {
    boost::system::error_code ignored;
    m_acceptor.close(ignored);
}

void HttpServer::accept() {
    m_acceptor.async_accept(m_io, [this](boost::system::error_code ec, tcp::socket socket) {
        if (ec == boost::asio::error::operation_aborted || !m_acceptor.is_open()) return;
        if (!ec) std::make_shared<Session>(std::move(socket), m_handler)->start();
        accept();
    });
}

}  // namespace perfwatch
