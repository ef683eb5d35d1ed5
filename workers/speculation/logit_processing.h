// LogitProcessing: what a session asks to be done to the target's logits
// before standardization (penalties, logit_bias, min_tokens), and the one
// rule that applies it, shared by verification (the target's p rows), the
// model drafter (its q rows) and every rank that runs either.
//
// Order (vLLM's): the min_tokens mask, logit_bias, repetition penalty, then
// the frequency and presence penalties; temperature, top-k, top-p and min-p
// follow in standardization (kernels/sampling_params.h).
//
// Lossless speculation: a verify block's row j scores position
// first_position + j, so it is processed with the history plain decoding
// would have had there: the committed tokens and the block's drafts
// x_1..x_j (as if they had been generated). Then p_j is the very
// distribution plain decoding samples from, and Algorithm 1 keeps its
// guarantee whatever q the draft used.
//
// This first version processes rows on the host: a session that asks has
// its rows downloaded, processed and uploaded again (a session that does
// not ask costs nothing: active() is false and nothing is touched).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kernels/backend.h"
#include "kernels/sampling_params.h"

namespace tandem {

struct TargetStep;

// The request's values; the defaults change nothing.
struct LogitProcessing {
  float presence_penalty = 0.0f;    // [-2, 2]: minus this once for each token generated so far
  float frequency_penalty = 0.0f;   // [-2, 2]: minus this per occurrence in the generated tokens
  float repetition_penalty = 1.0f;  // (0, 2]: logits of tokens in prompt or output, >0: /r, else *r
  std::vector<int32_t> bias_tokens;  // logit_bias: token ids (each < vocab) ...
  std::vector<float> bias_values;    // ... and what is added to their logits, [-100, 100]
  int32_t min_tokens = 0;            // until this many are generated, masked_stop_ids get -inf
  // Set by the engine when the session is added, not by the request:
  std::vector<int32_t> masked_stop_ids;  // the session's stop ids (EOS, stop_token_ids)
  int32_t prompt_length = 0;             // history's first prompt_length tokens are the prompt

  // Whether anything is to be done (false: the session costs nothing).
  bool active() const;
};

// Limits, as the API documents them.
inline constexpr float kMaxPenalty = 2.0f;             // |presence|, |frequency|
inline constexpr float kMaxRepetitionPenalty = 2.0f;   // repetition in (0, 2]
inline constexpr float kMaxLogitBias = 100.0f;
inline constexpr size_t kMaxLogitBiasEntries = 300;

// nullopt unless a value is outside the limits above, a token id is outside
// [0, vocab), the bias lists differ in length, or min_tokens is negative.
// The field is the request's ("presence_penalty", "logit_bias", ...).
std::optional<SamplingProblem> find_processing_problem(const LogitProcessing& p, int vocab);

// Processes rows (count, V) in place: row j follows `history` (prompt
// then generated tokens) and extra[0..j) (drafts, as if generated).
// Checked first (find_processing_problem): throws Error(invalid_argument).
void process_rows(const LogitProcessing& p, std::span<const int32_t> history,
                  std::span<const int32_t> extra, int count, int V, float* rows);

// Host scratch and the backend buffer the processed rows live in, reused
// from call to call.
struct ProcessingScratch {
  std::vector<float> host;
  Buffer rows;
};

// Verification's part: for every verifying sequence of `step` whose
// processing is active (and valid: a bad one is left to its block's
// fault), its γ+1 rows are processed into scratch.rows. Returns, per
// sequence, where its rows to verify from are: the processed ones,
// `logits` as they came, or nullptr where its processing is invalid. The argmaxes of processed greedy rows are
// replaced by those of their processed rows.
std::vector<const float*> process_step_logits(Backend& backend, int V, const float* logits,
                                              const TargetStep& step, ProcessingScratch& scratch,
                                              std::span<int32_t> argmaxes);

}  // namespace tandem
