// The state behind a Tokenizer handle, built by tokenizer_json.cpp from the
// tokenizer.json / tokenizer_config.json pair and read by tokenizer.cpp.
// Internal to common/tokenizer/.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/tokenizer/added_tokens.h"
#include "common/tokenizer/bpe_model.h"
#include "common/tokenizer/pre_tokenizer.h"
#include "common/tokenizer/string_map.h"
#include "common/tokenizer/tokenizer.h"

namespace tandem {

struct Tokenizer::Impl {
  enum class TokenKind : uint8_t { unused, vocab, added };
  struct TokenEntry {
    std::string text;  // vocabulary spelling, or an added token's content
    TokenKind kind = TokenKind::unused;
    bool special = false;
  };

  std::string source_name;
  std::unique_ptr<BpeModel> model;
  PreTokenizer pre_tokenizer;
  std::unique_ptr<AddedTokenMatcher> added_matcher;
  StringMap<int32_t> added_ids;    // added token content -> id
  bool nfc = false;                // normalizer is NFC
  bool add_prefix_space = false;   // ByteLevel add_prefix_space: " " before each plain stretch
  std::vector<TokenEntry> tokens;  // by id; size is vocab_size()
  std::vector<int32_t> prefix;     // template ids before the text (add_special)
  std::vector<int32_t> suffix;     // template ids after the text (add_special)
  std::optional<int32_t> bos;
  std::optional<int32_t> eos;
};

// Builds the state; throws Error naming source_name (tokenizer_json.cpp).
std::shared_ptr<const Tokenizer::Impl> build_tokenizer(const std::string& tokenizer_json,
                                                       const std::string& tokenizer_config_json,
                                                       const std::string& source_name);

}  // namespace tandem
