// JobText: one job's output as its stream gets it. Tokens become text
// (decoded, stop strings applied, as the streaming decoder and the
// StopMatcher let it out) and, when the request asked for logprobs, each
// token's logprob entry goes with its text (api/logprob_aligner.h says
// which text that is, and which entries a stop string drops). With echo the
// prompt comes first: its text (the prompt's tokens decoded) and, with
// logprobs, its tokens' entries, the first with no logprob.
//
// Logprobs may come later than tokens (the engine may give them only when
// the session ends): text waits for its tokens' entries, so what a client
// reads always pairs text with the tokens that made it. Engine thread only.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "coordinator/api/logprob_aligner.h"
#include "coordinator/api/stop_matcher.h"
#include "coordinator/api/token_logprobs.h"
#include "workers/speculation/engine_types.h"

namespace tandem {

class JobText {
 public:
  // stop_strings as the job's; prompt as the engine's request.
  JobText(const Tokenizer& tokenizer, std::vector<std::string> stop_strings,
          const std::vector<int32_t>& prompt, bool echo, bool logprobs);

  // What to publish: text and the entries of its tokens.
  struct Piece {
    std::string text;
    std::vector<api::LogprobEntry> logprobs;
  };

  // Decodes the output's tokens not seen yet. True once a stop string has
  // completed (the session is to end; then take_cut()).
  bool push(const std::vector<int32_t>& output);
  // What may go now. `output_logprobs` / `prompt_logprobs`: what the engine
  // has given so far, null when nothing yet (ignored without logprobs).
  Piece take(const std::vector<TokenLogprob>* output_logprobs,
             const std::vector<TokenLogprob>* prompt_logprobs);
  // The session ended without a stop yet: the text held back comes out (a
  // stop string may still complete in it). True if one did.
  bool finish();
  // Everything left, after a stop (cut there) or finish(), with the
  // session's result.
  Piece take_last(const SpeculationResult& result);

  std::size_t tokens_seen() const { return tokens_seen_; }
  // Σ logprob of the output tokens sent.
  double cumulative_logprob() const { return cumulative_logprob_; }

 private:
  Piece take_prompt(const std::vector<TokenLogprob>* prompt_logprobs);
  void add_output_entries(const api::LogprobAligner::Piece& piece,
                          const std::vector<TokenLogprob>& logprobs, Piece& out);
  api::LogprobEntry entry(int32_t token, const TokenLogprob* logprob, std::size_t text_offset) const;

  Tokenizer tokenizer_;
  StreamingDecoder decoder_;
  api::StopMatcher stops_;
  api::LogprobAligner aligner_;
  std::vector<int32_t> prompt_;
  std::vector<int32_t> output_;  // the output's tokens seen so far
  bool logprobs_;
  bool prompt_sent_;
  bool stopped_ = false;
  std::string prompt_text_;
  std::size_t tokens_seen_ = 0;
  double cumulative_logprob_ = 0;
};

}  // namespace tandem
