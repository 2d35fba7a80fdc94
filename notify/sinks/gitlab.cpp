#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "notify/sinks/code_host.hpp"

namespace perfwatch {

using namespace sink_parts;

namespace {

// GitLab's REST API v4 (docs.gitlab.com/api): commit statuses, merge requests by source branch, notes.
const CodeHostApi k_gitlab{
    .type = "gitlab",
    .default_api_url = "https://gitlab.com/api/v4",
    .repository_hint = "the project's path or id",
    .headers = [](const std::string& token) { return std::vector<std::string>{"PRIVATE-TOKEN: " + token}; },
    .status_call =
        [](const std::string& project, const std::string& sha, const CommitStatus& s) {
            nlohmann::json body{{"state", s.failing ? "failed" : "success"},
                                {"name", s.context},
                                {"description", s.description}};
            if (!s.target_url.empty()) body["target_url"] = s.target_url;
            return HttpCall{"POST", fmt::format("{}/statuses/{}", project, url_encoded(sha)), {},
                            body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
        },
    .pulls_url =
        [](const std::string& project, const Receiver&, const std::string& branch) {
            return fmt::format("{}/merge_requests?state=opened&source_branch={}", project, url_encoded(branch));
        },
    .number_field = "iid",
    .comments_url = [](const std::string& project, const std::string& iid) { return fmt::format("{}/merge_requests/{}/notes", project, iid); },
    .comment_url =
        [](const std::string& project, const std::string& iid, const std::string& id) {
            return fmt::format("{}/merge_requests/{}/notes/{}", project, iid, id);
        },
    .edit_method = "PUT",
    .project_path = [](const std::string& repository) { return "projects/" + url_encoded(repository); },
};

}  // namespace

const Sink& gitlab_sink() {
    static const CodeHostSink sink{k_gitlab};
    return sink;
}

}  // namespace perfwatch
