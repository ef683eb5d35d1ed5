// StreamingDecoder: chunks never split a UTF-8 code point and concatenate to
// exactly what decode() gives for all the ids at once.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/tokenizer/utf8.h"
#include "tests/tokenizer/reference_tokenizers.h"
#include "tests/tokenizer/tiny_tokenizer.h"

namespace tandem {
namespace {

using Ids = std::vector<int32_t>;

// Streams ids one at a time; checks every chunk is valid UTF-8 and returns
// their concatenation (flush included).
std::string stream(const Tokenizer& tok, const Ids& ids, bool skip_special = false) {
  StreamingDecoder decoder(tok, skip_special);
  std::string all;
  for (int32_t id : ids) {
    const std::string chunk = decoder.push(id);
    EXPECT_EQ(utf8::find_invalid(chunk), std::string::npos) << "chunk is not valid UTF-8";
    all += chunk;
  }
  const std::string rest = decoder.flush();
  EXPECT_EQ(utf8::find_invalid(rest), std::string::npos);
  return all + rest;
}

// With the tiny tokenizer, id b < 256 is the single byte b.
TEST(StreamingDecoder, HoldsBackAnIncompleteCodePoint) {
  const Tokenizer tok = testing::tiny_tokenizer(testing::tiny_json({}));
  StreamingDecoder decoder(tok);
  EXPECT_EQ(decoder.push('a'), "a");
  EXPECT_EQ(decoder.push(0xF0), "");  // U+1F600 is F0 9F 98 80
  EXPECT_EQ(decoder.push(0x9F), "");
  EXPECT_EQ(decoder.push(0x98), "");
  EXPECT_EQ(decoder.push(0x80), "\xF0\x9F\x98\x80");
  EXPECT_EQ(decoder.push(0xE4), "");  // U+4F60 is E4 BD A0
  EXPECT_EQ(decoder.push(0xBD), "");
  EXPECT_EQ(decoder.flush(), "\xEF\xBF\xBD");  // cut short: one U+FFFD
  EXPECT_EQ(decoder.flush(), "");
}

TEST(StreamingDecoder, InvalidBytesBecomeReplacementCharactersAtOnce) {
  const Tokenizer tok = testing::tiny_tokenizer(testing::tiny_json({}));
  StreamingDecoder decoder(tok);
  EXPECT_EQ(decoder.push(0xFF), "\xEF\xBF\xBD");  // can never start a sequence
  EXPECT_EQ(decoder.push(0xE4), "");
  EXPECT_EQ(decoder.push('x'), "\xEF\xBF\xBDx");  // E4 cut off by 'x'
}

TEST(StreamingDecoder, BadIdThrowsAndChangesNothing) {
  const Tokenizer tok = testing::tiny_tokenizer(testing::tiny_json({}));
  StreamingDecoder decoder(tok);
  EXPECT_EQ(decoder.push(0xC3), "");
  EXPECT_THROW(decoder.push(5000), Error);
  EXPECT_EQ(decoder.push(0xA9), "\xC3\xA9");
}

TEST(StreamingDecoder, SkipSpecialDropsSpecialTokens) {
  auto json = testing::tiny_json({});
  json["added_tokens"] = {testing::added_token(300, "<|end|>", true),
                          testing::added_token(301, "<think>", false)};
  const Tokenizer tok = testing::tiny_tokenizer(json);
  const Ids ids = {'h', 'i', 300, 301, '!'};
  EXPECT_EQ(stream(tok, ids), "hi<|end|><think>!");
  EXPECT_EQ(stream(tok, ids, true), "hi<think>!");
  EXPECT_EQ(stream(tok, ids, true), tok.decode(ids, true));
}

// Property: for random byte sequences (valid, truncated and invalid UTF-8
// mixed), streaming equals decoding all at once.
TEST(StreamingDecoder, MatchesDecodeOnRandomBytes) {
  const Tokenizer tok = testing::tiny_tokenizer(testing::tiny_json({}));
  std::mt19937 rng(7);
  const std::vector<int32_t> interesting = {'a',  ' ',  0x80, 0x9F, 0xA0, 0xBF, 0xC2, 0xC3, 0xDF,
                                            0xE0, 0xE4, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF};
  for (int trial = 0; trial < 3000; ++trial) {
    Ids ids(rng() % 12);
    for (auto& id : ids) id = interesting[rng() % interesting.size()];
    ASSERT_EQ(stream(tok, ids), tok.decode(ids)) << "trial " << trial;
  }
}

// The real tokenizers split emoji and CJK into byte-level tokens that are not
// whole code points; streaming must hold those bytes back.
TEST(StreamingDecoder, RealTokenizersStreamEveryFixtureText) {
  for (const std::string name : {"llama3", "qwen3"}) {
    const auto& ref = testing::reference(name);
    TANDEM_REQUIRE_REFERENCE(ref);
    int partial_tokens = 0;  // ids whose bytes alone are not valid UTF-8
    for (const auto& c : ref.cases) {
      EXPECT_EQ(stream(*ref.tokenizer, c.ids_special), ref.tokenizer->decode(c.ids_special))
          << name << ": " << c.text;
      for (int32_t id : c.ids) {
        std::string bytes;
        ref.tokenizer->append_token_bytes(id, bytes);
        partial_tokens += utf8::find_invalid(bytes) != std::string::npos;
      }
    }
    EXPECT_GT(partial_tokens, 10) << name << ": the fixtures should exercise split code points";
  }
}

}  // namespace
}  // namespace tandem
