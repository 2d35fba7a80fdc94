#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>

#include "notify/alerts.hpp"
#include "notify/escape.hpp"
#include "notify/sinks.hpp"
#include "core/text.hpp"

namespace perfwatch {

namespace {

// A kernel name built to notify a whole channel and to plant a link, with control characters.
const std::string k_hostile =
    "@channel @here @all @everyone @someuser <!channel> <!here> <@123456> <@!77> <@&42> <#99> "
    "[x](https://evil.example) ftp://evil.example/f www.evil.example";

AlertGroup hostile_group() {
    AlertGroup g;
    g.receiver = "r";
    g.run_id = 3;
    g.source = "/reports/@channel/[x](https://evil.example).json";
    g.run_labels = {{"project", "@here"}, {"commit", "<!channel>"}};
    AlertItem a;
    a.rule = "top-kernel";
    a.title = "Top kernel by GPU time";
    a.severity = Severity::warning;
    a.entity_kind = "kernel";
    a.entity_name = k_hostile + std::string("\x01\x1b[31m\0tail", 10);
    // The shipped message writes the kernel name outside any code span.
    a.message = "Kernel " + k_hostile + " takes 80% of the GPU time\nsecond line";
    a.impact = 12;
    g.alerts.push_back(a);
    return g;
}

// Nothing in `text` can notify anyone, link anywhere, or carry a control character.
void expect_inert(const std::string& text, const std::string& where) {
    for (const std::string bad : {"@channel", "@here", "@all", "@everyone", "@someuser", "<!channel>", "<!here>",
                                  "<@", "@123456", "<#99", "](", "https://evil", "://evil", "www.evil"})
        EXPECT_EQ(text.find(bad), std::string::npos) << where << " holds '" << bad << "': " << text;
    for (const char c : text)
        EXPECT_FALSE((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f)
            << where << " holds control character " << static_cast<int>(c);
    EXPECT_TRUE(is_valid_utf8(text)) << where;
}

void expect_json_inert(const nlohmann::json& doc, const std::string& where) {
    if (doc.is_string()) expect_inert(doc.get<std::string>(), where);
    if (doc.is_object() || doc.is_array())
        for (const auto& item : doc) expect_json_inert(item, where);
}

}  // namespace

TEST(Escape, SlackBodyNotifiesNobodyAndLinksNowhere) {
    const auto doc = nlohmann::json::parse(slack_message(hostile_group()));  // well-formed JSON
    expect_json_inert(doc, "slack");
    // The name is still readable: the same characters with invisible joiners and entities.
    const std::string section = doc["blocks"][1]["text"]["text"];
    EXPECT_NE(section.find("&lt;\xE2\x81\xA0!channel&gt;"), std::string::npos) << section;
}

TEST(Escape, TeamsCardNotifiesNobodyAndLinksNowhere) {
    const auto doc = nlohmann::json::parse(teams_message(hostile_group()));
    expect_json_inert(doc, "teams");
}

TEST(Escape, MattermostBodyNotifiesNobodyAndLinksNowhere) {
    const auto doc = nlohmann::json::parse(mattermost_message(hostile_group()));
    expect_json_inert(doc, "mattermost");
    const std::string text = doc["text"];
    // Markdown link syntax is escaped, not just broken.
    EXPECT_NE(text.find("\\[x\\]"), std::string::npos) << text;
}

TEST(Escape, EmailSubjectTextAndHtmlNotifyNobodyAndLinkNowhere) {
    const AlertGroup g = hostile_group();
    expect_inert(email_subject(g), "subject");
    EXPECT_EQ(email_subject(g).find('\n'), std::string::npos);
    expect_inert(email_text(g), "email text");
    const std::string html = email_html(g);
    expect_inert(html, "email html");
    EXPECT_EQ(html.find("<a href=\"https://evil"), std::string::npos);
}

// Every row of the sink table, the ones added later included: what people read notifies nobody and
// links nowhere; the machine documents (webhook, jsonl) carry names verbatim, one JSON line each.
TEST(Escape, EverySinkNotifiesNobodyAndLinksNowhere) {
    const std::set<std::string> machine_documents{"webhook", "jsonl"};
    const AlertGroup g = hostile_group();
    for (const Sink* sink : sinks()) {
        const std::string type(sink->type());
        const std::string body = sink->body(g, "perfwatch-3-firing-0");
        EXPECT_TRUE(is_valid_utf8(body)) << type;
        if (machine_documents.contains(type)) {
            EXPECT_EQ(body.find('\n'), std::string::npos) << type << " breaks its line: " << body;
            const auto doc = nlohmann::json::parse(body);
            EXPECT_EQ(doc["alerts"][0]["entity"]["name"], g.alerts[0].entity_name) << type;
            EXPECT_EQ(doc["alerts"][0]["message"], g.alerts[0].message) << type;
            continue;
        }
        const auto doc = nlohmann::json::parse(body, nullptr, false);
        if (doc.is_discarded())
            expect_inert(body, type);
        else
            expect_json_inert(doc, type);
    }
    EXPECT_TRUE(machine_documents.contains("webhook") && find_sink("webhook") != nullptr);
    EXPECT_NE(find_sink("jsonl"), nullptr);
}

// The alert that a file was quarantined: routed on its labels (a route matching `rule` takes it),
// muted by a matching silence, keyed by path and time (the same quarantine is one message, another
// one a new message), and its hostile path notifies nobody and links nowhere in any sink.
TEST(Escape, QuarantineAlertIsRoutedKeyedAndInertInEverySink) {
    Route root;
    root.receiver = "default";
    Route files;
    files.match = {{"rule", "file-quarantined"}};
    files.receiver = "ops";
    root.routes.push_back(files);
    const std::string path = "/reports/@channel/[x](https://evil.example)\x01.json";
    const auto messages = quarantine_messages(root, path, "the daemon crashed (SIGSEGV) while reading it",
                                              "2026-12-01T10:00:00.000Z", 1000);
    ASSERT_EQ(messages.size(), 1u);
    EXPECT_EQ(messages[0].receiver, "ops");
    EXPECT_EQ(messages[0].run_id, 0);
    EXPECT_EQ(messages[0].next_attempt_ms, 1000);
    EXPECT_EQ(quarantine_messages(root, path, "again", "2026-12-01T10:00:00.000Z", 2000)[0].key, messages[0].key);
    EXPECT_NE(quarantine_messages(root, path, "again", "2026-12-01T11:00:00.000Z", 2000)[0].key, messages[0].key);
    Silence quiet;
    quiet.matchers = {{"rule", "file-*"}};
    EXPECT_TRUE(quarantine_messages(root, path, "r", "t", 1, {quiet}).empty());
    auto group = alert_group_from_json(messages[0].payload);
    ASSERT_TRUE(group) << group.error().to_string();
    ASSERT_EQ(group->alerts.size(), 1u);
    EXPECT_EQ(group->alerts[0].entity_name, path);
    EXPECT_EQ(group->alerts[0].severity, Severity::error);
    EXPECT_EQ(group->title(), "perfwatch: quarantined " + path + " (not read again until retried)");
    for (const Sink* sink : sinks()) {
        const std::string type(sink->type());
        const std::string body = sink->body(*group, messages[0].key);
        if (type == "webhook" || type == "jsonl") {
            EXPECT_EQ(nlohmann::json::parse(body)["alerts"][0]["entity"]["name"], path) << type;
            continue;
        }
        const auto doc = nlohmann::json::parse(body, nullptr, false);
        if (doc.is_discarded())
            expect_inert(body, type);
        else
            expect_json_inert(doc, type);
    }
}

// Discord: Markdown escaped, <@id>/<@&role>/<#channel>/@everyone broken, and Discord told to parse
// no mention at all; the content stays under its 2,000-character limit with the rest counted.
TEST(Escape, DiscordMessageNotifiesNobodyAndStaysUnderItsLimit) {
    const Sink* discord = find_sink("discord");
    ASSERT_NE(discord, nullptr);
    AlertGroup g = hostile_group();
    const auto doc = nlohmann::json::parse(discord->body(g, "k"));
    expect_json_inert(doc["content"], "discord");
    EXPECT_EQ(doc["allowed_mentions"]["parse"], nlohmann::json::array());
    const std::string content = doc["content"];
    EXPECT_NE(content.find("\\[x\\]"), std::string::npos) << content;
    g.report_url = "https://perfwatch.example/reports/run-3.html";
    EXPECT_NE(discord->body(g, "k").find("[HTML report](https://perfwatch.example/reports/run-3.html)"),
              std::string::npos);
    for (int i = 0; i < 60; ++i) g.alerts.push_back(g.alerts.front());
    const std::string many = nlohmann::json::parse(discord->body(g, "k"))["content"];
    EXPECT_LE(many.size(), 2000u);
    EXPECT_NE(many.find("more not shown"), std::string::npos);
    EXPECT_EQ(discord->default_rate_limit(), std::chrono::seconds(1));
    Receiver r;
    EXPECT_EQ(discord->missing(r, false).size(), 1u);
    EXPECT_TRUE(discord->missing(r, true).empty());
}

TEST(Escape, ReportUrlsOfOurOwnStayLinks) {
    AlertGroup g = hostile_group();
    g.report_url = "https://perfwatch.example/reports/run-3.html";
    EXPECT_NE(slack_message(g).find("<https://perfwatch.example/reports/run-3.html|HTML report>"), std::string::npos);
    EXPECT_NE(email_html(g).find("<a href=\"https://perfwatch.example/reports/run-3.html\">"), std::string::npos);
}

TEST(Escape, HtmlAndXmlHoldNoControlCharacters) {
    const std::string name("k\0\x01<b>&\"'\n", 10);
    const std::string html = escape_for(Medium::html, name);
    EXPECT_EQ(html, "k\xEF\xBF\xBD\xEF\xBF\xBD&lt;b&gt;&amp;&quot;&#39;\n");
    const std::string xml = escape_for(Medium::xml, name);
    EXPECT_EQ(xml, "k\xEF\xBF\xBD\xEF\xBF\xBD&lt;b&gt;&amp;&quot;&apos;\n");
    // Bytes that are not UTF-8 become U+FFFD in every medium.
    EXPECT_EQ(escape_for(Medium::html, "a\xff" "b"), "a\xEF\xBF\xBD" "b");
}

TEST(Escape, MarkdownCommentsStayOnOneLineAndCodeSpansCannotBeClosed) {
    EXPECT_EQ(escape_for(Medium::markdown, "a\nb|c"), "a b\\|c");
    EXPECT_EQ(code_span(Medium::markdown, "f`x` | @here"), "`f'x' \\| @\xE2\x81\xA0here`");
    EXPECT_EQ(code_span(Medium::slack, "a<b>"), "`a&lt;b&gt;`");
}

}  // namespace perfwatch

namespace perfwatch {

// A job view (a run's labels, kernel names) as a Markdown code block: no line can close the fence,
// and no mention or link survives, whatever the labels hold.
TEST(Escape, MarkdownCodeBlockCannotBeClosedNorMentionAnyone) {
    const std::string view = "job: run 9 [benchmark=```\n@channel <script>alert(1)</script> https://evil.example]\n"
                             "  rank 0 ```@here\n";
    const std::string block = code_block(Medium::markdown, view);
    std::vector<std::string> lines;
    for (std::size_t at = 0; at < block.size();) {
        const std::size_t end = block.find('\n', at);
        lines.push_back(block.substr(at, end - at));
        at = end + 1;
    }
    ASSERT_EQ(lines.size(), 5u) << block;
    EXPECT_EQ(lines.front(), "```");
    EXPECT_EQ(lines.back(), "```");
    for (std::size_t i = 1; i + 1 < lines.size(); ++i) EXPECT_EQ(lines[i].find('`'), std::string::npos) << lines[i];
    for (const std::string bad : {"@channel", "@here", "https://"})
        EXPECT_EQ(block.find(bad), std::string::npos) << bad;
    EXPECT_NE(block.find("<script>alert(1)</script>"), std::string::npos) << "a code block shows text as it is";
}

}  // namespace perfwatch
