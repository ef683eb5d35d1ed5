// Tandem's tokenizer: Hugging Face tokenizer.json byte-level BPE, the kind
// GPT-2, Llama 3 and Qwen 2/3 ship. encode() gives the ids transformers gives
// for the same text (inline special tokens such as <|im_start|> are
// recognized, as with transformers' defaults); decode() turns ids back into
// text.
//
// Pipeline (encode): added tokens are cut out of the raw text
// (added_tokens.h); each remaining stretch is normalized (none or NFC, nfc.h),
// split into pre-tokens by the tokenizer.json regexes (pre_tokenizer.h) and
// merged into ids (bpe_model.h); add_special wraps the result in the
// post-processor's template (BOS for Llama 3).
//
// Not supported, with an ErrorKind::unsupported error on load: models other
// than BPE, byte_fallback, non-byte-level pre-tokenizers and decoders,
// normalizers other than NFC. decode() does not apply transformers'
// clean_up_tokenization_spaces, so decode(encode(t)) == t for any valid
// UTF-8 t.
//
// Thread-safety: a Tokenizer is an immutable, cheaply copyable handle; all
// const methods may be called from any number of threads at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem {

class Tokenizer {
 public:
  // Reads model_dir/tokenizer.json and, when present, model_dir/tokenizer_config.json
  // (add_bos_token, add_eos_token, bos_token, eos_token). Throws Error:
  // not_found (no file), corrupt_data (bad JSON or inconsistent contents),
  // unsupported (a tokenizer kind Tandem does not implement).
  static Tokenizer load(const std::filesystem::path& model_dir);
  // The same from file contents; tokenizer_config_json may be empty.
  // source_name names the tokenizer in error messages (usually its path).
  static Tokenizer from_json(const std::string& tokenizer_json,
                             const std::string& tokenizer_config_json,
                             const std::string& source_name);

  // add_special: wrap in the post-processor template (prepend BOS when the
  // tokenizer's config/post_processor says so). Throws Error(invalid_argument)
  // when text is not valid UTF-8.
  std::vector<int32_t> encode(std::string_view text, bool add_special = true) const;
  // Invalid UTF-8 produced by the ids (a code point cut in half) becomes U+FFFD.
  // Throws Error(invalid_argument) for an id outside [0, vocab_size()); an id
  // inside it that no token has (a hole) decodes to nothing, as in HF.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  int vocab_size() const;  // highest id + 1 over the vocab and added tokens
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  std::optional<int32_t> token_id(std::string_view token) const;  // exact token string
  // The raw token string (vocabulary spelling, e.g. "Ġthe"). Throws
  // Error(invalid_argument) for an id no token has.
  std::string token_text(int32_t id) const;

  // Special tokens are the added tokens marked special, plus BOS and EOS;
  // skip_special drops exactly these.
  bool is_special(int32_t id) const;
  // Appends the bytes id decodes to, possibly part of a UTF-8 sequence
  // (what StreamingDecoder builds on). Throws like decode().
  void append_token_bytes(int32_t id, std::string& out) const;
  const std::string& source_name() const;

  struct Impl;  // defined in tokenizer_impl.h

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// Incremental detokenizer for streaming: text comes out as ids arrive, and a
// chunk never ends inside a UTF-8 code point (the bytes of an incomplete code
// point are held back until it is complete). The chunks of push() followed by
// flush() concatenate to exactly decode(all ids). flush() emits what is held
// back, an incomplete code point as U+FFFD. Not thread-safe: one per stream.
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer, bool skip_special = false);
  // Throws Error(invalid_argument) for an out-of-range id, changing nothing.
  std::string push(int32_t id);
  std::string flush();

 private:
  Tokenizer tokenizer_;  // a handle: keeps the tokenizer alive
  bool skip_special_;
  std::string pending_;  // bytes of an incomplete trailing code point
};

}  // namespace tandem
