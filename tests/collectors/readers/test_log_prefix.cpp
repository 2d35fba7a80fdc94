#include <gtest/gtest.h>

#include "collectors/readers/log_prefix.hpp"

namespace perfwatch {

TEST(LogPrefix, CommentMarkersTagsAndTimestampsKeepTheTextsIndentation) {
    struct Case {
        std::string_view line, rest;
    };
    for (const Case& c : {
             Case{"#  Time (%)  Total Time (ns)", " Time (%)  Total Time (ns)"},
             Case{"# SKIPPED: x", "SKIPPED: x"},
             Case{"//  --------  ----", " --------  ----"},
             Case{"2024-05-01T10:11:12.1234567Z  Time (%)", " Time (%)"},
             Case{"2024-05-01 10:11:12,123 [stdout]  Time (%)", " Time (%)"},
             Case{"[1,0]<stdout>:  Time (%)", " Time (%)"},
             Case{"10:11:12.5 [6/8] Executing 'x'", "Executing 'x'"},
             Case{"[2024-05-01 10:11:12] plain", "plain"},
         }) {
        EXPECT_EQ(strip_log_prefix(c.line), c.rest) << c.line;
    }
    // Table rows, dash lines and ordinary text have no prefix.
    for (std::string_view line : {"     96.9      106,912,410          3  35,637,470.0", " --------  ----", "--------",
                                  "44.7,615954559,2,307977279.5", "Time (%),Total Time (ns)", "12:00 is not a time"})
        EXPECT_EQ(log_prefix_length(line), 0u) << line;
}

}  // namespace perfwatch
