// Logprobs: what the target's rows say of the tokens a session got, for the
// sessions that ask (SpeculationRequest::logprobs, prompt_logprobs). Runs
// where verification runs (block_verification.h), on the rows the backend
// already computed: the rows a session needs are brought to host memory
// (Backend::download) and scored there, so every backend gets it, and a
// session that does not ask costs nothing.
//
//   - A verified block's tokens (x_1..x_n, then t): token j is scored under
//     the row it was decided by, p_j for x_j and p_{n+1} for t, as the
//     target's distribution, never the residual t may have been drawn from.
//     Sampled sessions: log of the standardized row (temperature, top-k,
//     top-p applied), so a token outside the kept set never appears. Greedy
//     ones: the log-softmax of the logits row. Speculation on or off, a
//     token is decided by the same row at the same position, so its logprob
//     is the same (docs/speculation.md, "Logprobs").
//   - Prompt tokens (echo): token i scored by the log-softmax of the raw
//     logits at position i - 1 (temperature 1, no filters).
// `top`: the N most likely tokens of the same row, most likely first, ties
// to the lower id, tokens of probability 0 left out.
#pragma once

#include <span>
#include <vector>

#include "kernels/backend.h"
#include "workers/speculation/target_step.h"

namespace tandem {

constexpr int kMaxTopLogprobs = 20;  // the most `top` entries a request may ask

// The token and its `top` under a host row of log-probabilities (-inf:
// probability 0).
TokenLogprob score_token(std::span<const double> log_row, int32_t token, int top);

// log-softmax of one logits row, in double.
void log_softmax(std::span<const float> logits, std::span<double> out);
// log of one probability row (0 becomes -inf).
void log_of(std::span<const float> probs, std::span<double> out);

// Fills outcomes[k].logprobs for each verified block that asks (logprobs >=
// 0) and has no fault. block_logits[k]: sequence k's γ + 1 logits rows as
// its block verifies from them (processed where it asks for logit
// processing: logit_processing.h); probs: the pass's rows in step order,
// standardized by verify_blocks where the block is sampled.
void score_blocks(Backend& backend, int V, std::span<const float* const> block_logits,
                  const float* probs,
                  const TargetStep& step, std::vector<TargetResult::Outcome>& outcomes);

// prompt[k]: the scores of sequence k's `scored` tokens (one per sequence).
void score_prompts(Backend& backend, int V, const float* logits, const TargetStep& step,
                   std::vector<std::vector<TokenLogprob>>& prompt);

}  // namespace tandem
