#include "notify/sinks.hpp"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "notify/entity_name.hpp"
#include "notify/escape.hpp"
#include "core/text.hpp"

namespace perfwatch {

namespace {

using json = nlohmann::json;

std::string severity_text(Severity s) { return std::string(to_string(s)); }

// The report an alert came from.
std::string_view source_of(const AlertGroup& g, const AlertItem& a) { return a.source.empty() ? g.source : a.source; }

// ", in REPORT" after an entity in a message that carries several runs' alerts.
std::string origin_text(const AlertGroup& g, const AlertItem& a) {
    if (g.sources.size() < 2 || a.entity_kind == "run") return {};
    const std::string_view source = source_of(g, a);
    const std::size_t slash = source.find_last_of('/');
    return fmt::format(" in {}", slash == std::string_view::npos ? source : source.substr(slash + 1));
}

std::string impact_text(const AlertItem& a) {
    return a.impact ? fmt::format(" (impact {:.1f}% of GPU time)", *a.impact) : std::string();
}

// A header value as RFC 2047 encoded words when it is not plain ASCII (one line, valid UTF-8).
std::string mime_header_text(std::string_view text) {
    const bool ascii = std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
    if (ascii) return std::string(text);
    std::string out;
    // Encoded words of at most 45 bytes (60 base64 characters, under the 75-character limit),
    // each cut on a character boundary.
    while (!text.empty()) {
        const std::string_view chunk = utf8_prefix(text, 45);
        text.remove_prefix(chunk.size());
        std::string b64(4 * ((chunk.size() + 2) / 3) + 1, '\0');
        const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()),
                                      reinterpret_cast<const unsigned char*>(chunk.data()), static_cast<int>(chunk.size()));
        b64.resize(static_cast<std::size_t>(n));
        out += (out.empty() ? "" : " ") + fmt::format("=?UTF-8?B?{}?=", b64);
    }
    return out;
}

std::string footer(const AlertGroup& g) {
    std::string out = fmt::format("run {} from {}", g.run_id, g.source);
    if (g.omitted > 0) out += fmt::format("; {} more not shown", g.omitted);
    return out;
}

struct CurlGlobal {
    CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
    ~CurlGlobal() { curl_global_cleanup(); }
};

void curl_init_once() {
    static std::once_flag once;
    static std::unique_ptr<CurlGlobal> global;
    std::call_once(once, [] { global = std::make_unique<CurlGlobal>(); });
}

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

// The chat and webhook sinks: a JSON body POSTed to the receiver's URL.
class JsonPostSink final : public Sink {
public:
    using Body = std::string (*)(const AlertGroup&, const std::string& key);
    JsonPostSink(std::string_view type, Body body) : m_type(type), m_body(body) {}
    std::string_view type() const override { return m_type; }
    Delivery deliver(const Receiver& r, const AlertGroup& g, const std::string& key) const override {
        return http_post_json(r, m_body(g, key), key);
    }

private:
    std::string_view m_type;
    Body m_body;
};

// An SMTP session as libcurl's protocol trace shows it. libcurl quietly skips authentication when
// the server offers no AUTH; the mail body is only handed over once credentials, when configured,
// were used.
struct SmtpSession {
    bool need_auth = false;
    bool authenticated = false;
    bool refused = false;
    std::string_view text;
    std::size_t at = 0;
};

int on_smtp_trace(CURL*, curl_infotype type, char* data, std::size_t size, void* user) {
    if (type == CURLINFO_HEADER_OUT && std::string_view(data, size).starts_with("AUTH "))
        static_cast<SmtpSession*>(user)->authenticated = true;
    return 0;
}

std::size_t read_mail_text(char* buffer, std::size_t size, std::size_t count, void* user) {
    auto* s = static_cast<SmtpSession*>(user);
    if (s->need_auth && !s->authenticated) {
        s->refused = true;
        return CURL_READFUNC_ABORT;
    }
    const std::size_t n = std::min(size * count, s->text.size() - s->at);
    std::memcpy(buffer, s->text.data() + s->at, n);
    s->at += n;
    return n;
}

