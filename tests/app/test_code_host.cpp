#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "tests/http_peer.hpp"
#include "tests/support.hpp"

// The github and gitlab receivers end to end: the daemon reads reports of a branch and posts to a
// local peer that answers as the code host's REST API does and checks every request's shape.
namespace perfwatch {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::eventually;
using test::HttpPeer;
using test::PeerReply;
using test::PeerRequest;
using json = nlohmann::json;

namespace {

const std::string k_token = "ghp_T0KEN-never-logged-93ab";
const std::string k_sha1 = "1111111111111111111111111111111111111111";
const std::string k_sha2 = "2222222222222222222222222222222222222222";
const std::string k_sha3 = "3333333333333333333333333333333333333333";
// A kernel name that would mention a team, link away, fake the marker and break a table if it
// reached the comment unescaped.
const std::string k_hostile = "evil`@team <!-- perfwatch:x --> [x](https://evil.example)|";

// A PyTorch profiler trace whose one kernel (named `kernel`) runs on one thread: a warning.
void write_serial_trace(const fs::path& path, const std::string& kernel) {
    json events = json::array();
    double t = 1000;
    for (int i = 0; i < 20; ++i) {
        events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", kernel}, {"pid", 0}, {"tid", 7}, {"ts", t},
                          {"dur", 5000}, {"args", {{"device", 0}, {"stream", 7}, {"grid", {1, 1, 1}}, {"block", {1, 1, 1}}}}});
        t += 5010;
    }
    const json trace = {{"schemaVersion", 1},
                        {"deviceProperties", {{{"id", 0}, {"name", "NVIDIA H100"}, {"computeMajor", 9}, {"computeMinor", 0}, {"numSms", 132}}}},
                        {"traceEvents", events}};
    test::write_file(path.parent_path() / ("." + path.filename().string() + ".part"), trace.dump());
    fs::rename(path.parent_path() / ("." + path.filename().string() + ".part"), path);
}

// A trace of one well-launched tensor-core GEMM: no finding at all.
void write_clean_trace(const fs::path& path) {
    json events = json::array();
    for (int i = 0; i < 20; ++i)
        events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn"},
                          {"pid", 0}, {"tid", 7}, {"ts", 1000 + 502 * i}, {"dur", 500},
                          {"args", {{"device", 0}, {"stream", 7}, {"grid", {1024, 1, 1}}, {"block", {256, 1, 1}},
                                    {"registers per thread", 64}, {"shared memory", 32768}}}});
    const json trace = {{"schemaVersion", 1},
                        {"deviceProperties", {{{"id", 0}, {"name", "NVIDIA H100"}, {"computeMajor", 9}, {"computeMinor", 0}, {"numSms", 132}}}},
                        {"traceEvents", events}};
    test::write_file(path.parent_path() / ".clean.part", trace.dump());
    fs::rename(path.parent_path() / ".clean.part", path);
}

std::string config(const fs::path& dir, const std::string& type, unsigned short port, const std::string& api_path,
                   const std::string& repository) {
    return fmt::format(R"(database: perfwatch.db
watch:
  - path: {0}/reports
    path_template: "{{project}}/{{branch}}/{{commit}}/**"
listen: 127.0.0.1:0
quiet_period: 200ms
dashboard:
  base_url: https://perfwatch.example/
receivers:
  - name: code-host
    type: {1}
    repository: {2}
    api_url: http://127.0.0.1:{3}{4}
    token_file: {0}/token
route:
  receiver: code-host
)",
                       dir.string(), type, repository, port, api_path);
}

// The value of header `name` (lower case), or "".
std::string header(const PeerRequest& r, const std::string& name) {
    const auto it = r.headers.find(name);
    return it == r.headers.end() ? std::string() : it->second;
}

// The request's JSON body; fails the test when it is not a JSON object.
json body_of(const PeerRequest& r) {
    json doc = json::parse(r.body, nullptr, false);
    EXPECT_TRUE(doc.is_object()) << r.method << " " << r.target << ": " << r.body;
    return doc;
}

// A code host's comments of one pull request, kept as the API would.
struct Thread {
    std::mutex mutex;
    std::vector<std::pair<long long, std::string>> comments{{500, "LGTM, thanks"}, {501, "nit: rename"}};
    long long next_id = 1000;
    int rate_limited = 0;  // how many 403/429 answers were given
};

}  // namespace

