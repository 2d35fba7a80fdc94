#include "notify/sinks/parts.hpp"
#include "core/text.hpp"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <memory>
#include <mutex>

namespace perfwatch::sink_parts {

std::string severity_text(Severity s) { return std::string(to_string(s)); }

std::string_view source_of(const AlertGroup& g, const AlertItem& a) { return a.source.empty() ? g.source : a.source; }

std::string origin_text(const AlertGroup& g, const AlertItem& a) {
    if (g.sources.size() < 2 || a.entity_kind == "run") return {};
    const std::string_view source = source_of(g, a);
    const std::size_t slash = source.find_last_of('/');
    return fmt::format(" in {}", slash == std::string_view::npos ? source : source.substr(slash + 1));
}

std::string impact_text(const AlertItem& a) {
    return a.impact ? fmt::format(" (impact {:.1f}% of GPU time)", *a.impact) : std::string();
}

std::string footer(const AlertGroup& g) {
    std::string out = g.run_id == 0 ? fmt::format("from {}", g.source) : fmt::format("run {} from {}", g.run_id, g.source);
    if (g.omitted > 0) out += fmt::format("; {} more not shown", g.omitted);
    return out;
}

std::vector<std::string> JsonPostSink::missing(const Receiver&, bool url_given) const {
    if (url_given) return {};
    return {"needs url_file or url_env (the webhook URL)"};
}

namespace {

struct CurlGlobal {
    CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
    ~CurlGlobal() { curl_global_cleanup(); }
};

struct Response {
    std::optional<long> retry_after;
    std::optional<long> rate_remaining;
    std::optional<long> rate_reset;  // Unix seconds
    std::string next_page;
    std::string body;
    bool body_cut = false;
};

constexpr std::size_t k_max_body = 8u << 20;

std::optional<long> number_of(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end == text.data()) return std::nullopt;
    return value;
}

// The URL of rel="next" in a Link header's value.
std::string next_link(std::string_view value) {
    std::size_t at = 0;
    while (at < value.size()) {
        const std::size_t open = value.find('<', at);
        const std::size_t close = value.find('>', open);
        if (open == std::string_view::npos || close == std::string_view::npos) break;
        const std::size_t comma = value.find(',', close);
        const std::string_view params = value.substr(close + 1, comma == std::string_view::npos ? std::string_view::npos : comma - close - 1);
        if (params.find("rel=\"next\"") != std::string_view::npos) return std::string(value.substr(open + 1, close - open - 1));
        if (comma == std::string_view::npos) break;
        at = comma + 1;
    }
    return {};
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
    const std::size_t n = size * count;
    const std::string_view line(data, n);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return n;
    const std::string name = ascii_lower(line.substr(0, colon));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
    auto& r = *static_cast<Response*>(user);
    // An HTTP date instead of seconds in Retry-After is not read: the exponential backoff applies.
    if (name == "retry-after") r.retry_after = number_of(value);
    else if (name == "x-ratelimit-remaining" || name == "ratelimit-remaining") r.rate_remaining = number_of(value);
    else if (name == "x-ratelimit-reset" || name == "ratelimit-reset") r.rate_reset = number_of(value);
    else if (name == "link") r.next_page = next_link(value);
    return n;
}

std::size_t keep_body(char* data, std::size_t size, std::size_t count, void* user) {
    auto& r = *static_cast<Response*>(user);
    const std::size_t n = size * count;
    if (r.body.size() + n > k_max_body) {
        r.body_cut = true;
        return n;
    }
    r.body.append(data, n);
    return n;
}

Delivery classify(CURLcode code, long status, const Response& r) {
    Delivery d;
    d.http_status = status;
    if (code != CURLE_OK) {
        d.outcome = Delivery::Outcome::retry;
        d.error = curl_easy_strerror(code);
        return d;
    }
    if (status >= 200 && status < 300) return d;
    d.error = fmt::format("HTTP {}", status);
    // GitHub answers a rate limit with 403 (or 429), naming the wait in Retry-After or the reset time.
    const bool rate_limited = status == 429 || (status == 403 && (r.retry_after || (r.rate_remaining && *r.rate_remaining == 0)));
    if (r.retry_after && (rate_limited || status == 503)) {
        d.retry_after = std::chrono::seconds(std::clamp(*r.retry_after, 0L, 3600L));
    } else if (rate_limited && r.rate_reset) {
        const long now = static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(
                                               std::chrono::system_clock::now().time_since_epoch())
                                               .count());
        d.retry_after = std::chrono::seconds(std::clamp(*r.rate_reset - now, 1L, 3600L));
    }
    if (status == 403 && rate_limited) d.error += " (rate limited)";
    d.outcome = (rate_limited || status == 408 || status >= 500) ? Delivery::Outcome::retry : Delivery::Outcome::permanent;
    return d;
}

}  // namespace

void curl_init_once() {
    static std::once_flag once;
    static std::unique_ptr<CurlGlobal> global;
    std::call_once(once, [] { global = std::make_unique<CurlGlobal>(); });
}

Delivery http_post_json(const Receiver& receiver, const std::string& body, const std::string& key) {
    if (receiver.url.empty()) return {Delivery::Outcome::permanent, 0, {}, "no URL configured"};
    return http_call(receiver, {"POST", receiver.url, {"Idempotency-Key: " + key}, body}).delivery;
}

HttpReply http_call(const Receiver& receiver, const HttpCall& call) {
    curl_init_once();
    HttpReply reply;
    std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
    if (!curl) {
        reply.delivery = {Delivery::Outcome::retry, 0, {}, "cannot start libcurl"};
        return reply;
    }
    curl_slist* headers = nullptr;
    if (!call.body.empty() || call.method != "GET") headers = curl_slist_append(headers, "Content-Type: application/json");
    for (const std::string& h : call.headers) headers = curl_slist_append(headers, h.c_str());
    std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers, &curl_slist_free_all);
    Response response;
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_URL, call.url.c_str());
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, call.method.c_str());
    if (!call.body.empty() || call.method != "GET") {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, call.body.c_str());
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(call.body.size()));
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "perfwatch/0.1");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(receiver.timeout.count()));
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &response);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &keep_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &response);
    if (!receiver.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, receiver.ca_file.c_str());
    const CURLcode code = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    reply.delivery = classify(code, status, response);
    if (response.body_cut && reply.delivery.outcome == Delivery::Outcome::sent)
        reply.delivery = {Delivery::Outcome::permanent, status, {}, "answer over 8 MiB"};
    reply.body = std::move(response.body);
    reply.next_page = std::move(response.next_page);
    return reply;
}

std::string url_encoded(std::string_view text) {
    std::string out;
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
            out += ch;
        else
            out += fmt::format("%{:02X}", c);
    }
    return out;
}

}  // namespace perfwatch::sink_parts
