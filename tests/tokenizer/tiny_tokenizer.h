// Hand-made tokenizer.json documents for the tokenizer tests: a byte-level BPE
// whose ids 0..255 are the 256 single-byte tokens (id == byte value), then one
// id per merge result, in merge order.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/tokenizer.h"

namespace tandem::testing {

// Vocabulary spelling of raw text ("a b" -> "aĠb").
inline std::string spelled(const std::string& raw) {
  std::string out;
  byte_level::append_encoded(out, raw);
  return out;
}

// merges: (left, right) in raw text, best rank first. extra_vocab: more raw
// tokens that no merge produces. Ids of merge results and extras follow 255
// in order. GPT-2 style pre-tokenizer (ByteLevel with its regex), no
// normalizer, ByteLevel post-processor and decoder.
inline nlohmann::json tiny_json(const std::vector<std::pair<std::string, std::string>>& merges,
                                const std::vector<std::string>& extra_vocab = {}) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level::char_of_byte(static_cast<uint8_t>(b))] = b;
  int next = 256;
  nlohmann::json merge_list = nlohmann::json::array();
  for (const auto& [left, right] : merges) {
    merge_list.push_back(spelled(left) + " " + spelled(right));
    if (!vocab.contains(spelled(left + right))) vocab[spelled(left + right)] = next++;
  }
  for (const auto& token : extra_vocab) {
    if (!vocab.contains(spelled(token))) vocab[spelled(token)] = next++;
  }
  return {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"},
        {"add_prefix_space", false},
        {"trim_offsets", true},
        {"use_regex", true}}},
      {"post_processor",
       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}}},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", merge_list}}},
  };
}

inline nlohmann::json added_token(int32_t id, const std::string& content, bool special,
                                  bool lstrip = false, bool rstrip = false) {
  return {{"id", id},         {"content", content},  {"single_word", false}, {"lstrip", lstrip},
          {"rstrip", rstrip}, {"normalized", false}, {"special", special}};
}

inline Tokenizer tiny_tokenizer(const nlohmann::json& json, const std::string& config = "") {
  return Tokenizer::from_json(json.dump(), config, "tiny/tokenizer.json");
}

// Id of a raw token in a tiny tokenizer.
inline int32_t id_of(const Tokenizer& tokenizer, const std::string& raw) {
  const auto id = tokenizer.token_id(spelled(raw));
  return id ? *id : -1;
}

}  // namespace tandem::testing
