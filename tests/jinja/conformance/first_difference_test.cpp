// The mismatch report itself: it must point at the right byte, or every
// conformance failure would send the reader to the wrong place.
#include "tests/jinja/conformance/first_difference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tandem::jinja_conformance {
namespace {

using ::testing::HasSubstr;

TEST(FirstDifference, EqualTextsHaveNone) {
  EXPECT_EQ(first_difference_offset("abc", "abc"), std::string::npos);
  EXPECT_EQ(describe_first_difference("", ""), "");
}

TEST(FirstDifference, FindsTheFirstDifferingByte) {
  EXPECT_EQ(first_difference_offset("abcdef", "abcXef"), 3u);
  EXPECT_EQ(first_difference_offset("x", "y"), 0u);
}

TEST(FirstDifference, APrefixDiffersWhereItEnds) {
  EXPECT_EQ(first_difference_offset("abc", "abcd"), 3u);
  EXPECT_EQ(first_difference_offset("abcd", "ab"), 2u);
  EXPECT_EQ(first_difference_offset("", "a"), 0u);
}

TEST(FirstDifference, ReportShowsOffsetAndBothSidesEscaped) {
  const std::string report =
      describe_first_difference("<|im_start|>user\nHi<|im_end|>\n", "<|im_start|>user\nHi\n", 8);
  EXPECT_THAT(report, HasSubstr("first difference at byte 19"));
  EXPECT_THAT(report, HasSubstr("expected 30 bytes, got 20"));
  EXPECT_THAT(report, HasSubstr("both:     ...\">user\\nHi\""));
  EXPECT_THAT(report, HasSubstr("expected: \"<|im_end\"..."));
  EXPECT_THAT(report, HasSubstr("actual:   \"\\n\"..."));
}

TEST(FirstDifference, ContextNeverCutsAUtf8Character) {
  // "é" is two bytes (C3 A9); a context of 1 byte before the difference
  // would start inside it.
  const std::string report = describe_first_difference("\xC3\xA9" "a", "\xC3\xA9" "b", 1);
  EXPECT_THAT(report, HasSubstr("first difference at byte 2"));
  EXPECT_THAT(report, HasSubstr("both:     ...\"\xC3\xA9\""));
  // Differing inside a character: the shared part stops before it, and
  // each side shows its own whole character.
  const std::string inside = describe_first_difference("x\xC3\xA9", "x\xC3\xA8", 4);
  EXPECT_THAT(inside, HasSubstr("at byte 2"));
  EXPECT_THAT(inside, HasSubstr("both:     ...\"x\"\n"));
  EXPECT_THAT(inside, HasSubstr("expected: \"\xC3\xA9\""));
  EXPECT_THAT(inside, HasSubstr("actual:   \"\xC3\xA8\""));
}

}  // namespace
}  // namespace tandem::jinja_conformance
