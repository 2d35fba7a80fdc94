#include <cstdio>

#include "notify/sinks/parts.hpp"

namespace perfwatch {

namespace {

// The email text of each message on standard output (a CI log, a terminal).
class StdoutSink final : public Sink {
public:
    std::string_view type() const override { return "stdout"; }
    std::vector<std::string> missing(const Receiver&, bool) const override { return {}; }
    std::string body(const AlertGroup& g, const std::string&) const override { return email_text(g); }
    Delivery deliver(const Receiver&, const AlertGroup& g, const std::string& key) const override {
        const std::string text = body(g, key) + "\n";
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        return {};
    }
};

}  // namespace

const Sink& stdout_sink() {
    static const StdoutSink sink;
    return sink;
}

}  // namespace perfwatch
