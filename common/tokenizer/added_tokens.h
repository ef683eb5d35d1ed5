// Added tokens ("added_tokens" in tokenizer.json: <|begin_of_text|>,
// <|im_start|>, ...) are found in the raw text before anything else runs, so
// normalization and the pre-tokenizer never see or split them.
//
// Matching is leftmost, then longest, over all added tokens, as in Hugging
// Face's AddedVocabulary (and transformers' default split_special_tokens =
// false). lstrip/rstrip make a match swallow the whitespace beside it.
// Limits, documented rather than approximated: `single_word` is ignored, and
// tokens with `normalized: true` are matched in the raw text (the same as
// HF's behaviour when the normalizer leaves them unchanged, true for NFC and
// ASCII tokens). Llama 3 and Qwen 2/3 use neither.
// Thread-safe: immutable after construction.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool single_word = false;
};

class AddedTokenMatcher {
 public:
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  // A stretch of the input: an added token (id >= 0) or plain text (id < 0).
  struct Segment {
    std::string_view text;
    int32_t id;
  };
  // Replaces `segments` with the segments of `text`; plain segments are never
  // empty. Whitespace swallowed by lstrip/rstrip is in no segment.
  void split(std::string_view text, std::vector<Segment>& segments) const;

 private:
  struct Node {
    int32_t token = -1;  // index into tokens_ of the token ending here, or -1
    std::vector<std::pair<unsigned char, int32_t>> edges;  // byte -> child node
  };
  int32_t child(int32_t node, unsigned char byte) const;
  // Longest token starting at `at`: (token index, length) or (-1, 0).
  std::pair<int32_t, size_t> longest_at(std::string_view text, size_t at) const;

  std::vector<AddedToken> tokens_;
  std::vector<Node> trie_;        // byte trie of token contents; node 0 is the root
  std::bitset<256> first_bytes_;  // bytes that start some token: a cheap pre-filter
};

}  // namespace tandem
