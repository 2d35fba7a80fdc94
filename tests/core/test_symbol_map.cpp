#include <gtest/gtest.h>

#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/symbol_map.hpp"

using namespace perfwatch;

namespace {

// The map's entries as (key, value) texts, in its order.
template <class Map>
std::vector<std::pair<std::string, std::string>> entries(const Map& m) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [k, v] : m) out.emplace_back(std::string(k), v);
    return out;
}

}  // namespace

// Every operation the tree uses, at random, on an Attributes and a std::map side by side: the two
// hold the same entries in the same order after each step.
TEST(SymbolMap, BehavesAsAStdMapOfStrings) {
    std::mt19937 rng(7);
    Attributes flat;
    std::map<std::string, std::string> tree;
    const auto key = [&] { return "k" + std::to_string(rng() % 40); };
    for (int step = 0; step < 20000; ++step) {
        const std::string k = key(), v = std::to_string(rng());
        switch (rng() % 6) {
            case 0: flat[k] = v, tree[k] = v; break;
            case 1: {
                const auto [it, added] = flat.emplace(k, v);
                const auto [jt, tree_added] = tree.emplace(k, v);
                ASSERT_EQ(added, tree_added);
                ASSERT_EQ(it->second, jt->second);
                break;
            }
            case 2: ASSERT_EQ(flat.erase(k), tree.erase(k)); break;
            case 3: {
                const auto it = flat.find(k);
                const auto jt = tree.find(k);
                ASSERT_EQ(it == flat.end(), jt == tree.end());
                if (jt != tree.end()) {
                    ASSERT_EQ(it->first, jt->first);
                    ASSERT_EQ(flat.at(k), tree.at(k));
                } else {
                    ASSERT_THROW((void)flat.at(k), std::out_of_range);
                }
                ASSERT_EQ(flat.contains(k), tree.contains(k));
                break;
            }
            case 4: {
                const char c = static_cast<char>('0' + rng() % 10);
                ASSERT_EQ(erase_if(flat, [&](const auto& kv) { return kv.second.back() == c; }),
                          std::erase_if(tree, [&](const auto& kv) { return kv.second.back() == c; }));
                break;
            }
            default:
                if (auto it = flat.find(k); it != flat.end()) flat.erase(it);
                tree.erase(k);
        }
        ASSERT_EQ(flat.size(), tree.size());
        ASSERT_EQ(entries(flat), entries(tree)) << "after step " << step;
    }
}

TEST(SymbolMap, EqualWhenTheirEntriesAre) {
    Attributes a, b;
    a["grid"] = "9x32x1";
    a["block"] = "384x1x1";
    b["block"] = "384x1x1";
    EXPECT_NE(a, b);
    b["grid"] = "9x32x1";
    EXPECT_EQ(a, b);  // whatever order they were set in
    EXPECT_EQ(a.begin()->first, "block");
    SymbolMap<std::vector<double>> samples;
    samples["duration"] = {1.0, 2.0};
    EXPECT_EQ(samples.at("duration").size(), 2u);
    EXPECT_TRUE(SymbolMap<int>().empty());
}