class EmailSink final : public Sink {
public:
    std::string_view type() const override { return "email"; }
    Delivery deliver(const Receiver& r, const AlertGroup& g, const std::string& key) const override {
        curl_init_once();
        if (r.url.empty() || r.from.empty() || r.to.empty())
            return {Delivery::Outcome::permanent, 0, {}, "email needs smtp_url, from and to"};
        std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
        if (!curl) return {Delivery::Outcome::retry, 0, {}, "cannot start libcurl"};
        CURL* c = curl.get();
        curl_slist* rcpt = nullptr;
        for (const std::string& to : r.to) rcpt = curl_slist_append(rcpt, ("<" + to + ">").c_str());
        std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> rcpt_list(rcpt, &curl_slist_free_all);
        curl_slist* headers = nullptr;
        headers = curl_slist_append(headers, fmt::format("Subject: {}", mime_header_text(email_subject(g))).c_str());
        headers = curl_slist_append(headers, fmt::format("From: {}", r.from).c_str());
        headers = curl_slist_append(headers, fmt::format("To: {}", fmt::join(r.to, ", ")).c_str());
        headers = curl_slist_append(headers, fmt::format("Message-ID: <{}@perfwatch>", key).c_str());
        headers = curl_slist_append(headers, fmt::format("X-Perfwatch-Key: {}", key).c_str());
        std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers, &curl_slist_free_all);
        std::unique_ptr<curl_mime, decltype(&curl_mime_free)> mime(curl_mime_init(c), &curl_mime_free);
        curl_mime* alternative = curl_mime_init(c);
        const std::string text = email_text(g), html = email_html(g);
        SmtpSession session;
        session.need_auth = !r.username.empty() && !r.allow_unauthenticated;
        session.text = text;
        curl_mimepart* part = curl_mime_addpart(alternative);
        // Quoted-printable: SMTP refuses lines over 998 bytes, and a kernel name can be longer.
        curl_mime_data_cb(part, static_cast<curl_off_t>(text.size()), &read_mail_text, nullptr, nullptr, &session);
        curl_mime_type(part, "text/plain; charset=utf-8");
        curl_mime_encoder(part, "quoted-printable");
        part = curl_mime_addpart(alternative);
        curl_mime_data(part, html.c_str(), CURL_ZERO_TERMINATED);
        curl_mime_type(part, "text/html; charset=utf-8");
        curl_mime_encoder(part, "quoted-printable");
        part = curl_mime_addpart(mime.get());
        curl_mime_subparts(part, alternative);
        curl_mime_type(part, "multipart/alternative");
        curl_easy_setopt(c, CURLOPT_URL, r.url.c_str());
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
        curl_easy_setopt(c, CURLOPT_MAIL_FROM, ("<" + r.from + ">").c_str());
        curl_easy_setopt(c, CURLOPT_MAIL_RCPT, rcpt);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(c, CURLOPT_MIMEPOST, mime.get());
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
        if (r.starttls) curl_easy_setopt(c, CURLOPT_USE_SSL, static_cast<long>(CURLUSESSL_ALL));
        if (!r.username.empty()) curl_easy_setopt(c, CURLOPT_USERNAME, r.username.c_str());
        if (!r.password.empty()) curl_easy_setopt(c, CURLOPT_PASSWORD, r.password.c_str());
        if (!r.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, r.ca_file.c_str());
        if (session.need_auth) {
            curl_easy_setopt(c, CURLOPT_DEBUGFUNCTION, &on_smtp_trace);
            curl_easy_setopt(c, CURLOPT_DEBUGDATA, &session);
            curl_easy_setopt(c, CURLOPT_VERBOSE, 1L);
        }
        const CURLcode code = curl_easy_perform(c);
        if (session.refused)
            return {Delivery::Outcome::permanent, 0, {},
                    "the SMTP server offered no authentication (AUTH), so the configured credentials were not used; "
                    "not sent (set allow_unauthenticated: true on the receiver to send anyway)"};
        Delivery d;
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        d.http_status = status;
        if (code == CURLE_OK) return d;
        d.error = fmt::format("{}{}", curl_easy_strerror(code), status > 0 ? fmt::format(" (SMTP {})", status) : "");
        // 5xx SMTP replies (bad recipient, auth refused) will not get better; the rest is retried.
        d.outcome = (status >= 500 || code == CURLE_LOGIN_DENIED || code == CURLE_USE_SSL_FAILED)
                        ? Delivery::Outcome::permanent
                        : Delivery::Outcome::retry;
        return d;
    }
};

class JsonLinesSink final : public Sink {
public:
    std::string_view type() const override { return "jsonl"; }
    Delivery deliver(const Receiver& r, const AlertGroup& g, const std::string& key) const override {
        std::ofstream out(r.path, std::ios::app);
        out << webhook_message(g, key) << '\n';
        out.flush();
        if (!out) return {Delivery::Outcome::retry, 0, {}, fmt::format("{}: cannot append", r.path)};
        return {};
    }
};

