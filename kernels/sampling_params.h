// SamplingParams: how one session turns logits into a token, and the one
// check of what the sampling ops take (every backend, the engine when a
// session is added, and the API after converting a request's numbers to
// these types all apply the same rules).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tandem {

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy (argmax, no probability rows)
  int top_k = 0;             // keep the k most likely tokens; 0 = off
  float top_p = 1.0f;        // keep the smallest set reaching mass top_p; 1 = off
  uint64_t seed = 0;         // Philox key: same seed, same tokens
  // After top-k and top-p, keep tokens with p >= min_p * p_max (vLLM); 0 =
  // off. Last, so that positional initializers written before it still mean
  // what they meant.
  float min_p = 0.0f;

  bool greedy() const { return temperature == 0.0f; }
};

// What is wrong with a SamplingParams for the sampling ops: the field
// ("temperature", "top_k", "top_p" or "min_p") and a message for people that names
// it, the value and what to use instead.
struct SamplingProblem {
  std::string field;
  std::string message;
};

// nullopt unless a value is outside what the ops take: temperature finite
// and >= 0, top_k >= 0, top_p in (0, 1], min_p in [0, 1] (all as the floats and ints held
// here: a top_p of 1e-300 given as a double is 0 by the time it gets here).
std::optional<SamplingProblem> find_sampling_problem(const SamplingParams& p);

}  // namespace tandem
