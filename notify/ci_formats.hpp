#pragma once

#include <string>
#include <string_view>

#include "notify/format.hpp"

// What `check` writes inside a CI job: GitHub workflow commands and GitLab's Code Quality report.
namespace perfwatch {

// GitHub Actions workflow commands, one per line and nothing else: the headline as a notice, then
// an annotation per finding (`::error`, `::warning`, `::notice` with file and title), at most 10
// of each level (what GitHub shows per step), then a notice counting those left out. `file=` is
// the report's path relative to `workspace` ($GITHUB_WORKSPACE), left out for a report outside it.
// All report text is percent-encoded (notify/escape's workflow media): no line can start another
// command.
std::string format_check_github(const CheckReport& report, std::string_view workspace);

// GitLab's Code Quality report (a JSON array of issues: description, check_name, fingerprint,
// severity, location.path and lines.begin). Severity: info -> info, warning -> major, error ->
// critical. The fingerprint (SHA-256 hex) is the rule, entity kind and name and the run's
// benchmark label: the same problem keeps it across commits, so merge requests show what is new.
// `project_dir` ($CI_PROJECT_DIR) makes paths relative, as GitLab expects.
std::string format_check_gitlab(const CheckReport& report, std::string_view project_dir);

}  // namespace perfwatch