class StdoutSink final : public Sink {
public:
    std::string_view type() const override { return "stdout"; }
    Delivery deliver(const Receiver&, const AlertGroup& g, const std::string&) const override {
        const std::string text = email_text(g) + "\n";
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        return {};
    }
};

const JsonPostSink k_slack{"slack", [](const AlertGroup& g, const std::string&) { return slack_message(g); }};
const JsonPostSink k_teams{"teams", [](const AlertGroup& g, const std::string&) { return teams_message(g); }};
const JsonPostSink k_mattermost{"mattermost", [](const AlertGroup& g, const std::string&) { return mattermost_message(g); }};
const JsonPostSink k_webhook{"webhook", &webhook_message};
const EmailSink k_email;
const JsonLinesSink k_jsonl;
const StdoutSink k_stdout;

// Must list receiver_types() in its order.
const std::array<const Sink*, 7> k_sinks{&k_slack, &k_teams, &k_mattermost, &k_webhook, &k_email, &k_jsonl, &k_stdout};

}  // namespace

std::span<const Sink* const> sinks() { return k_sinks; }

const Sink* find_sink(std::string_view type) {
    for (const Sink* s : k_sinks)
        if (s->type() == type) return s;
    return nullptr;
}

std::string slack_escape(std::string_view text) { return escape_for(Medium::slack, text); }

