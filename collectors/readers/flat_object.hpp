#pragma once

#include <string_view>
#include <vector>

namespace perfwatch {

// A JSON object whose member values are all plain numbers, strings without escapes or control
// characters, true, false, null, or arrays of plain numbers (Kineto's kernel and memcpy args),
// read without a parser: each member's key and raw value. Anything else (a nested object, an
// escape, a sign, an exponent, a long integer, text that is not JSON) is refused, so that the
// caller parses it in full; what is accepted reads as simdjson and json_number read it.
// A plain number: digits, no leading zero, at most 18 of them without a fraction (an int64).
class FlatObject {
public:
    // Reads `json` (an object from its '{' to its '}'); false when refused (nothing is kept).
    bool read(std::string_view json);

    // The first member named `key` as json_number reads it: a number, or a string holding one.
    bool number(std::string_view key, double& out) const;
    // The first member named `key` when it is a string: its text.
    bool string(std::string_view key, std::string_view& out) const;
    // The product of the numbers in the first member named `key` when it is an array of them
    // (1 for an empty one), else -1.
    double product(std::string_view key) const;

private:
    struct Member {
        std::string_view key, value;  // the value's raw text: a string with its quotes
    };
    const Member* find(std::string_view key) const;

    std::vector<Member> m_members;
};

}  // namespace perfwatch
