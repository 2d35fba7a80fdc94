#include "notify/ci_formats.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <map>
#include <nlohmann/json.hpp>

#include "core/text.hpp"
#include "notify/entity_name.hpp"
#include "notify/escape.hpp"

namespace perfwatch {

namespace {

// GitHub shows at most this many annotations of each level per step.
constexpr std::size_t k_annotations_per_level = 10;
// Entity names in a message are cut to this many bytes (PyTorch kernel names reach 5 KB).
constexpr std::size_t k_name_bytes = 300;

const RunRef* run_of(const CheckReport& report, std::int64_t id) {
    for (const RunRef& r : report.runs)
        if (r.id == id) return &r;
    return nullptr;
}

// `path` below `root` as a relative path; empty when it is not below it.
std::string relative_to(std::string_view path, std::string_view root) {
    if (root.empty()) return {};
    std::string prefix(root);
    if (!prefix.ends_with('/')) prefix += '/';
    if (!path.starts_with(prefix)) return {};
    return std::string(path.substr(prefix.size()));
}

// "kernel 'gemm...'" for a message: the name shortened, whole lines only.
std::string entity_text(const CheckReport& report, const Finding& f) {
    const RunRef* run = run_of(report, f.run_id);
    const auto [kind, name] = shown_entity(to_string(f.entity_kind), f.entity_name, run ? run->source : "");
    std::string shown(utf8_prefix(name, k_name_bytes));
    if (shown.size() < name.size()) shown += "...";
    return fmt::format("{} '{}'", kind, shown);
}

std::string sha256_hex(std::string_view text) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
    std::string out;
    for (unsigned int i = 0; i < len; ++i) out += fmt::format("{:02x}", digest[i]);
    return out;
}

std::string_view github_level(Severity s) {
    switch (s) {
        case Severity::error: return "error";
        case Severity::warning: return "warning";
        case Severity::info: return "notice";
    }
    return "notice";
}

std::string_view gitlab_severity(Severity s) {
    switch (s) {
        case Severity::error: return "critical";
        case Severity::warning: return "major";
        case Severity::info: return "info";
    }
    return "info";
}

std::string property(std::string_view text) { return escape_for(Medium::workflow_property, text); }
std::string message(std::string_view text) { return escape_for(Medium::workflow_message, text); }

}  // namespace

std::string format_check_github(const CheckReport& report, std::string_view workspace) {
    std::string out = fmt::format("::notice title=perfwatch headline::{}\n", message(check_headline(report)));
    std::map<Severity, std::size_t> shown, left_out;
    for (const Finding& f : report.findings) {
        if (shown[f.severity] >= k_annotations_per_level) {
            ++left_out[f.severity];
            continue;
        }
        ++shown[f.severity];
        const RunRef* run = run_of(report, f.run_id);
        const std::string file = run ? relative_to(run->source, workspace) : std::string();
        std::string properties = file.empty() ? std::string() : fmt::format("file={},", property(file));
        properties += fmt::format("title={}", property(fmt::format("perfwatch {}: {}", f.rule, f.title)));
        std::string text = entity_text(report, f);
        if (f.impact) text += fmt::format(" (impact {:.1f}% of GPU time)", *f.impact);
        text += ": " + f.message;
        if (run != nullptr && file.empty()) text += fmt::format("\nreport: {}", run->source);
        out += fmt::format("::{} {}::{}\n", github_level(f.severity), properties, message(text));
    }
    std::size_t omitted = 0;
    for (const auto& [severity, n] : left_out) omitted += n;
    if (omitted > 0)
        out += fmt::format("::notice title=perfwatch::{} more findings not annotated ({} error, {} warning, {} info); "
                           "the job summary lists them\n",
                           omitted, left_out[Severity::error], left_out[Severity::warning], left_out[Severity::info]);
    return out;
}

std::string format_check_gitlab(const CheckReport& report, std::string_view project_dir) {
    nlohmann::json issues = nlohmann::json::array();
    for (const Finding& f : report.findings) {
        const RunRef* run = run_of(report, f.run_id);
        std::string path = run ? relative_to(run->source, project_dir) : std::string();
        if (path.empty() && run != nullptr) path = run->source;
        std::string benchmark;
        if (run != nullptr)
            if (auto b = run->labels.find("benchmark"); b != run->labels.end()) benchmark = b->second;
        std::string description = fmt::format("{}: {}", f.title, entity_text(report, f));
        if (f.impact) description += fmt::format(" (impact {:.1f}% of GPU time)", *f.impact);
        description += ". " + f.message;
        issues.push_back({
            {"type", "issue"},
            {"description", to_valid_utf8(description)},
            {"check_name", f.rule},
            {"fingerprint", sha256_hex(f.rule + "\n" + std::string(to_string(f.entity_kind)) + "\n" + f.entity_name +
                                       "\n" + benchmark)},
            {"severity", std::string(gitlab_severity(f.severity))},
            {"categories", nlohmann::json::array({"Performance"})},
            {"location", {{"path", to_valid_utf8(path)}, {"lines", {{"begin", 1}}}}},
        });
    }
    return issues.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace perfwatch
