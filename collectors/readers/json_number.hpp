#pragma once

#include <simdjson.h>

#include "collectors/readers/units.hpp"

namespace perfwatch {

// A JSON value as a number: integers, doubles, and numbers written as strings (rocprof's
// "ts":"3497798450324"). False for anything else.
inline bool json_number(simdjson::dom::element v, double& out) {
    if (v.is_double()) return !v.get_double().get(out);
    if (v.is_int64()) {
        out = static_cast<double>(int64_t(v));
        return true;
    }
    if (v.is_uint64()) {
        out = static_cast<double>(uint64_t(v));
        return true;
    }
    std::string_view s;
    if (!v.get_string().get(s))
        if (auto x = parse_report_number(s)) {
            out = *x;
            return true;
        }
    return false;
}

}  // namespace perfwatch
