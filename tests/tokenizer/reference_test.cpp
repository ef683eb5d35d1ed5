// The real Llama 3 and Qwen 3 tokenizers against ids from transformers.js
// (tests/tokenizer/fixtures/, written by tools/tokenizer_fixtures/).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/tokenizer/tokenizer.h"
#include "tests/tokenizer/reference_tokenizers.h"

namespace tandem {
namespace {

using testing::reference;

class ReferenceTokenizer : public ::testing::TestWithParam<std::string> {};

// A printable form of a text for failure messages (control bytes escaped).
std::string shown(const std::string& text) { return nlohmann::json(text).dump(); }

TEST_P(ReferenceTokenizer, EncodesEveryFixtureTextToTheReferenceIds) {
  const auto& ref = reference(GetParam());
  TANDEM_REQUIRE_REFERENCE(ref);
  ASSERT_GE(ref.cases.size(), 60u);
  for (const auto& c : ref.cases) {
    EXPECT_EQ(ref.tokenizer->encode(c.text, /*add_special=*/false), c.ids) << shown(c.text);
    EXPECT_EQ(ref.tokenizer->encode(c.text, /*add_special=*/true), c.ids_special) << shown(c.text);
  }
}

TEST_P(ReferenceTokenizer, DecodeOfEncodeGivesTheTextBack) {
  const auto& ref = reference(GetParam());
  TANDEM_REQUIRE_REFERENCE(ref);
  const bool normalizes = GetParam() == "qwen3";  // NFC: decomposed input comes back composed
  for (const auto& c : ref.cases) {
    const std::string decoded = ref.tokenizer->decode(ref.tokenizer->encode(c.text, false));
    EXPECT_EQ(decoded, c.decoded) << shown(c.text);
    if (!normalizes) {
      EXPECT_EQ(decoded, c.text) << shown(c.text);
    }
    // skip_special drops exactly the special tokens' text.
    std::vector<int32_t> ordinary;
    for (int32_t id : c.ids_special) {
      if (!ref.tokenizer->is_special(id)) ordinary.push_back(id);
    }
    EXPECT_EQ(ref.tokenizer->decode(c.ids_special, /*skip_special=*/true),
              ref.tokenizer->decode(ordinary))
        << shown(c.text);
  }
}

TEST_P(ReferenceTokenizer, SpecialTokenLookups) {
  const auto& ref = reference(GetParam());
  TANDEM_REQUIRE_REFERENCE(ref);
  const Tokenizer& tok = *ref.tokenizer;
  if (GetParam() == "llama3") {
    EXPECT_EQ(tok.vocab_size(), 128256);
    EXPECT_EQ(tok.bos_id(), 128000);
    EXPECT_EQ(tok.eos_id(), 128001);
    EXPECT_EQ(tok.token_id("<|begin_of_text|>"), 128000);
    EXPECT_EQ(tok.token_id("<|eot_id|>"), 128009);
    EXPECT_EQ(tok.token_text(9906), "Hello");
    EXPECT_EQ(tok.token_text(1917), "Ġworld");
    EXPECT_EQ(tok.decode(tok.encode("<|begin_of_text|>Hello<|eot_id|>"), true), "Hello");
  } else {
    EXPECT_EQ(tok.vocab_size(), 151669);
    EXPECT_EQ(tok.bos_id(), std::nullopt);  // Qwen has no BOS
    EXPECT_EQ(tok.eos_id(), 151645);        // <|im_end|>
    EXPECT_EQ(tok.token_id("<|im_start|>"), 151644);
    EXPECT_EQ(tok.token_id("<think>"), 151667);
    EXPECT_FALSE(tok.is_special(151667));  // <think> is added but not special
    EXPECT_TRUE(tok.is_special(151644));
    EXPECT_EQ(tok.decode(tok.encode("<|im_start|>user\nHi<|im_end|><think>"), true),
              "user\nHi<think>");
  }
  EXPECT_EQ(tok.token_id("no such token, surely"), std::nullopt);
  EXPECT_THROW(tok.token_text(tok.vocab_size()), Error);
  const std::vector<int32_t> bad = {0, tok.vocab_size()};
  try {
    tok.decode(bad);
    FAIL() << "decode accepted an out-of-range id";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
  }
}

// const methods are thread-safe: threads sharing one tokenizer (and its word
// cache) get the single-threaded ids.
TEST_P(ReferenceTokenizer, ConcurrentEncodesAgree) {
  const auto& ref = reference(GetParam());
  TANDEM_REQUIRE_REFERENCE(ref);
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < mismatches.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (const auto& c : ref.cases) {
          mismatches[t] += ref.tokenizer->encode(c.text, false) != c.ids;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

// A long input with repeats (word cache hits) and random words (cache misses,
// so the merge loop runs): a smoke test that it finishes and round-trips.
TEST_P(ReferenceTokenizer, EncodesOverAMegabyte) {
  const auto& ref = reference(GetParam());
  TANDEM_REQUIRE_REFERENCE(ref);
  std::string text;
  std::mt19937 rng(1234);
  const std::string letters = "abcdefghijklmnopqrstuvwxyzéü漢字";
  while (text.size() < (1u << 20) + 4096) {
    for (const auto& c : ref.cases) {
      if (c.text.find("<|") != std::string::npos || c.text.find("<think>") != std::string::npos)
        continue;
      text += c.text;
      text += ' ';
      std::string word;
      for (int k = 0; k < 3 + static_cast<int>(rng() % 10); ++k) word += letters[rng() % 26];
      text += word + "\n";
    }
  }
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int32_t> ids = ref.tokenizer->encode(text, false);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ info ] %s: %zu bytes -> %zu tokens in %.3f s (%.1f MB/s)\n", GetParam().c_str(),
              text.size(), ids.size(), seconds, text.size() / seconds / 1e6);
  EXPECT_GT(ids.size(), text.size() / 8);
  if (GetParam() == "llama3") {
    EXPECT_EQ(ref.tokenizer->decode(ids), text);
  }
}

// Meta's own Llama 3 tokenizer.json prepends <|begin_of_text|> through a
// TemplateProcessing post-processor (the npm copy has none); and
// tokenizer_config's add_bos_token switches it off again.
TEST(ReferenceTokenizerBos, TemplateProcessingAddsBos) {
  const std::string name = "llama3";  // a named string: GCC 13 takes a temporary for dangling
  const auto& ref = reference(name);
  TANDEM_REQUIRE_REFERENCE(ref);
  auto json = nlohmann::json::parse(testing::read_text_file(ref.model_dir / "tokenizer.json"));
  json["post_processor"] = nlohmann::json::parse(R"({
    "type": "Sequence",
    "processors": [
      {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
      {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                  {"Sequence": {"id": "A", "type_id": 0}}],
       "pair": [],
       "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000],
                                                "tokens": ["<|begin_of_text|>"]}}}
    ]})");
  const std::string text = json.dump();
  const Tokenizer with_bos = Tokenizer::from_json(text, "", "meta-llama3/tokenizer.json");
  EXPECT_EQ(with_bos.encode("Hello world"), (std::vector<int32_t>{128000, 9906, 1917}));
  EXPECT_EQ(with_bos.encode("Hello world", false), (std::vector<int32_t>{9906, 1917}));
  EXPECT_EQ(with_bos.encode(""), (std::vector<int32_t>{128000}));
  EXPECT_EQ(with_bos.bos_id(), 128000);
  const Tokenizer no_bos =
      Tokenizer::from_json(text, R"({"add_bos_token": false, "bos_token": "<|begin_of_text|>"})",
                           "meta-llama3/tokenizer.json");
  EXPECT_EQ(no_bos.encode("Hello world"), (std::vector<int32_t>{9906, 1917}));
}

std::string model_name(const ::testing::TestParamInfo<std::string>& param) { return param.param; }
INSTANTIATE_TEST_SUITE_P(Models, ReferenceTokenizer, ::testing::Values("llama3", "qwen3"),
                         model_name);

}  // namespace
}  // namespace tandem
