// SamplingParams: how one session turns logits into a token, and the one
// check of what the sampling ops take (every backend, the engine when a
// session is added, and the API after converting a request's numbers to
// these types all apply the same rules).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tandem {

// How a sampled token is drawn from its probability row, and with it how a
// drafted token is checked (kernels/cpu/verify.h):
//   rejection: inverse CDF with one uniform per position; speculation keeps
//              a draft by Algorithm 1's accept/reject test (paper §2.3). It
//              accepts the most (1 - TV(p, q) per position), but the token at
//              a position depends on what was drafted there.
//   gumbel:    the Gumbel-max race (kernels/philox.h): the token is a pure
//              function of the row and (seed, position). The draft proposes
//              with the same noise and a draft is kept iff it equals the
//              target's own token, so the output is the plain decoding's,
//              token for token, whatever the drafter, γ or batch. Accepts at
//              least (1 - TV) / (1 + TV) per position.
// Greedy rows (temperature 0) ignore it.
enum class Coupling : uint8_t { rejection = 0, gumbel = 1 };

// "rejection" or "gumbel".
const char* coupling_name(Coupling coupling);

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy (argmax, no probability rows)
  int top_k = 0;             // keep the k most likely tokens; 0 = off
  float top_p = 1.0f;        // keep the smallest set reaching mass top_p; 1 = off
  uint64_t seed = 0;         // Philox key: same seed, same tokens
  // After top-k and top-p, keep tokens with p >= min_p * p_max (vLLM); 0 =
  // off. Last, so that positional initializers written before it still mean
  // what they meant.
  float min_p = 0.0f;
  Coupling coupling = Coupling::rejection;

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
