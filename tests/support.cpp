#include "tests/support.hpp"

#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <sys/wait.h>
#include <csignal>
#include <chrono>
#include <thread>
#include <nlohmann/json.hpp>

#include <zlib.h>
#include <fmt/format.h>
#include <algorithm>
#include <cctype>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

extern char** environ;

namespace perfwatch::test {

namespace {

// A folder of ../shared (or the one $`env` names): nullopt when absent. CI (scripts/test sets
// PERFWATCH_REQUIRE_CORPUS=1 there) must read it: a missing one fails the tests that need it
// rather than skipping them.
std::optional<std::filesystem::path> shared_dir(const char* env, const char* folder) {
    if (const char* given = std::getenv(env); given != nullptr && *given != '\0') {
        if (std::filesystem::is_directory(given)) return std::filesystem::path(given);
        return std::nullopt;
    }
    const auto p = std::filesystem::path(PERFWATCH_SOURCE_DIR) / ".." / "shared" / folder;
    if (std::filesystem::is_directory(p)) return std::filesystem::weakly_canonical(p);
    if (const char* required = std::getenv("PERFWATCH_REQUIRE_CORPUS"); required != nullptr && *required == '1')
        ADD_FAILURE() << "../shared/" << folder << " is required here (PERFWATCH_REQUIRE_CORPUS=1) but " << p.string()
                      << " is missing";
    return std::nullopt;
}

}  // namespace

std::optional<std::filesystem::path> corpus_dir() { return shared_dir("PERFWATCH_CORPUS", "corpus"); }

std::optional<std::filesystem::path> jobs_dir() { return shared_dir("PERFWATCH_JOBS", "jobs"); }

std::optional<std::filesystem::path> crashers_dir() { return shared_dir("PERFWATCH_CRASHERS", "crashers"); }

std::string fixture(const std::string& relative) {
    return (std::filesystem::path(PERFWATCH_SOURCE_DIR) / "tests" / "fixtures" / relative).string();
}

std::string read_maybe_gzip(const std::string& path) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (f == nullptr) return {};
    std::string out;
    char buf[1 << 16];
    int n = 0;
    while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    gzclose(f);
    return out;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream buf;
    buf << in.rdbuf();
    return buf.str();
}

TempDir::TempDir() {
    std::random_device rd;
    m_path = std::filesystem::temp_directory_path() / ("perfwatch-test-" + std::to_string(rd()) + "-" +
                                                       std::to_string(::getpid()));
    std::filesystem::create_directories(m_path);
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
}

void write_file(const std::filesystem::path& path, const std::string& content) {
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << content;
}

std::int64_t query_int(const std::filesystem::path& db, const std::string& sql) {
    SQLite::Database d(db.string(), SQLite::OPEN_READONLY);
    d.setBusyTimeout(5000);
    return d.execAndGet(sql).getInt64();
}

ProcessResult run_perfwatch(const std::vector<std::string>& args) {
    std::vector<std::string> argv{PERFWATCH_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_program(argv);
}

ProcessResult run_program(const std::vector<std::string>& argv_s) {
    TempDir dir;
    const std::string out_path = dir.file("stdout"), err_path = dir.file("stderr");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::vector<std::string> copy = argv_s;
    std::vector<char*> argv;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    ProcessResult result;
    if (posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return result;
    }
    posix_spawn_file_actions_destroy(&actions);
    int status = 0;
    waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = read_file(out_path);
    result.err = read_file(err_path);
    return result;
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& args, const std::string& log_path,
                                     const std::vector<std::string>& env, const std::string& program)
    : m_log_path(log_path) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<std::string> argv_s{program};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e != nullptr; ++e) env_s.emplace_back(*e);
    env_s.insert(env_s.end(), env.begin(), env.end());
    std::vector<char*> envp;
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data()) == 0) m_pid = pid;
    posix_spawn_file_actions_destroy(&actions);
}

