// The UTF-8 helpers and NFC normalization under the tokenizer.
#include <gtest/gtest.h>

#include <string>

#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/nfc.h"
#include "common/tokenizer/utf8.h"

namespace tandem {
namespace {

std::string lossy(const std::string& bytes) {
  std::string out;
  utf8::append_lossy(out, bytes);
  return out;
}

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, LossyDecodingReplacesEachMaximalInvalidSubpart) {
  EXPECT_EQ(lossy("plain ascii"), "plain ascii");
  EXPECT_EQ(lossy("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(lossy("\xF0\x9F\x98"), kFffd);                  // truncated: one U+FFFD
  EXPECT_EQ(lossy("\xC0\x80"), kFffd + kFffd);              // overlong lead, stray continuation
  EXPECT_EQ(lossy("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // a surrogate is never valid
  EXPECT_EQ(lossy("\xE2\x82\x41"), kFffd + "A");            // cut short by 'A' (0x41)
  EXPECT_EQ(lossy("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
}

TEST(Utf8, FindInvalidAndCompletePrefix) {
  EXPECT_EQ(utf8::find_invalid("h\xC3\xA9llo"), std::string::npos);
  EXPECT_EQ(utf8::find_invalid("ab\xFF"), 2u);
  EXPECT_EQ(utf8::find_invalid("ab\xE4\xBD"), 2u);
  EXPECT_EQ(utf8::complete_prefix("ab\xE4\xBD"), 2u);  // E4 BD may still be completed
  EXPECT_EQ(utf8::complete_prefix("ab\xE4\xBD\xA0"), 5u);
  EXPECT_EQ(utf8::complete_prefix("ab\xFF"), 3u);    // invalid, not incomplete: emit now
  EXPECT_EQ(utf8::complete_prefix("\xE4\x61"), 2u);  // E4 then 'a': invalid, emit now
  EXPECT_EQ(utf8::complete_prefix(""), 0u);
}

TEST(ByteLevel, Gpt2MappingRoundTripsEveryByte) {
  EXPECT_EQ(byte_level::char_of_byte(' '), "\xC4\xA0");   // 'Ġ'
  EXPECT_EQ(byte_level::char_of_byte('\n'), "\xC4\x8A");  // 'Ċ'
  EXPECT_EQ(byte_level::char_of_byte('a'), "a");
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string spelled, back;
  byte_level::append_encoded(spelled, all);
  byte_level::append_decoded(back, spelled);
  EXPECT_EQ(back, all);
  back.clear();
  byte_level::append_decoded(back, "a b");  // a plain space is outside the mapping: kept as is
  EXPECT_EQ(back, "a b");
}

TEST(Nfc, ComposesDecomposesAndReorders) {
  EXPECT_EQ(nfc_normalize("ascii stays"), "ascii stays");
  EXPECT_EQ(nfc_normalize("e\xCC\x81"), "\xC3\xA9");         // e + U+0301 -> U+00E9
  EXPECT_EQ(nfc_normalize("\xE2\x84\xAB"), "\xC3\x85");      // U+212B ANGSTROM SIGN -> U+00C5
  EXPECT_EQ(nfc_normalize("\xE2\x84\xA6"), "\xCE\xA9");      // U+2126 OHM SIGN -> U+03A9
  EXPECT_EQ(nfc_normalize("\xEF\xAC\x81"), "\xEF\xAC\x81");  // U+FB01 ligature: compatibility only
  EXPECT_EQ(nfc_normalize("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"),
            "\xEA\xB0\x81");                                 // jamo -> U+AC01
  EXPECT_EQ(nfc_normalize("\xEA\xB0\x81"), "\xEA\xB0\x81");  // Hangul syllable stays
  // U+1E0B U+0323 (d with dot above, dot below) -> U+1E0D U+0307: reorder, then compose.
  EXPECT_EQ(nfc_normalize("\xE1\xB8\x8B\xCC\xA3"), "\xE1\xB8\x8D\xCC\x87");
  // q has no composites: the marks are only put in canonical order (ccc 220 before 230).
  EXPECT_EQ(nfc_normalize("q\xCC\x87\xCC\xA3"), "q\xCC\xA3\xCC\x87");
  // U+0958 DEVANAGARI QA is a composition exclusion: it stays decomposed.
  EXPECT_EQ(nfc_normalize("\xE0\xA5\x98"), "\xE0\xA4\x95\xE0\xA4\xBC");
  // A second acute is blocked by the first (same class): only one composes.
  EXPECT_EQ(nfc_normalize("a\xCC\x81\xCC\x81"), "\xC3\xA1\xCC\x81");
  EXPECT_EQ(nfc_normalize("\xCC\x81\x61"), "\xCC\x81\x61");  // leading mark, then 'a': no starter
  EXPECT_EQ(nfc_normalize("\xF0\x9F\x98\x80 \xE4\xBD\xA0"), "\xF0\x9F\x98\x80 \xE4\xBD\xA0");
}

}  // namespace
}  // namespace tandem
