#include <gtest/gtest.h>

#include "core/text.hpp"

namespace perfwatch {

// ASCII letters only: UTF-8 bytes and the rest pass through unchanged, whatever the locale.
TEST(Text, AsciiLowerChangesAsciiLettersOnly) {
    EXPECT_EQ(ascii_lower("LocalHost:8080"), "localhost:8080");
    EXPECT_EQ(ascii_lower("Retry-After"), "retry-after");
    EXPECT_EQ(ascii_lower("\xC3\x89T\xC3\x89 GEMM_\xff"), "\xC3\x89t\xC3\x89 gemm_\xff");
    EXPECT_EQ(ascii_lower(""), "");
    EXPECT_EQ(ascii_lower("@[`{"), "@[`{");  // the bytes next to 'A'-'Z' and 'a'-'z'
}

}  // namespace perfwatch
