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