// GitHub: a commit status per run with the headline and the run page; the pull request found
// from the branch; one comment, created at the first run (after paging through the others)
// and edited in place at the second; a 403 rate limit with Retry-After waited out; the
// hostile kernel name escaped in the comment; the token only ever in the Authorization header.
TEST(CodeHost, GithubStatusAndOneCommentEditedInPlace) {
    Thread thread;
    HttpPeer peer([&](const PeerRequest& r) -> PeerReply {
        std::lock_guard lock(thread.mutex);
        // Every call: the token, GitHub's media type and API version, a User-Agent.
        if (header(r, "authorization") != "Bearer " + k_token || header(r, "accept") != "application/vnd.github+json" ||
            header(r, "x-github-api-version") != "2022-11-28" || header(r, "user-agent").empty())
            return {401, {}, R"({"message":"Bad credentials"})"};
        const std::string repo = "/api/v3/repos/octo-org/gpu-app";
        if (r.method == "POST" && r.target.starts_with(repo + "/statuses/")) {
            // The first status of the second run is refused by the secondary rate limit.
            if (r.target.ends_with(k_sha2) && thread.rate_limited == 0) {
                ++thread.rate_limited;
                return {403, {{"Retry-After", "1"}, {"X-RateLimit-Remaining", "0"}}, R"({"message":"rate limit"})"};
            }
            return {201, {}, R"({"id":1})"};
        }
        if (r.method == "GET" && r.target == repo + "/pulls?state=open&head=octo-org%3Afeat-x")
            return {200, {}, R"([{"number":7,"head":{"ref":"feat-x"}}])"};
        if (r.method == "GET" && r.target.starts_with(repo + "/issues/7/comments?per_page=100")) {
            // Two pages: the other comments first, then the rest.
            const bool second = r.target.ends_with("&page=2");
            json page = json::array();
            for (std::size_t i = 0; i < thread.comments.size(); ++i)
                if ((i < 2) != second) page.push_back({{"id", thread.comments[i].first}, {"body", thread.comments[i].second}});
            PeerReply reply{200, {}, page.dump()};
            if (!second) reply.headers["Link"] = fmt::format("<http://127.0.0.1:{}{}/issues/7/comments?per_page=100&page=2>; rel=\"next\"", header(r, "host").substr(header(r, "host").find(':') + 1), repo);
            return reply;
        }
        if (r.method == "POST" && r.target == repo + "/issues/7/comments") {
            thread.comments.emplace_back(thread.next_id++, json::parse(r.body).at("body").get<std::string>());
            return {201, {}, json{{"id", thread.comments.back().first}}.dump()};
        }
        if (r.method == "PATCH" && r.target.starts_with(repo + "/issues/comments/")) {
            const long long id = std::stoll(r.target.substr(r.target.rfind('/') + 1));
            for (auto& [cid, text] : thread.comments)
                if (cid == id) {
                    text = json::parse(r.body).at("body").get<std::string>();
                    return {200, {}, json{{"id", id}}.dump()};
                }
            return {404, {}, R"({"message":"Not Found"})"};
        }
        return {404, {}, R"({"message":"Not Found"})"};
    });
    test::TempDir dir;
    test::write_file(dir.path() / "token", k_token + "\n");
    test::write_file(dir.path() / "perfwatch.yaml", config(dir.path(), "github", peer.port(), "/api/v3", "octo-org/gpu-app"));
    fs::create_directories(dir.path() / "reports");
    const auto check = test::run_perfwatch({"config", "check", dir.file("perfwatch.yaml")});
    ASSERT_EQ(check.exit_code, 0) << check.out << check.err;
    test::BackgroundProcess daemon({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();

    write_serial_trace(dir.path() / "reports/app/feat-x" / k_sha1 / "train.json", k_hostile);
    ASSERT_TRUE(eventually([&] { std::lock_guard lock(thread.mutex); return thread.comments.size() == 3; }, 30s)) << daemon.log();
    write_serial_trace(dir.path() / "reports/app/feat-x" / k_sha2 / "train.json", k_hostile + "2");
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lock(thread.mutex);
        return thread.comments.back().second.find(k_sha2) != std::string::npos;
    }, 30s)) << daemon.log();
    std::string second_comment;
    {
        std::lock_guard lock(thread.mutex);
        second_comment = thread.comments.back().second;
    }
    // A third commit whose run finds nothing still gets its status and the comment says so.
    write_clean_trace(dir.path() / "reports/app/feat-x" / k_sha3 / "train.json");
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lock(thread.mutex);
        return thread.comments.back().second.find(k_sha3) != std::string::npos;
    }, 30s)) << daemon.log();
    std::this_thread::sleep_for(1500ms);  // nothing more may come

    const auto requests = peer.requests();
    std::vector<std::string> calls;
    for (const auto& [r, status] : requests) calls.push_back(fmt::format("{} {} {}", r.method, r.target, status));
    const std::string base = "/api/v3/repos/octo-org/gpu-app";
    const std::vector<std::string> expected = {
        "POST " + base + "/statuses/" + k_sha1 + " 201",
        "GET " + base + "/pulls?state=open&head=octo-org%3Afeat-x 200",
        "GET " + base + "/issues/7/comments?per_page=100 200",
        "GET " + base + "/issues/7/comments?per_page=100&page=2 200",
        "POST " + base + "/issues/7/comments 201",
        "POST " + base + "/statuses/" + k_sha2 + " 403",
        "POST " + base + "/statuses/" + k_sha2 + " 201",
        "GET " + base + "/pulls?state=open&head=octo-org%3Afeat-x 200",
        "GET " + base + "/issues/7/comments?per_page=100 200",
        "GET " + base + "/issues/7/comments?per_page=100&page=2 200",
        "PATCH " + base + "/issues/comments/1000 200",
        "POST " + base + "/statuses/" + k_sha3 + " 201",
        "GET " + base + "/pulls?state=open&head=octo-org%3Afeat-x 200",
        "GET " + base + "/issues/7/comments?per_page=100 200",
        "GET " + base + "/issues/7/comments?per_page=100&page=2 200",
        "PATCH " + base + "/issues/comments/1000 200",
    };
    EXPECT_EQ(calls, expected) << daemon.log();
    const json clean = body_of(requests[11].first);
    EXPECT_EQ(clean.at("state"), "success");
    EXPECT_EQ(clean.at("description"), "nothing to act on: no finding");
    // Retry-After was honoured: the retry came a second after the 403, and the log says why.
    ASSERT_EQ(requests.size(), expected.size());
    EXPECT_GE(requests[6].first.at - requests[5].first.at, 950ms);
    EXPECT_NE(daemon.log().find("HTTP 403 (rate limited)"), std::string::npos) << daemon.log();

    // The status: success (a warning, not an error), the headline, the run's page, one context per benchmark.
    const json status = body_of(requests[0].first);
    EXPECT_EQ(status.at("state"), "success");
    EXPECT_EQ(status.at("context"), "perfwatch/train");
    EXPECT_EQ(status.at("target_url"), "https://perfwatch.example/run/1");
    const std::string description = status.at("description");
    EXPECT_LE(description.size(), 140u);
    EXPECT_TRUE(description.starts_with("warning: A kernel that runs on a handful of threads")) << description;
    for (const auto& [r, code] : requests)
        if (r.method != "GET") EXPECT_EQ(r.headers.at("content-type"), "application/json");

    // One comment of ours beside the two others, edited to the second run; the name escaped.
    std::lock_guard lock(thread.mutex);
    ASSERT_EQ(thread.comments.size(), 3u);
    const std::string& comment = thread.comments.back().second;
    EXPECT_TRUE(comment.starts_with("<!-- perfwatch:code-host:train -->\n")) << comment;
    EXPECT_NE(comment.find("run 3 from"), std::string::npos) << comment;
    EXPECT_NE(comment.find("Nothing to act on: this run has no finding."), std::string::npos) << comment;
    EXPECT_NE(comment.find("[Run page](https://perfwatch.example/run/3)"), std::string::npos) << comment;
    EXPECT_EQ(second_comment.find("<!-- perfwatch:code-host", 1), std::string::npos) << "one marker, first: " << second_comment;
    EXPECT_EQ(second_comment.find("@team"), std::string::npos) << second_comment;
    EXPECT_EQ(second_comment.find("](https://evil"), std::string::npos) << second_comment;
    // In the code span: the backtick cannot end it, '|' cannot split a table, mention and link inert.
    EXPECT_NE(second_comment.find("`evil'@\xE2\x81\xA0team <\xE2\x81\xA0!-- perfwatch:x --> [x]\xE2\x81\xA0(https:\xE2\x81\xA0//evil.example)\\|2`"),
              std::string::npos)
        << second_comment;
    // The token: in no log line.
    EXPECT_EQ(daemon.log().find(k_token), std::string::npos);
}

