// StreamingDecoder: see tokenizer.h. The held-back bytes are at most the
// three leading bytes of one code point; everything before them is final,
// because lossy UTF-8 decoding decides each position from the bytes after it
// only up to the end of that code point.
#include "common/tokenizer/tokenizer.h"
#include "common/tokenizer/utf8.h"

namespace tandem {

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(tokenizer), skip_special_(skip_special) {}

std::string StreamingDecoder::push(int32_t id) {
  std::string text;
  if (skip_special_ && tokenizer_.is_special(id)) return text;
  tokenizer_.append_token_bytes(id, pending_);  // throws before appending anything
  const size_t ready = utf8::complete_prefix(pending_);
  utf8::append_lossy(text, std::string_view(pending_).substr(0, ready));
  pending_.erase(0, ready);
  return text;
}

std::string StreamingDecoder::flush() {
  std::string text;
  utf8::append_lossy(text, pending_);
  pending_.clear();
  return text;
}

}  // namespace tandem
