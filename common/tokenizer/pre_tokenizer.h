// The pre-tokenizer: splits text into the pieces ("pre-tokens") that BPE
// encodes one at a time, with the regexes the tokenizer.json names.
//
// Llama 3 and Qwen use Sequence[Split(Regex, Isolated), ByteLevel(use_regex
// false)]; GPT-2 uses ByteLevel(use_regex true), which splits with GPT-2's own
// pattern. Both become a list of RegexSplit steps here; the byte-to-character
// mapping of ByteLevel happens later, inside BpeModel.
//
// Patterns run in PCRE2 with PCRE2_UTF | PCRE2_UCP, so \s, \p{L}, \p{N} and
// (?i) are Unicode-aware as in Rust's regex crate. Known difference: PCRE2's
// \s also matches U+180E (Mongolian vowel separator), Rust's does not.
// Thread-safe: compiled patterns are immutable; match data is per call.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

// GPT-2's split pattern, used by ByteLevel when use_regex is true.
extern const char kGpt2SplitPattern[];

class RegexSplit {
 public:
  enum class Behavior { isolated, removed };  // what becomes of the matches

  // Throws Error(corrupt_data) naming `where` when the pattern does not compile.
  RegexSplit(const std::string& pattern, bool literal, Behavior behavior, const std::string& where);
  RegexSplit(RegexSplit&&) noexcept;
  RegexSplit& operator=(RegexSplit&&) noexcept;
  ~RegexSplit();

  // Appends the pieces of `text` (valid UTF-8): with `isolated` every match
  // and every stretch between matches is a piece; with `removed` only the
  // stretches between matches are. Empty pieces are never produced.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
  Behavior behavior_;
};

class PreTokenizer {
 public:
  void add_step(RegexSplit step) { steps_.push_back(std::move(step)); }

  // Replaces `pieces` with the pieces of `text` (valid UTF-8): every step
  // runs over the pieces of the previous one; with no steps the whole text is
  // one piece.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

 private:
  std::vector<RegexSplit> steps_;
};

}  // namespace tandem
