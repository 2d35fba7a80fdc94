#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "notify/entity_name.hpp"
#include "notify/escape.hpp"
#include "notify/sinks/parts.hpp"
#include "core/text.hpp"

namespace perfwatch {

using namespace sink_parts;
using json = nlohmann::json;

std::string webhook_message(const AlertGroup& g, const std::string& key) {
    json doc = json::parse(to_json(g));
    doc["key"] = key;
    return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

const Sink& webhook_sink() {
    static const JsonPostSink sink{"webhook", &webhook_message};
    return sink;
}

}  // namespace perfwatch
