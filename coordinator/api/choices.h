// How the several choices of one request are made and put together, as pure
// functions: each choice's seed, best_of's ranking, and the usage and
// speculation report summed over every sequence. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "coordinator/api/completion_response.h"

namespace tandem::api {

// The sampling seed of choice `index` (within its prompt) of a request
// seeded with `seed`: choice 0 takes the seed itself (so n = 1 is the
// request it always was), choice i > 0 takes splitmix64(seed + i ×
// 0x9E3779B97F4A7C15), the golden-ratio increment, so that nearby seeds
// and nearby choices give unrelated streams. Every prompt of a batch uses
// the same derivation, so a prompt's choices do not depend on its place in
// the batch. Without a seed, a fresh random seed per call.
uint64_t choice_seed(std::optional<uint64_t> seed, int index);

// best_of: the positions of the `n` sequences with the highest cumulative
// logprob, best first (a tie goes to the earlier position; a sequence without
// a logprob ranks below every one with).
std::vector<int> rank_best_of(const std::vector<std::optional<double>>& cumulative_logprobs, int n);

// The usage of `usages`, one per sequence with `per_prompt` consecutive
// sequences for each prompt: completion tokens summed over every sequence
// (best_of's discarded ones included: they were generated), prompt tokens
// counted once per prompt, as OpenAI and vLLM do (cached tokens with them:
// those of the prompt's first sequence).
Usage total_usage(const std::vector<Usage>& usages, int per_prompt);

// One report for several sequences: steps, drafted and accepted tokens
// summed, α their mean weighted by drafted tokens, lossless only when every one was; the
// policy, drafter and coupling are the first's (every sequence of a request has the same).
SpeculationReport total_speculation(const std::vector<SpeculationReport>& reports);

}  // namespace tandem::api
