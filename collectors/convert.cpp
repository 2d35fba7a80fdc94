#include "collectors/convert.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/file.hpp"

extern char** environ;

namespace perfwatch {

namespace {

std::string substitute(std::string arg, const std::string& input, const std::string& output) {
    for (const auto& [key, value] : {std::pair<std::string_view, const std::string&>{"{input}", input},
                                     std::pair<std::string_view, const std::string&>{"{output}", output}}) {
        for (std::size_t p = arg.find(key); p != std::string::npos; p = arg.find(key, p + value.size()))
            arg.replace(p, key.size(), value);
    }
    return arg;
}

bool names_output(const Converter& c) {
    for (const std::string& a : c.command)
        if (a.find("{output}") != std::string::npos) return true;
    return false;
}

// The last lines of a tool's standard error, for an error message.
std::string stderr_tail(const std::string& path) {
    std::string text = read_whole_file(path).value_or("");
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
    constexpr std::size_t k_max = 600;
    if (text.size() > k_max) text = "..." + text.substr(text.size() - k_max);
    return text;
}

std::string tool_label(const std::string& extension) {
    if (extension == ".ncu-rep") return "Nsight Compute report";
    if (extension == ".nsys-rep" || extension == ".qdrep") return "Nsight Systems report";
    return "binary report";
}

}  // namespace

const std::vector<Converter>& default_converters() {
    static const std::vector<Converter> k_converters{
        {".ncu-rep", {"ncu", "--import", "{input}", "--csv", "--page", "details"}, "", 600},
        {".nsys-rep",
         {"nsys", "export", "--type", "sqlite", "--force-overwrite", "true", "--output", "{output}", "{input}"},
         ".sqlite",
         600},
        {".qdrep",
         {"nsys", "export", "--type", "sqlite", "--force-overwrite", "true", "--output", "{output}", "{input}"},
         ".sqlite",
         600},
    };
    return k_converters;
}

const Converter* converter_for(const std::vector<Converter>& converters, const std::string& path) {
    for (const Converter& c : converters)
        if (!c.extension.empty() && path.ends_with(c.extension)) return &c;
    return nullptr;
}

std::string find_program(const std::string& program) {
    auto executable = [](const std::string& p) {
        struct stat st {};
        return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
    };
    if (program.empty()) return {};
    if (program.find('/') != std::string::npos) return executable(program) ? program : std::string();
    const char* env = std::getenv("PATH");
    const std::string path = env != nullptr ? env : "/usr/local/bin:/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= path.size()) {
        std::size_t end = path.find(':', start);
        if (end == std::string::npos) end = path.size();
        const std::string dir = end > start ? path.substr(start, end - start) : ".";
        const std::string candidate = dir + "/" + program;
        if (executable(candidate)) return candidate;
        start = end + 1;
    }
    return {};
}

ConvertedReport::ConvertedReport(ConvertedReport&& other) noexcept
    : m_dir(std::move(other.m_dir)), m_path(std::move(other.m_path)) {
    other.m_dir.clear();
}

ConvertedReport::~ConvertedReport() {
    if (m_dir.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(m_dir, ec);
}

std::string describe_command(const Converter& converter, const std::string& input) {
    std::string out;
    for (const std::string& a : converter.command) {
        if (!out.empty()) out += ' ';
        out += substitute(a, input, "{output}");
    }
    return out;
}

Result<ConvertedReport> convert_report(const Converter& converter, const std::string& input) {
    if (converter.command.empty()) return fail(input, 0, fmt::format("the converter for {} has no command", converter.extension));
    const std::string program = find_program(converter.command[0]);
    if (program.empty()) {
        Error e{input, 0, 0, false,
                fmt::format("{} ({}) needs `{}` to be converted, and `{}` is not on PATH; skipped (install the tool "
                            "or set a converter command in the configuration)",
                            tool_label(converter.extension), converter.extension, converter.command[0],
                            converter.command[0]),
                true};
        return std::unexpected(std::move(e));
    }

    std::string dir_template = (std::filesystem::temp_directory_path() / "perfwatch-convert-XXXXXX").string();
    if (::mkdtemp(dir_template.data()) == nullptr)
        return fail(input, 0, fmt::format("cannot create a temporary directory: {}", std::strerror(errno)));
    const std::string output = dir_template + "/converted" + converter.output_suffix;
    ConvertedReport report(dir_template, output);  // removes the directory on every return but success
    const bool to_file = names_output(converter);
    const std::string out_path = to_file ? dir_template + "/stdout" : output;
    const std::string err_path = dir_template + "/stderr";

    std::vector<std::string> args;
    for (const std::string& a : converter.command) args.push_back(substitute(a, input, output));
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    const std::string shown = describe_command(converter, input);
    if (rc != 0) return fail(input, 0, fmt::format("cannot run `{}`: {}", shown, std::strerror(rc)));

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(converter.timeout_s);
    int status = 0;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno != EINTR) return fail(input, 0, fmt::format("waiting for `{}`: {}", shown, std::strerror(errno)));
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            return fail(input, 0, fmt::format("`{}` did not finish within {} s; killed", shown, converter.timeout_s));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const std::string how = WIFEXITED(status) ? fmt::format("exited with status {}", WEXITSTATUS(status))
                                                  : fmt::format("was killed by signal {}", WTERMSIG(status));
        const std::string tail = stderr_tail(err_path);
        return fail(input, 0, fmt::format("converting with `{}` failed: it {}{}{}", shown, how, tail.empty() ? "" : ": ", tail));
    }
    std::error_code ec;
    if (!std::filesystem::exists(output, ec) || std::filesystem::file_size(output, ec) == 0)
        return fail(input, 0, fmt::format("`{}` succeeded but wrote no converted report", shown));
    return report;
}

}  // namespace perfwatch
