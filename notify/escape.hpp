#pragma once

#include <string>
#include <string_view>

namespace perfwatch {

// How much markup escaping a target needs: Slack mrkdwn takes & < > as entities; HTML also ";
// XML also ' and has no room for control characters (other than tab and newlines), which become
// spaces.
enum class Markup { slack, html, xml };

std::string escape_markup(std::string_view text, Markup markup);

}  // namespace perfwatch
