#include "notify/sinks/parts.hpp"

#include <curl/curl.h>
#include <fmt/format.h>

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
};

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
    const std::size_t n = size * count;
    std::string_view line(data, n);
    constexpr std::string_view k_name = "retry-after:";
    if (line.size() > k_name.size()) {
        std::string lower(line.substr(0, k_name.size()));
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (lower == k_name) {
            try {
                static_cast<Response*>(user)->retry_after = std::stol(std::string(line.substr(k_name.size())));
            } catch (const std::exception&) {
                // An HTTP date instead of seconds: the exponential backoff applies.
            }
        }
    }
    return n;
}

std::size_t discard(char*, std::size_t size, std::size_t count, void*) { return size * count; }

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
    if (r.retry_after && (status == 429 || status == 503)) d.retry_after = std::chrono::seconds(*r.retry_after);
    d.outcome = (status == 429 || status == 408 || status >= 500) ? Delivery::Outcome::retry
                                                                   : Delivery::Outcome::permanent;
    return d;
}

}  // namespace

void curl_init_once() {
    static std::once_flag once;
    static std::unique_ptr<CurlGlobal> global;
    std::call_once(once, [] { global = std::make_unique<CurlGlobal>(); });
}

Delivery http_post_json(const Receiver& receiver, const std::string& body, const std::string& key) {
    curl_init_once();
    if (receiver.url.empty()) return {Delivery::Outcome::permanent, 0, {}, "no URL configured"};
    std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
    if (!curl) return {Delivery::Outcome::retry, 0, {}, "cannot start libcurl"};
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, ("Idempotency-Key: " + key).c_str());
    std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers, &curl_slist_free_all);
    Response response;
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_URL, receiver.url.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(c, CURLOPT_USERAGENT, "perfwatch/0.1");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(receiver.timeout.count()));
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &response);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &discard);
    if (!receiver.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, receiver.ca_file.c_str());
    const CURLcode code = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    return classify(code, status, response);
}

}  // namespace perfwatch::sink_parts
