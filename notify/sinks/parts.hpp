#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "notify/sinks.hpp"

// What the sinks share: the pieces of message text and the HTTP transport.
namespace perfwatch::sink_parts {

std::string severity_text(Severity s);
// The report an alert came from.
std::string_view source_of(const AlertGroup& g, const AlertItem& a);
// ", in REPORT" after an entity in a message that carries several runs' alerts.
std::string origin_text(const AlertGroup& g, const AlertItem& a);
// " (impact 12.0% of GPU time)", or nothing.
std::string impact_text(const AlertItem& a);
// "run 3 from PATH; 2 more not shown".
std::string footer(const AlertGroup& g);

// libcurl's global state, set up once per process before any transfer.
void curl_init_once();

// POSTs `body` as JSON to the receiver's URL with the Idempotency-Key header, classifying the answer.
Delivery http_post_json(const Receiver& receiver, const std::string& body, const std::string& key);

// One call of a REST API.
struct HttpCall {
    std::string method = "GET";
    std::string url;
    std::vector<std::string> headers;  // "Name: value" (a token among them: never in an error)
    std::string body;                  // sent as application/json when not empty
};

// What a call came to: its classification (as http_post_json's), the answer's body (at most
// 8 MiB kept) and the URL of the next page when the answer is paged (a Link header's rel="next").
struct HttpReply {
    Delivery delivery;
    std::string body;
    std::string next_page;
};

// Makes `call` with the receiver's timeout and CA file, following no redirect. Besides 429 and
// 5xx, a 403 that says it is a rate limit (Retry-After, or X-RateLimit-Remaining: 0 with
// X-RateLimit-Reset) is retried, after the wait it names.
HttpReply http_call(const Receiver& receiver, const HttpCall& call);

// `text` percent-encoded for a URL's path segment or query value (RFC 3986 unreserved kept).
std::string url_encoded(std::string_view text);

// A sink that POSTs a JSON body to the receiver's webhook URL (the chat sinks and the webhook).
class JsonPostSink final : public Sink {
public:
    using Body = std::string (*)(const AlertGroup&, const std::string& key);
    JsonPostSink(std::string_view type, Body render, std::chrono::milliseconds rate_limit = std::chrono::milliseconds(0))
        : m_type(type), m_body(render), m_rate_limit(rate_limit) {}
    std::string_view type() const override { return m_type; }
    std::vector<std::string> missing(const Receiver& receiver, bool url_given) const override;
    std::chrono::milliseconds default_rate_limit() const override { return m_rate_limit; }
    std::string body(const AlertGroup& g, const std::string& key) const override { return m_body(g, key); }
    Delivery deliver(const Receiver& r, const AlertGroup& g, const std::string& key) const override {
        return http_post_json(r, body(g, key), key);
    }

private:
    std::string_view m_type;
    Body m_body;
    std::chrono::milliseconds m_rate_limit;
};

}  // namespace perfwatch::sink_parts