// GitLab: the commit status and one merge-request note, found from the branch and edited in
// place with PUT; PRIVATE-TOKEN carries the token; the project's path is one encoded segment;
// a 429 with Retry-After is waited out.
TEST(CodeHost, GitlabStatusAndOneNoteEditedInPlace) {
    Thread thread;
    HttpPeer peer([&](const PeerRequest& r) -> PeerReply {
        std::lock_guard lock(thread.mutex);
        if (header(r, "private-token") != k_token || r.headers.contains("authorization"))
            return {401, {}, R"({"message":"401 Unauthorized"})"};
        const std::string project = "/api/v4/projects/gpu%2Fapps%2Ftrainer";
        if (r.method == "POST" && r.target.starts_with(project + "/statuses/")) {
            if (thread.rate_limited == 0) {
                ++thread.rate_limited;
                return {429, {{"Retry-After", "1"}, {"RateLimit-Remaining", "0"}}, R"({"message":"Retry later"})"};
            }
            return {201, {}, R"({"id":1})"};
        }
        if (r.method == "GET" && r.target == project + "/merge_requests?state=opened&source_branch=feat-x")
            return {200, {}, R"([{"iid":42,"source_branch":"feat-x"}])"};
        if (r.method == "GET" && r.target == project + "/merge_requests/42/notes?per_page=100") {
            json page = json::array();
            for (const auto& [id, text] : thread.comments) page.push_back({{"id", id}, {"body", text}});
            return {200, {}, page.dump()};
        }
        if (r.method == "POST" && r.target == project + "/merge_requests/42/notes") {
            thread.comments.emplace_back(thread.next_id++, json::parse(r.body).at("body").get<std::string>());
            return {201, {}, json{{"id", thread.comments.back().first}}.dump()};
        }
        if (r.method == "PUT" && r.target.starts_with(project + "/merge_requests/42/notes/")) {
            const long long id = std::stoll(r.target.substr(r.target.rfind('/') + 1));
            for (auto& [cid, text] : thread.comments)
                if (cid == id) {
                    text = json::parse(r.body).at("body").get<std::string>();
                    return {200, {}, json{{"id", id}}.dump()};
                }
        }
        return {404, {}, R"({"message":"404 Not Found"})"};
    });
    test::TempDir dir;
    test::write_file(dir.path() / "token", k_token + "\n");
    test::write_file(dir.path() / "perfwatch.yaml", config(dir.path(), "gitlab", peer.port(), "/api/v4", "gpu/apps/trainer"));
    fs::create_directories(dir.path() / "reports");
    test::BackgroundProcess daemon({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    write_serial_trace(dir.path() / "reports/app/feat-x" / k_sha1 / "train.json", "serial_kernel");
    ASSERT_TRUE(eventually([&] { std::lock_guard lock(thread.mutex); return thread.comments.size() == 3; }, 30s)) << daemon.log();
    write_serial_trace(dir.path() / "reports/app/feat-x" / k_sha2 / "train.json", "serial_kernel_2");
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lock(thread.mutex);
        return thread.comments.back().second.find(k_sha2) != std::string::npos;
    }, 30s)) << daemon.log();
    std::this_thread::sleep_for(1500ms);

    const auto requests = peer.requests();
    std::vector<std::string> calls;
    for (const auto& [r, status] : requests) calls.push_back(fmt::format("{} {} {}", r.method, r.target, status));
    const std::string base = "/api/v4/projects/gpu%2Fapps%2Ftrainer";
    const std::vector<std::string> expected = {
        "POST " + base + "/statuses/" + k_sha1 + " 429",
        "POST " + base + "/statuses/" + k_sha1 + " 201",
        "GET " + base + "/merge_requests?state=opened&source_branch=feat-x 200",
        "GET " + base + "/merge_requests/42/notes?per_page=100 200",
        "POST " + base + "/merge_requests/42/notes 201",
        "POST " + base + "/statuses/" + k_sha2 + " 201",
        "GET " + base + "/merge_requests?state=opened&source_branch=feat-x 200",
        "GET " + base + "/merge_requests/42/notes?per_page=100 200",
        "PUT " + base + "/merge_requests/42/notes/1000 200",
    };
    EXPECT_EQ(calls, expected) << daemon.log();
    ASSERT_EQ(requests.size(), expected.size());
    EXPECT_GE(requests[1].first.at - requests[0].first.at, 950ms);
    const json status = body_of(requests[1].first);
    EXPECT_EQ(status.at("state"), "success");
    EXPECT_EQ(status.at("name"), "perfwatch/train");
    EXPECT_EQ(status.at("target_url"), "https://perfwatch.example/run/1");
    std::lock_guard lock(thread.mutex);
    EXPECT_TRUE(thread.comments.back().second.starts_with("<!-- perfwatch:code-host:train -->\n"));
    EXPECT_NE(thread.comments.back().second.find("`serial_kernel_2`"), std::string::npos) << thread.comments.back().second;
    EXPECT_EQ(daemon.log().find(k_token), std::string::npos);
}

}  // namespace perfwatch
