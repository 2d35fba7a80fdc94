#include <fmt/format.h>

#include <fstream>

#include "notify/sinks/parts.hpp"

namespace perfwatch {

namespace {

// One webhook document per line appended to the receiver's file: a machine record, so names stay
// verbatim (valid UTF-8; a line break inside a name is \n in JSON and cannot split the line).
class JsonLinesSink final : public Sink {
public:
    std::string_view type() const override { return "jsonl"; }
    std::vector<std::string> missing(const Receiver& r, bool) const override {
        if (!r.path.empty()) return {};
        return {"needs 'path' (the JSON-lines file)"};
    }
    std::string body(const AlertGroup& g, const std::string& key) const override { return webhook_message(g, key); }
    Delivery deliver(const Receiver& r, const AlertGroup& g, const std::string& key) const override {
        std::ofstream out(r.path, std::ios::app);
        out << body(g, key) << '\n';
        out.flush();
        if (!out) return {Delivery::Outcome::retry, 0, {}, fmt::format("{}: cannot append", r.path)};
        return {};
    }
};

}  // namespace

const Sink& jsonl_sink() {
    static const JsonLinesSink sink;
    return sink;
}

}  // namespace perfwatch
