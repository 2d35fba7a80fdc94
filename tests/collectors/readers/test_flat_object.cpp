#include <gtest/gtest.h>

#include <simdjson.h>

#include <bit>
#include <random>
#include <string>
#include <vector>

#include "collectors/readers/flat_object.hpp"
#include "collectors/readers/dom_args.hpp"

using namespace perfwatch;

namespace {

const std::vector<std::string> k_keys = {"correlation", "device", "grid", "block", "dtype", "shared memory", "x"};

std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }

}  // namespace

// Kineto's kernel and memcpy args are flat: read without a parser.
TEST(FlatObject, KinetoKernelArgsAreReadAsTheyAre) {
    const std::string args =
        R"({"External id":112,"queued":0,"device":0,"context":1,"stream":7,"correlation":135071,)"
        R"("registers per thread":30,"shared memory":0,"blocks per SM":5.3,"warps per SM":21.200001,)"
        R"("grid":[4,106,1],"block":[128, 1, 1],"est. achieved occupancy %":33, "name": "k"})";
    FlatObject flat;
    ASSERT_TRUE(flat.read(args));
    double v = 0;
    ASSERT_TRUE(flat.number("correlation", v));
    EXPECT_EQ(v, 135071);
    ASSERT_TRUE(flat.number("warps per SM", v));
    EXPECT_EQ(v, 21.200001);
    EXPECT_EQ(flat.product("grid"), 4 * 106);
    EXPECT_EQ(flat.product("block"), 128);
    EXPECT_EQ(flat.product("stream"), -1);  // not an array
    std::string_view s;
    ASSERT_TRUE(flat.string("name", s));
    EXPECT_EQ(s, "k");
    EXPECT_FALSE(flat.number("missing", v));
    EXPECT_FALSE(flat.read(R"({"occupancy": {"activeBlocksPerMultiprocessor": 4}})"));  // nested: parsed in full
}

// Random args, flat or not, valid JSON or not: whatever FlatObject accepts, simdjson accepts as
// an object and reads the same (DomArgs, the full parse's reading) (every key, as a number, a string and a product, bit for bit);
// whatever simdjson refuses, FlatObject refuses.
TEST(FlatObject, WhatItAcceptsReadsAsTheFullParse) {
    std::mt19937_64 random(2026);
    const auto pick = [&](std::initializer_list<const char*> options) {
        return std::string(*(options.begin() + static_cast<std::ptrdiff_t>(random() % options.size())));
    };
    const auto digits = [&](std::size_t n) {
        std::string d;
        for (std::size_t i = 0; i < n; ++i) d.push_back(static_cast<char>('0' + random() % 10));
        return d;
    };
    const auto space = [&] { return pick({"", "", "", " ", "\n", "\t", "\r\n ", "\f"}); };
    const auto number = [&]() -> std::string {
        switch (random() % 8) {
        case 0: return digits(1 + random() % 20);  // leading zeros and long integers too
        case 1: return std::to_string(1 + random() % 9) + digits(random() % 18) + "." + digits(1 + random() % 6);
        case 2: return "-" + digits(1 + random() % 4);
        case 3: return pick({"0", "-0", "0.0", "1e3", "1E-2", "2.", ".5", "1.5e2", "007", "18446744073709551616"});
        default: return std::to_string(random() % 100000) + (random() % 2 ? "." + digits(1 + random() % 3) : "");
        }
    };
    const auto value = [&]() -> std::string {
        switch (random() % 9) {
        case 0: return '"' + pick({"", "float", "12", " 3.5 ", "x\\\"y", "a\tb", "\xc3\xa9", "1e3", "4 ms"}) + '"';
        case 1: return pick({"true", "false", "null", "tru", "nul"});
        case 2: {
            std::string a = "[" + space();
            for (std::size_t n = random() % 4; n > 0; --n)
                a += number() + space() + (n > 1 ? "," + space() : "");
            return a + pick({"]", "]", "]", ",]", "\"1\"]", "[1]]"});
        }
        case 3: return "{" + pick({"", "\"a\": 1", "\"b\": [1]"}) + "}";
        default: return number();
        }
    };
    simdjson::dom::parser parser;
    std::size_t accepted = 0;
    for (int round = 0; round < 40000; ++round) {
        std::string text = "{" + space();
        const std::size_t members = random() % 6;
        for (std::size_t m = 0; m < members; ++m) {
            if (m > 0) text += space() + "," + space();
            text += '"' + k_keys[random() % k_keys.size()] + '"' + space() + ":" + space() + value();
        }
        text += space() + "}";
        if (random() % 10 == 0) text.insert(random() % text.size(), pick({",", "\"", "}", "x", " ", "\\"}));
        if (random() % 20 == 0) text += pick({"x", ",", " ", "}"});

        FlatObject flat;
        const bool flat_ok = flat.read(text);
        simdjson::dom::element root;
        DomArgs full;
        const bool full_ok = !parser.parse(text).get(root) && !root.get_object().get(full.object);
        if (!full_ok) {
            EXPECT_FALSE(flat_ok) << text;
            continue;
        }
        if (!flat_ok) continue;  // parsed in full: nothing to compare
        ++accepted;
        for (const std::string& key : k_keys) {
            double a = -7, b = -7;
            const bool has_a = flat.number(key, a), has_b = full.number(key, b);
            ASSERT_EQ(has_a, has_b) << key << " of " << text;
            if (has_a) EXPECT_EQ(bits(a), bits(b)) << key << " of " << text;
            std::string_view sa, sb;
            ASSERT_EQ(flat.string(key, sa), full.string(key, sb)) << key << " of " << text;
            EXPECT_EQ(sa, sb) << key << " of " << text;
            EXPECT_EQ(bits(flat.product(key)), bits(full.product(key))) << key << " of " << text;
        }
    }
    EXPECT_GT(accepted, 5000u);  // the comparison covered many accepted objects
}