std::string slack_message(const AlertGroup& g) {
    const auto esc = [](std::string_view t) { return escape_for(Medium::slack, t); };
    json blocks = json::array();
    blocks.push_back({{"type", "header"},
                      {"text", {{"type", "plain_text"}, {"text", std::string(utf8_prefix(escape_for(Medium::plain_line, g.title()), 150))}}}});
    std::string fallback = esc(g.title());
    // Slack allows 50 blocks and 3000 characters of text per section.
    std::size_t shown = 0;
    for (const AlertItem& a : g.alerts) {
        if (blocks.size() >= 48) break;
        const auto [kind, name] = shown_entity(a.entity_kind, a.entity_name, source_of(g, a));
        std::string text = fmt::format("*[{}] {}* {} {}{}{}\n{}", severity_text(a.severity), esc(a.title), esc(kind),
                                       code_span(Medium::slack, name), esc(origin_text(g, a)), impact_text(a),
                                       esc(a.message));
        if (text.size() > 2900) text = std::string(utf8_prefix(text, 2900)) + "...";
        blocks.push_back({{"type", "section"}, {"text", {{"type", "mrkdwn"}, {"text", text}}}});
        fallback += fmt::format("\n[{}] {} {}", severity_text(a.severity), esc(a.title), esc(name));
        ++shown;
    }
    AlertGroup rest = g;
    rest.omitted += g.alerts.size() - shown;
    std::string context = esc(footer(rest));
    if (!g.report_url.empty()) context += fmt::format(" | <{}|HTML report>", g.report_url);
    blocks.push_back({{"type", "context"}, {"elements", json::array({{{"type", "mrkdwn"}, {"text", context}}})}});
    if (!g.report_url.empty()) fallback += fmt::format("\nReport: {}", g.report_url);
    return json{{"text", fallback}, {"blocks", blocks}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string teams_message(const AlertGroup& g) {
    const auto esc = [](std::string_view t) { return escape_for(Medium::teams, t); };
    json body = json::array();
    body.push_back({{"type", "TextBlock"}, {"text", esc(g.title())}, {"weight", "Bolder"}, {"size", "Medium"}, {"wrap", true}});
    json facts = json::array();
    for (const auto& [k, v] : g.run_labels) facts.push_back({{"title", esc(k)}, {"value", esc(v)}});
    if (!facts.empty()) body.push_back({{"type", "FactSet"}, {"facts", facts}});
    for (const AlertItem& a : g.alerts) {
        const auto [kind, name] = shown_entity(a.entity_kind, a.entity_name, source_of(g, a));
        body.push_back({{"type", "TextBlock"},
                        {"text", fmt::format("[{}] {}: {} {}{}{}", severity_text(a.severity), esc(a.title), esc(kind),
                                             esc(name), esc(origin_text(g, a)), impact_text(a))},
                        {"weight", "Bolder"},
                        {"wrap", true},
                        {"color", a.severity == Severity::error ? "Attention" : "Default"}});
        body.push_back({{"type", "TextBlock"}, {"text", esc(a.message)}, {"wrap", true}, {"isSubtle", true}});
    }
    body.push_back({{"type", "TextBlock"}, {"text", esc(footer(g))}, {"wrap", true}, {"size", "Small"}});
    json card = {{"$schema", "http://adaptivecards.io/schemas/adaptive-card.json"},
                 {"type", "AdaptiveCard"},
                 {"version", "1.4"},
                 {"body", body}};
    if (!g.report_url.empty())
        card["actions"] = json::array({{{"type", "Action.OpenUrl"}, {"title", "HTML report"}, {"url", g.report_url}}});
    return json{{"type", "message"},
                {"attachments", json::array({{{"contentType", "application/vnd.microsoft.card.adaptive"},
                                              {"contentUrl", nullptr},
                                              {"content", card}}})}}
        .dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string mattermost_message(const AlertGroup& g) {
    const auto esc = [](std::string_view t) { return escape_for(Medium::mattermost, t); };
    std::string text = fmt::format("#### {}\n", esc(g.title()));
    for (const AlertItem& a : g.alerts) {
        const auto [kind, name] = shown_entity(a.entity_kind, a.entity_name, source_of(g, a));
        text += fmt::format("- **[{}] {}** {} {}{}{}: {}\n", severity_text(a.severity), esc(a.title), esc(kind),
                            code_span(Medium::mattermost, name), esc(origin_text(g, a)), impact_text(a), esc(a.message));
    }
    text += "_" + esc(footer(g)) + "_";
    if (!g.report_url.empty()) text += fmt::format(" [HTML report]({})", g.report_url);
    return json{{"username", "perfwatch"}, {"text", text}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string webhook_message(const AlertGroup& g, const std::string& key) {
    json doc = json::parse(to_json(g));
    doc["key"] = key;
    return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string email_subject(const AlertGroup& g) { return escape_for(Medium::plain_line, g.title()); }

std::string email_text(const AlertGroup& g) {
    const auto esc = [](std::string_view t) { return escape_for(Medium::email_text, t); };
    std::string text = esc(g.title()) + "\n\n";
    for (const auto& [k, v] : g.run_labels) text += fmt::format("{}: {}\n", esc(k), esc(v));
    text += "\n";
    for (const AlertItem& a : g.alerts) {
        const auto [kind, name] = shown_entity(a.entity_kind, a.entity_name, source_of(g, a));
        text += fmt::format("[{}] {}: {} '{}'{}{}\n  {}\n  rule {}\n\n", severity_text(a.severity), esc(a.title),
                            esc(kind), esc(name), esc(origin_text(g, a)), impact_text(a), esc(a.message), esc(a.rule));
    }
    if (!g.report_url.empty()) text += fmt::format("Report: {}\n", g.report_url);
    return text + esc(footer(g)) + "\n";
}

std::string email_html(const AlertGroup& g) {
    const auto esc = [](std::string_view t) { return escape_for(Medium::email_html, t); };
    std::string html = fmt::format("<html><body><h2>{}</h2><table>", esc(g.title()));
    for (const auto& [k, v] : g.run_labels)
        html += fmt::format("<tr><th align=\"left\">{}</th><td>{}</td></tr>", esc(k), esc(v));
    html += "</table><ul>";
    for (const AlertItem& a : g.alerts) {
        const auto [kind, name] = shown_entity(a.entity_kind, a.entity_name, source_of(g, a));
        html += fmt::format("<li><b>[{}] {}</b>: {} <code>{}</code>{}{}<br>{}<br><small>rule {}</small></li>",
                            severity_text(a.severity), esc(a.title), esc(kind), esc(name), esc(origin_text(g, a)),
                            esc(impact_text(a)), esc(a.message), esc(a.rule));
    }
    if (!g.report_url.empty())
        html += fmt::format("</ul><p><a href=\"{}\">HTML report</a></p><ul>",
                            escape_for(Medium::html, g.report_url));
    return html + fmt::format("</ul><p><small>{}</small></p></body></html>", esc(footer(g)));
}

std::chrono::milliseconds retry_delay(int attempts, std::optional<std::chrono::seconds> retry_after,
                                      std::mt19937_64& rng) {
    if (retry_after) return std::chrono::duration_cast<std::chrono::milliseconds>(*retry_after);
    const double full = std::min(600000.0, 2000.0 * std::pow(2.0, std::max(0, attempts - 1)));
    std::uniform_real_distribution<double> jitter(full / 2, full);
    return std::chrono::milliseconds(static_cast<long long>(jitter(rng)));
}

}  // namespace perfwatch
