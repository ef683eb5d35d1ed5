// Byte-level BPE behaviour on hand-made tokenizers: merge order, ties,
// ignore_merges, added tokens, normalizer and pre-tokenizer variants, BOS.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/tokenizer/tiny_tokenizer.h"

namespace tandem {
namespace {

using testing::added_token;
using testing::id_of;
using testing::tiny_json;
using testing::tiny_tokenizer;
using Ids = std::vector<int32_t>;

TEST(Bpe, LowerRankedMergeAppliesFirst) {
  const Tokenizer bc_first = tiny_tokenizer(tiny_json({{"b", "c"}, {"a", "b"}}));
  EXPECT_EQ(bc_first.encode("abc"), (Ids{'a', id_of(bc_first, "bc")}));
  const Tokenizer ab_first = tiny_tokenizer(tiny_json({{"a", "b"}, {"b", "c"}}));
  EXPECT_EQ(ab_first.encode("abc"), (Ids{id_of(ab_first, "ab"), 'c'}));
}

TEST(Bpe, MergesChainIntoLongerTokens) {
  const Tokenizer tok = tiny_tokenizer(tiny_json({{"b", "c"}, {"a", "bc"}, {"abc", "d"}}));
  EXPECT_EQ(tok.encode("abcd"), (Ids{id_of(tok, "abcd")}));
  EXPECT_EQ(tok.encode("abcabc"), (Ids{id_of(tok, "abc"), id_of(tok, "abc")}));
  EXPECT_EQ(tok.encode("dabc"), (Ids{'d', id_of(tok, "abc")}));
}

TEST(Bpe, LeftmostPairWinsATie) {
  const Tokenizer tok = tiny_tokenizer(tiny_json({{"a", "a"}}));
  const int32_t aa = id_of(tok, "aa");
  EXPECT_EQ(tok.encode("aaa"), (Ids{aa, 'a'}));
  EXPECT_EQ(tok.encode("aaaa"), (Ids{aa, aa}));
  EXPECT_EQ(tok.encode("aaaaa"), (Ids{aa, aa, 'a'}));
}

TEST(Bpe, PairMergeFormatEqualsStringFormat) {
  auto json = tiny_json({{"b", "c"}, {"a", "bc"}});
  const Tokenizer strings = tiny_tokenizer(json);
  json["model"]["merges"] = nlohmann::json::array(
      {nlohmann::json::array({"b", "c"}), nlohmann::json::array({"a", "bc"})});
  const Tokenizer pairs = tiny_tokenizer(json);
  for (const char* text : {"abc", "cab", "abcbc a bc"}) {
    EXPECT_EQ(strings.encode(text), pairs.encode(text)) << text;
  }
  EXPECT_EQ(pairs.encode("abc"), (Ids{id_of(pairs, "abc")}));
}

TEST(Bpe, IgnoreMergesEmitsAPreTokenThatIsInTheVocabWhole) {
  // "abd" is in the vocabulary but no merge builds it.
  auto json = tiny_json({{"a", "b"}}, {"abd"});
  const Tokenizer merging = tiny_tokenizer(json);
  EXPECT_EQ(merging.encode("abd"), (Ids{id_of(merging, "ab"), 'd'}));
  json["model"]["ignore_merges"] = true;
  const Tokenizer ignoring = tiny_tokenizer(json);
  EXPECT_EQ(ignoring.encode("abd"), (Ids{id_of(ignoring, "abd")}));
  EXPECT_EQ(ignoring.encode("abdd"),
            (Ids{id_of(ignoring, "ab"), 'd', 'd'}));  // not in vocab: merges
}

TEST(Bpe, Gpt2RegexSplitsBeforeMerging) {
  // A merge across the space never happens: " b" and "a" are separate pre-tokens.
  const Tokenizer tok = tiny_tokenizer(tiny_json({{"a", " "}, {" ", "b"}}));
  EXPECT_EQ(tok.encode("a b"), (Ids{'a', id_of(tok, " b")}));
  EXPECT_EQ(tok.encode("a  b"), (Ids{'a', ' ', id_of(tok, " b")}));
  EXPECT_EQ(tok.decode(tok.encode("a  b")), "a  b");
}

TEST(Bpe, AddedTokensAreMatchedBeforeBpeLongestFirst) {
  auto json = tiny_json({{"a", "b"}});
  json["added_tokens"] = {added_token(300, "<x>", true), added_token(301, "<x>y", false)};
  const Tokenizer tok = tiny_tokenizer(json);
  const int32_t ab = id_of(tok, "ab");
  EXPECT_EQ(tok.encode("ab<x>ab"), (Ids{ab, 300, ab}));
  EXPECT_EQ(tok.encode("a<x>b"), (Ids{'a', 300, 'b'}));  // no merge across an added token
  EXPECT_EQ(tok.encode("<x>yab"), (Ids{301, ab}));
  EXPECT_EQ(tok.encode("<x<x>"), (Ids{'<', 'x', 300}));
  EXPECT_EQ(tok.decode(Ids{300, ab, 301}), "<x>ab<x>y");
  EXPECT_EQ(tok.decode(Ids{300, ab, 301}, /*skip_special=*/true), "ab<x>y");
  EXPECT_EQ(tok.token_id("<x>"), 300);
  EXPECT_EQ(tok.token_text(301), "<x>y");
  EXPECT_TRUE(tok.is_special(300));
  EXPECT_FALSE(tok.is_special(301));
  EXPECT_EQ(tok.vocab_size(), 302);
}

TEST(Bpe, AddedTokenStripsWhitespaceOnTheSidesItAsksFor) {
  auto json = tiny_json({});
  json["added_tokens"] = {added_token(300, "<both>", true, true, true),
                          added_token(301, "<left>", true, true, false),
                          added_token(302, "<none>", true)};
  const Tokenizer tok = tiny_tokenizer(json);
  EXPECT_EQ(tok.encode("a \t<both>\n b"), (Ids{'a', 300, 'b'}));
  EXPECT_EQ(tok.encode("a  <left> b"), (Ids{'a', 301, ' ', 'b'}));
  EXPECT_EQ(tok.encode("a <none> b"), (Ids{'a', ' ', 302, ' ', 'b'}));
  EXPECT_EQ(tok.encode("\xE3\x80\x80<both>"), (Ids{300}));  // U+3000 is whitespace too
}

TEST(Bpe, TemplateProcessingAddsBosAndEos) {
  auto json = tiny_json({{"a", "b"}});
  json["added_tokens"] = {added_token(300, "<s>", true), added_token(301, "</s>", true)};
  json["post_processor"] = nlohmann::json::parse(R"({
    "type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
               {"SpecialToken": {"id": "</s>", "type_id": 0}}],
    "pair": [],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [300], "tokens": ["<s>"]},
                       "</s>": {"id": "</s>", "ids": [301], "tokens": ["</s>"]}}})");
  const Tokenizer tok = tiny_tokenizer(json);
  const int32_t ab = id_of(tok, "ab");
  EXPECT_EQ(tok.encode("ab"), (Ids{300, ab, 301}));
  EXPECT_EQ(tok.encode("ab", /*add_special=*/false), (Ids{ab}));
  EXPECT_EQ(tok.encode(""), (Ids{300, 301}));
  EXPECT_EQ(tok.bos_id(), 300);           // no config: the template's first token
  EXPECT_EQ(tok.eos_id(), std::nullopt);  // EOS is only ever named by the config
  EXPECT_EQ(tok.decode(tok.encode("ab"), true), "ab");

  // tokenizer_config.json overrides, as transformers' Llama tokenizers do.
  const Tokenizer no_bos = tiny_tokenizer(
      json, R"({"bos_token": "<s>", "eos_token": {"content": "</s>", "__type": "AddedToken"},
               "add_bos_token": false, "add_eos_token": false})");
  EXPECT_EQ(no_bos.encode("ab"), (Ids{ab}));
  EXPECT_EQ(no_bos.bos_id(), 300);
  EXPECT_EQ(no_bos.eos_id(), 301);
}

