#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "notify/sinks/code_host.hpp"

namespace perfwatch {

using namespace sink_parts;

namespace {

// GitHub's REST API (docs.github.com/rest): commit statuses, pull requests by head branch, issue comments.
const CodeHostApi k_github{
    .type = "github",
    .default_api_url = "https://api.github.com",
    .repository_hint = "owner/name",
    .headers =
        [](const std::string& token) {
            return std::vector<std::string>{"Authorization: Bearer " + token, "Accept: application/vnd.github+json",
                                            "X-GitHub-Api-Version: 2022-11-28"};
        },
    .status_call =
        [](const std::string& project, const std::string& sha, const CommitStatus& s) {
            nlohmann::json body{{"state", s.failing ? "failure" : "success"},
                                {"context", s.context},
                                {"description", s.description}};
            if (!s.target_url.empty()) body["target_url"] = s.target_url;
            return HttpCall{"POST", fmt::format("{}/statuses/{}", project, url_encoded(sha)), {},
                            body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
        },
    .pulls_url =
        [](const std::string& project, const Receiver& r, const std::string& branch) {
            const std::string owner = r.repository.substr(0, r.repository.find('/'));
            return fmt::format("{}/pulls?state=open&head={}", project, url_encoded(owner + ":" + branch));
        },
    .number_field = "number",
    .comments_url = [](const std::string& project, const std::string& number) { return fmt::format("{}/issues/{}/comments", project, number); },
    .comment_url = [](const std::string& project, const std::string&, const std::string& id) { return fmt::format("{}/issues/comments/{}", project, id); },
    .edit_method = "PATCH",
    .project_path =
        [](const std::string& repository) {
            const std::size_t slash = repository.find('/');
            if (slash == std::string::npos) return "repos/" + url_encoded(repository);
            return fmt::format("repos/{}/{}", url_encoded(repository.substr(0, slash)), url_encoded(repository.substr(slash + 1)));
        },
};

}  // namespace

const Sink& github_sink() {
    static const CodeHostSink sink{k_github};
    return sink;
}

}  // namespace perfwatch
