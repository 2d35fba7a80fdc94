#pragma once

#include <string>
#include <string_view>

namespace perfwatch {

// Every medium perfwatch writes text for. Report content (kernel names, messages, labels) goes
// through escape_for() of its medium, and only there: markup is escaped, control characters and
// invalid UTF-8 become U+FFFD (line breaks stay where the medium has lines), and in media people
// are notified through, mentions (@channel, @here, @all, @everyone, @user, <!channel>, <@id>) and links (Markdown
// [text](url), <url>, bare scheme://) are broken with an invisible U+2060 WORD JOINER.
enum class Medium {
    slack,         // Slack mrkdwn: & < > as entities
    mattermost,    // Mattermost Markdown: formatting characters backslash-escaped
    discord,       // Discord Markdown: likewise; <@id>, <@&role>, <#channel>, @everyone broken too
    teams,         // Teams Adaptive Card text: a Markdown subset without escapes
    markdown,      // pull-request comments (GitHub, GitLab): @user notifies there too
    email_text,    // the text part of an alert email
    email_html,    // the HTML part of an alert email
    plain_line,    // one line of plain text (an email Subject, a Slack header): no markup, no breaks
    html,          // the HTML report (a file: nothing to neutralise but markup)
    xml,           // JUnit XML: no control characters at all
    // GitHub workflow commands (`::warning file=F,title=T::MESSAGE`): one line whatever the text;
    // % CR LF percent-encoded in the message, and : , too in a property's value.
    workflow_message,
    workflow_property,
};

std::string escape_for(Medium medium, std::string_view text);

// `text` as an inline code span of a Markdown-like medium (slack, mattermost, markdown), including
// its backticks: a backtick in the text cannot end the span, nor a line break or '|' the line.
std::string code_span(Medium medium, std::string_view text);

// `text` (several lines, preformatted) as a fenced code block of a Markdown-like medium, fences
// included: no line of it can close the fence or mention anyone.
std::string code_block(Medium medium, std::string_view text);

}  // namespace perfwatch
