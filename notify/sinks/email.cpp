#include <curl/curl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "notify/entity_name.hpp"
#include "notify/escape.hpp"
#include "notify/sinks/parts.hpp"
#include "core/text.hpp"

namespace perfwatch {

using namespace sink_parts;

namespace {

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
    std::vector<std::string> missing(const Receiver& r, bool url_given) const override {
        if (url_given && !r.from.empty() && !r.to.empty()) return {};
        return {"needs smtp_url, from and to"};
    }
    std::string body(const AlertGroup& g, const std::string&) const override { return email_text(g); }
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

}  // namespace

const Sink& email_sink() {
    static const EmailSink sink;
    return sink;
}

std::string email_subject(const AlertGroup& g) { return escape_for(Medium::plain_line, g.title()); }

std::string email_text(const AlertGroup& g) {
    const auto esc = [](std::string_view t) { return escape_for(Medium::email_text, t); };
    std::string text = esc(g.title()) + "\n\n";
    for (const auto& [k, v] : g.run_labels) text += fmt::format("{}: {}\n", esc(k), esc(v));
    text += "\n";
    for (const AlertItem& a : g.alerts) {
        const auto [kind, name] = shown_entity(a.entity_kind, a.entity_name, source_of(g, a));
        text += fmt::format("[{}] {}: {} '{}'{}{}\n  {}\n  rule {}\n{}\n", severity_text(a.severity), esc(a.title),
                            esc(kind), esc(name), esc(origin_text(g, a)), impact_text(a), esc(a.message), esc(a.rule),
                            a.url.empty() ? "" : "  regression page: " + a.url + "\n");
    }
    if (!g.report_url.empty()) text += fmt::format("Report: {}\n", g.report_url);
    if (!g.commit_url.empty()) text += fmt::format("Commit: {}\n", g.commit_url);
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
        html += fmt::format("<li><b>[{}] {}</b>: {} <code>{}</code>{}{}<br>{}<br><small>rule {}</small>{}</li>",
                            severity_text(a.severity), esc(a.title), esc(kind), esc(name), esc(origin_text(g, a)),
                            esc(impact_text(a)), esc(a.message), esc(a.rule),
                            a.url.empty() ? "" : fmt::format("<br><a href=\"{}\">regression page</a>", escape_for(Medium::html, a.url)));
    }
    if (!g.report_url.empty())
        html += fmt::format("</ul><p><a href=\"{}\">HTML report</a></p><ul>",
                            escape_for(Medium::html, g.report_url));
    if (!g.commit_url.empty())
        html += fmt::format("</ul><p><a href=\"{}\">Commit</a></p><ul>", escape_for(Medium::html, g.commit_url));
    return html + fmt::format("</ul><p><small>{}</small></p></body></html>", esc(footer(g)));
}

}  // namespace perfwatch
