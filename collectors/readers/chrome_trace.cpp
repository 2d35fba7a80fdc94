#include "collectors/readers/chrome_trace.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <cctype>
#include <cmath>

#include "collectors/readers/byte_source.hpp"
#include "collectors/readers/json_number.hpp"
#include "collectors/readers/units.hpp"

namespace perfwatch {

Result<std::string> read_trace(const std::string& path, std::string_view content,
                               const std::function<void(const TraceEvent&)>& take) {
    auto inflated = read_all(path, content);
    if (!inflated) return std::unexpected(inflated.error());
    std::string text = std::move(*inflated);
    std::string note;
    std::size_t end = text.find_last_not_of(" \t\r\n");
    const bool is_array = text.find_first_not_of(" \t\r\n") != std::string::npos &&
                          text[text.find_first_not_of(" \t\r\n")] == '[';
    if (is_array && end != std::string::npos && text[end] != ']') {
        // Keep whole lines that end an event ("}," or "}") and close the array.
        std::size_t cut = end + 1;
        while (cut > 0) {
            const std::size_t line_start = text.rfind('\n', cut - 1);
            const std::size_t b = line_start == std::string::npos ? 0 : line_start + 1;
            std::string_view l = trim(std::string_view(text).substr(b, cut - b));
            if (l.ends_with("},") || l.ends_with("}")) break;
            if (line_start == std::string::npos) {
                cut = 0;
                break;
            }
            cut = line_start;
        }
        text.resize(cut);
        while (!text.empty() && (std::isspace(static_cast<unsigned char>(text.back())) || text.back() == ','))
            text.pop_back();
        if (text.empty()) return fail_at_offset(path, 0, "trace holds no complete event");
        text += "\n]";
        note = fmt::format("trace ended without its closing bracket (cut short at byte {}); read up to the last "
                           "complete event",
                           content.size());
    }
    simdjson::padded_string padded(text);
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (auto err = parser.parse(padded).get(root))
        return fail(path, 0, fmt::format("invalid JSON: {}", simdjson::error_message(err)));
    simdjson::dom::array events;
    if (root.is_array()) {
        events = root.get_array();
    } else if (root.is_object()) {
        if (root["traceEvents"].get_array().get(events))
            return fail(path, 0, "JSON object without a \"traceEvents\" array");
    } else {
        return fail(path, 0, "expected a JSON array of trace events or an object with \"traceEvents\"");
    }
    std::size_t index = 0;
    for (simdjson::dom::element ev : events) {
        ++index;
        simdjson::dom::object o;
        if (ev.get_object().get(o)) return fail(path, 0, fmt::format("trace event {} is not a JSON object", index));
        auto text_of = [&](std::string_view key) {
            std::string_view s;
            if (o[key].get_string().get(s)) return std::string_view{};
            return s;
        };
        TraceEvent t;
        t.ph = text_of("ph");
        t.name = text_of("name");
        t.cat = text_of("cat");
        if (t.ph == "M") {
            simdjson::dom::object margs;
            if (!o["args"].get_object().get(margs)) {
                std::string_view label;
                if (!margs["name"].get_string().get(label)) t.label = label;
            }
            simdjson::dom::element pid;
            if (!o["pid"].get(pid)) {
                if (pid.is_int64()) t.pid = std::to_string(int64_t(pid));
                else if (pid.is_string()) t.pid = std::string(std::string_view(pid));
            }
            take(t);
            continue;
        }
        if (t.ph != "X") continue;
        auto number = [&](std::string_view key, double& out) {
            simdjson::dom::element v;
            return !o[key].get(v) && json_number(v, out);
        };
        if (!number("ts", t.ts))
            return fail(path, 0, fmt::format("trace event {} (\"{}\") has no numeric \"ts\"", index, t.name));
        if (!number("dur", t.dur)) continue;
        if (simdjson::dom::object args; !o["args"].get_object().get(args)) {
            simdjson::dom::element begin_v, end_v;
            double b = 0, e = 0;
            if (!args["BeginNs"].get(begin_v) && !args["EndNs"].get(end_v) && json_number(begin_v, b) &&
                json_number(end_v, e) && e >= b) {
                t.begin_ns = b;
                t.end_ns = e;
            }
        }
        auto id_text = [&](std::string_view key, std::string& out, bool* negative, bool* is_string) {
            simdjson::dom::element v;
            if (o[key].get(v)) return;
            std::string_view s;
            if (!v.get_string().get(s)) {
                out = std::string(s);
                if (is_string) *is_string = true;
                return;
            }
            double d = 0;
            if (v.is_double()) d = double(v);
            else if (v.is_int64()) d = static_cast<double>(int64_t(v));
            else if (v.is_uint64()) d = static_cast<double>(uint64_t(v));
            if (negative) *negative = d < 0;
            out = d == std::floor(d) ? fmt::format("{:.0f}", d) : fmt::format("{}", d);
        };
        id_text("pid", t.pid, nullptr, nullptr);
        id_text("tid", t.tid, &t.tid_negative, &t.tid_is_string);
        take(t);
    }
    return note;
}


}  // namespace perfwatch
