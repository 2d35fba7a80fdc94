#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <functional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace perfwatch {

struct HttpResponse {
    unsigned status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
};

// Answers one request; called on the io_context's thread.
using HttpHandler = std::function<HttpResponse(std::string_view method, std::string_view target)>;

// A small HTTP/1.1 server (Boost.Beast) for /healthz and /metrics: one request per connection,
// requests over 8 KiB refused, a connection idle for 10 s closed.
class HttpServer {
public:
    HttpServer(boost::asio::io_context& io, HttpHandler handler);
    // Binds and starts accepting; port 0 takes a free one. Returns the bound "address:port".
    Result<std::string> listen(const std::string& address, unsigned short port);
    void stop();

private:
    void accept();

    boost::asio::io_context& m_io;
    boost::asio::ip::tcp::acceptor m_acceptor;
    HttpHandler m_handler;
};

}  // namespace perfwatch