TEST(Bpe, ConfigAddBosTokenPrependsBosWithoutATemplate) {
  auto json = tiny_json({{"a", "b"}});
  json["added_tokens"] = {added_token(300, "<s>", true)};
  const Tokenizer plain = tiny_tokenizer(json, R"({"bos_token": "<s>"})");
  EXPECT_EQ(plain.encode("ab"), (Ids{id_of(plain, "ab")}));
  EXPECT_EQ(plain.bos_id(), 300);
  const Tokenizer with_bos = tiny_tokenizer(json, R"({"bos_token": "<s>", "add_bos_token": true})");
  EXPECT_EQ(with_bos.encode("ab"), (Ids{300, id_of(with_bos, "ab")}));
  EXPECT_EQ(with_bos.encode("ab", false), (Ids{id_of(with_bos, "ab")}));
}

TEST(Bpe, NfcNormalizerComposesBeforeMerging) {
  auto json = tiny_json({{"\xC3", "\xA9"}});  // the two bytes of U+00E9 (é)
  json["normalizer"] = {{"type", "NFC"}};
  const Tokenizer tok = tiny_tokenizer(json);
  const Ids composed = tok.encode("caf\xC3\xA9");
  EXPECT_EQ(tok.encode("cafe\xCC\x81"), composed);  // e + U+0301 COMBINING ACUTE
  EXPECT_EQ(composed.back(), id_of(tok, "\xC3\xA9"));
}

