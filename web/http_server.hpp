#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace perfwatch {

// One request as the handlers see it: the headers they judge, the others dropped.
struct HttpRequest {
    std::string method;
    std::string target;  // path and query, as sent
    std::string body;
    std::string host;
    std::string origin;          // absent: ""
    std::string sec_fetch_site;  // "same-origin", "cross-site", ...; absent: ""
    std::string authorization;
    std::string content_type;
};

struct HttpResponse {
    unsigned status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;  // more headers (Location, ...)
};

// Answers one request; called on the io_context's thread.
using HttpHandler = std::function<HttpResponse(const HttpRequest& request)>;

// A small HTTP/1.1 server (Boost.Beast) for /healthz, /metrics and the dashboard: one request per
// connection, headers over 64 KiB (a 5 KB kernel name in a link) or a body over 16 KiB refused, a connection idle for 10 s closed.
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
