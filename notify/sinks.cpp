#include "notify/sinks.hpp"

#include <array>
#include <cmath>

namespace perfwatch {

// Each defined in its own file under notify/sinks/.
const Sink& slack_sink();
const Sink& teams_sink();
const Sink& mattermost_sink();
const Sink& discord_sink();
const Sink& webhook_sink();
const Sink& email_sink();
const Sink& jsonl_sink();
const Sink& stdout_sink();
const Sink& github_sink();
const Sink& gitlab_sink();

namespace {

// The sink table: adding a receiver type is its file under notify/sinks/ and a row here.
const std::array<const Sink*, 10> k_sinks{&slack_sink(),   &teams_sink(),  &mattermost_sink(), &discord_sink(),
                                          &webhook_sink(), &email_sink(),  &jsonl_sink(),      &stdout_sink(),
                                          &github_sink(),  &gitlab_sink()};

}  // namespace

std::span<const Sink* const> sinks() { return k_sinks; }

const Sink* find_sink(std::string_view type) {
    for (const Sink* s : k_sinks)
        if (s->type() == type) return s;
    return nullptr;
}

const std::vector<std::string>& receiver_types() {
    static const std::vector<std::string> k_types = [] {
        std::vector<std::string> types;
        for (const Sink* s : k_sinks) types.emplace_back(s->type());
        return types;
    }();
    return k_types;
}

std::chrono::milliseconds retry_delay(int attempts, std::optional<std::chrono::seconds> retry_after,
                                      std::mt19937_64& rng) {
    if (retry_after) return std::chrono::duration_cast<std::chrono::milliseconds>(*retry_after);
    const double full = std::min(600000.0, 2000.0 * std::pow(2.0, std::max(0, attempts - 1)));
    std::uniform_real_distribution<double> jitter(full / 2, full);
    return std::chrono::milliseconds(static_cast<long long>(jitter(rng)));
}

}  // namespace perfwatch