BackgroundProcess::~BackgroundProcess() {
    if (m_pid > 0 && !m_status) {
        ::kill(m_pid, SIGKILL);
        int status = 0;
        ::waitpid(m_pid, &status, 0);
    }
}

std::string BackgroundProcess::log() const {
    std::ifstream in(m_log_path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

unsigned short BackgroundProcess::logged_port() const {
    const std::string text = log();
    const std::string prefix = "http://127.0.0.1:";
    for (std::size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
        std::size_t end = at + prefix.size();
        unsigned port = 0;
        while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) && port < 65536)
            port = port * 10 + static_cast<unsigned>(text[end++] - '0');
        if (end > at + prefix.size() && port > 0 && port < 65536) return static_cast<unsigned short>(port);
    }
    return 0;
}

bool BackgroundProcess::wait_for_log(const std::string& text, double timeout_s) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
        if (log().find(text) != std::string::npos) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return log().find(text) != std::string::npos;
}

void BackgroundProcess::signal(int sig) const {
    if (m_pid > 0) ::kill(m_pid, sig);
}

std::optional<int> BackgroundProcess::wait_exit(double timeout_s) {
    if (m_status) return m_status;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    do {
        int status = 0;
        if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
            m_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            return m_status;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } while (std::chrono::steady_clock::now() < deadline);
    return std::nullopt;
}

HttpReply http_get(unsigned short port, const std::string& target) { return http_request(port, "GET", target, "", {}); }

HttpReply http_request(unsigned short port, const std::string& method, const std::string& target, const std::string& body,
                       const std::vector<std::pair<std::string, std::string>>& headers) {
    namespace beast = boost::beast;
    namespace http = beast::http;
    HttpReply reply;
    try {
        boost::asio::io_context io;
        beast::tcp_stream stream(io);
        stream.expires_after(std::chrono::seconds(10));
        stream.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
        http::request<http::string_body> req{http::string_to_verb(method), target, 11};
        req.set(http::field::host, fmt::format("127.0.0.1:{}", port));
        for (const auto& [k, v] : headers) req.set(k, v);
        req.body() = body;
        req.prepare_payload();
        http::write(stream, req);
        beast::flat_buffer buffer;
        http::response<http::string_body> res;
        http::read(stream, buffer, res);
        reply.status = static_cast<int>(res.result_int());
        reply.body = res.body();
        for (const auto& field : res) {
            std::string name(field.name_string());
            std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
            reply.headers[name] = std::string(field.value());
        }
    } catch (const std::exception&) {
        reply.status = 0;
    }
    return reply;
}

Rendered chromium(const std::string& url, const std::string& screenshot) {
    std::vector<std::string> args{"/usr/bin/chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
                                  "--hide-scrollbars", "--enable-logging=stderr", "--v=0", "--window-size=1280,2000"};
    if (!screenshot.empty())
        args.push_back("--screenshot=" + screenshot);
    else
        args.push_back("--dump-dom");
    args.push_back(url);
    const auto r = run_program(args);
    return {r.exit_code, r.out, r.err};
}

std::string write_kineto_trace(const TempDir& dir, const std::string& name, double dur_us, int launches,
                               const std::string& gpu, double start_us) {
    nlohmann::json events = nlohmann::json::array();
    double t = start_us;
    for (int i = 0; i < launches; ++i) {
        const double d = dur_us * (1 + 0.002 * ((i * 7) % 5 - 2));
        events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", "gemm"}, {"pid", 0}, {"tid", 7}, {"ts", t},
                          {"dur", d}, {"args", {{"device", 0}, {"stream", 7}}}});
        t += d + 5;
    }
    const nlohmann::json trace = {
        {"schemaVersion", 1},
        {"deviceProperties", {{{"id", 0}, {"name", gpu}, {"computeMajor", 9}, {"computeMinor", 0}, {"numSms", 132}}}},
        {"traceEvents", events}};
    const std::string path = dir.file(name);
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << trace.dump();
    return path;
}

}  // namespace perfwatch::test
