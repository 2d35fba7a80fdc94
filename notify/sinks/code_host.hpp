#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "notify/sinks/parts.hpp"

// What the github and gitlab sinks share: a commit status per run and one pull-request (merge
// request) comment per receiver and benchmark, found again by a marker and edited in place.
namespace perfwatch::sink_parts {

// A commit status as both hosts take it.
struct CommitStatus {
    bool failing = false;     // an error alert fires
    std::string context;      // "perfwatch", or "perfwatch/BENCHMARK"
    std::string description;  // the headline, one line of at most 140 bytes
    std::string target_url;   // the run's page (or HTML report); may be empty
};

// The REST shape of one code host: its paths, its token header and its field names.
struct CodeHostApi {
    std::string_view type;             // the receiver type
    std::string_view default_api_url;  // without a trailing slash
    std::string_view repository_hint;  // what `repository` names, for configuration messages
    // Every call's headers: the token's, and any media type or API version the host wants.
    std::vector<std::string> (*headers)(const std::string& token);
    HttpCall (*status_call)(const std::string& project_url, const std::string& sha, const CommitStatus& status);
    // The open pull requests (merge requests) of `branch`: a JSON array whose first item's
    // `number_field` names the one a run belongs to.
    std::string (*pulls_url)(const std::string& project_url, const Receiver& receiver, const std::string& branch);
    std::string_view number_field;
    // The comments of pull request `number` (paged), and the URL that edits comment `id`.
    std::string (*comments_url)(const std::string& project_url, const std::string& number);
    std::string (*comment_url)(const std::string& project_url, const std::string& number, const std::string& id);
    std::string_view edit_method;  // PATCH or PUT
    // The project's API root below the API URL ("repos/OWNER/NAME", "projects/ID").
    std::string (*project_path)(const std::string& repository);
};

// The pull-request comment for `group`: its marker line, then Markdown with every piece of
// report content through notify/escape's markdown medium; under 60,000 characters.
std::string code_host_comment(const AlertGroup& group);

// A receiver posting to a code host through `api`.
class CodeHostSink final : public Sink {
public:
    explicit CodeHostSink(const CodeHostApi& api) : m_api(api) {}
    std::string_view type() const override { return m_api.type; }
    std::vector<std::string> missing(const Receiver& receiver, bool url_given) const override;
    bool every_run() const override { return true; }
    std::chrono::milliseconds default_rate_limit() const override { return std::chrono::seconds(1); }
    std::string body(const AlertGroup& g, const std::string&) const override { return code_host_comment(g); }
    Delivery deliver(const Receiver& r, const AlertGroup& g, const std::string& key) const override;

private:
    const CodeHostApi& m_api;
};

}  // namespace perfwatch::sink_parts
