#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "notify/alerts.hpp"
#include "notify/escape.hpp"
#include "notify/sinks.hpp"
#include "core/text.hpp"

namespace perfwatch {

namespace {

// A kernel name built to notify a whole channel and to plant a link, with control characters.
const std::string k_hostile = "@channel @here @all <!channel> <!here> [x](https://evil.example) www.evil.example";

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
    for (const std::string bad : {"@channel", "@here", "@all", "<!channel>", "<!here>", "](", "https://evil",
                                  "www.evil"})
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
