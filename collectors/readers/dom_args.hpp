#pragma once

#include <simdjson.h>

#include <string_view>

#include "collectors/readers/json_number.hpp"

namespace perfwatch {

// An event's args object parsed by simdjson, read through the calls FlatObject answers for the
// args it accepts: the first member of a name, as a number (json_number's rules), a string, or
// the product of an array of numbers.
struct DomArgs {
    simdjson::dom::object object;

    bool number(std::string_view key, double& out) const {
        simdjson::dom::element v;
        return !object[key].get(v) && json_number(v, out);
    }
    bool string(std::string_view key, std::string_view& out) const { return !object[key].get_string().get(out); }
    // 1 for an empty array; -1 when the member is missing, not an array or holds a non-number.
    double product(std::string_view key) const {
        simdjson::dom::array arr;
        if (object[key].get_array().get(arr)) return -1;
        double p = 1;
        for (simdjson::dom::element x : arr) {
            double v = 0;
            if (!json_number(x, v)) return -1;
            p *= v;
        }
        return p;
    }
};

}  // namespace perfwatch
