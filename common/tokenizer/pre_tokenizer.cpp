#include "common/tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "common/error.h"
#include "common/tokenizer/utf8.h"

namespace tandem {

const char kGpt2SplitPattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct RegexSplit::Compiled {
  pcre2_code* code = nullptr;
  pcre2_match_context* context = nullptr;  // read-only while matching: shared by threads
  ~Compiled() {
    pcre2_match_context_free(context);
    pcre2_code_free(code);
  }
};

RegexSplit::RegexSplit(const std::string& pattern, bool literal, Behavior behavior,
                       const std::string& where)
    : compiled_(std::make_unique<Compiled>()), behavior_(behavior) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  // PCRE2_LITERAL admits no PCRE2_UCP (a literal has no classes to widen).
  const uint32_t flags = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                  flags, &error_code, &error_offset, nullptr);
  if (compiled_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    throw Error(ErrorKind::corrupt_data,
                where + ": split pattern does not compile at offset " +
                    std::to_string(error_offset) + ": " + reinterpret_cast<char*>(message) +
                    " (hint: Tandem runs tokenizer.json regexes with PCRE2; a pattern written "
                    "for another engine may need rewriting)");
  }
  // JIT makes splitting several times faster; the interpreter is the fallback
  // where JIT is unavailable, with identical results.
  pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
  // The default match limit (10M steps) stops `\s*[\r\n]+` on a whitespace
  // run of a few MB: one attempt backtracks over the whole run. The tokenizer
  // patterns backtrack linearly, so the limit only turns long inputs into errors.
  compiled_->context = pcre2_match_context_create(nullptr);
  require(compiled_->context != nullptr, ErrorKind::out_of_resources,
          "tokenizer: out of memory for a regex match context");
  pcre2_set_match_limit(compiled_->context, UINT32_MAX);
}

RegexSplit::RegexSplit(RegexSplit&&) noexcept = default;
RegexSplit& RegexSplit::operator=(RegexSplit&&) noexcept = default;
RegexSplit::~RegexSplit() = default;

void RegexSplit::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(compiled_->code, nullptr), &pcre2_match_data_free);
  require(match != nullptr, ErrorKind::out_of_resources,
          "tokenizer: out of memory for regex match");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t gap_start = 0;  // start of the text not yet covered by a piece
  size_t at = 0;
  while (at < text.size()) {
    // The text was validated once by the caller; re-checking UTF-8 on every
    // call would make splitting quadratic in the text length.
    const int rc = pcre2_match(compiled_->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK,
                               match.get(), compiled_->context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      throw Error(ErrorKind::internal, std::string("tokenizer: pre-tokenizer regex failed: ") +
                                           reinterpret_cast<char*>(message));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
    const size_t begin = ovector[0], end = ovector[1];
    if (end == begin) {  // an empty match splits nothing; step over one character
      at = begin + utf8::step(text, begin).length;
      continue;
    }
    if (begin > gap_start) pieces.push_back(text.substr(gap_start, begin - gap_start));
    if (behavior_ == Behavior::isolated) pieces.push_back(text.substr(begin, end - begin));
    gap_start = at = end;
  }
  if (gap_start < text.size()) pieces.push_back(text.substr(gap_start));
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  pieces.clear();
  if (text.empty()) return;
  pieces.push_back(text);
  std::vector<std::string_view> next;
  for (const RegexSplit& step : steps_) {
    next.clear();
    for (std::string_view piece : pieces) step.split(piece, next);
    pieces.swap(next);
  }
}

}  // namespace tandem