TEST(Bpe, AddPrefixSpaceAndSplitVariants) {
  auto json = tiny_json({{" ", "a"}});
  json["pre_tokenizer"]["add_prefix_space"] = true;
  const Tokenizer prefixed = tiny_tokenizer(json);
  EXPECT_EQ(prefixed.encode("a"), (Ids{id_of(prefixed, " a")}));
  EXPECT_EQ(prefixed.encode(" a"), (Ids{id_of(prefixed, " a")}));

  // Sequence[Split(String " ", Removed), ByteLevel(use_regex false)]: spaces vanish.
  json["pre_tokenizer"] = nlohmann::json::parse(R"({"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"String": " "}, "behavior": "Removed", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]})");
  const Tokenizer removed = tiny_tokenizer(json);
  EXPECT_EQ(removed.encode("a  b"), (Ids{'a', 'b'}));
}

TEST(Bpe, BytesMissingFromTheVocabAreDroppedOrUnk) {
  auto json = tiny_json({});
  json["model"]["vocab"].erase("z");
  const Tokenizer dropping = tiny_tokenizer(json);
  EXPECT_EQ(dropping.encode("aza"), (Ids{'a', 'a'}));  // what Hugging Face does without unk
  json["model"]["unk_token"] = "?";
  const Tokenizer unk = tiny_tokenizer(json);
  EXPECT_EQ(unk.encode("aza"), (Ids{'a', '?', 'a'}));
}

TEST(Bpe, LongInputsWithoutSpacesMergeCorrectly) {
  // One 100 000-byte pre-token: the merge loop must stay fast and exact.
  const Tokenizer tok = tiny_tokenizer(tiny_json({{"a", "b"}, {"ab", "ab"}}));
  std::string text;
  for (int i = 0; i < 50000; ++i) text += "ab";
  const Ids ids = tok.encode(text);
  ASSERT_EQ(ids.size(), 25000u);
  EXPECT_EQ(ids.front(), id_of(tok, "abab"));
  EXPECT_EQ(tok.decode(ids), text);
  const std::string spaces(100000, ' ');
  EXPECT_EQ(tok.decode(tok.encode(spaces)), spaces);
}

}  // namespace
}  // namespace tandem
