#include "workers/token_sampler.h"

#include "kernels/philox.h"

namespace tandem {

TokenSampler::TokenSampler(Backend& backend, int vocab_size)
    : backend_(backend), V_(vocab_size), probs_(backend.allocate(static_cast<size_t>(vocab_size))) {}

int32_t TokenSampler::pick(const float* logits_row, const SamplingParams& params,
                           int64_t position) {
  if (params.greedy()) {
    int32_t token = 0;
    backend_.argmax(logits_row, 1, V_, &token);
    return token;
  }
  backend_.standardize(logits_row, 1, V_, std::span(&params, 1), probs_.data());
  // The row stays in backend memory; only the token comes back.
  int32_t token = 0;
  if (params.coupling == Coupling::gumbel) {
    const NoiseKey key{params.seed, position};
    backend_.sample_gumbel(probs_.data(), 1, V_, std::span(&key, 1), &token);
    return token;
  }
  const double u = philox_uniform(params.seed, position, RandomPurpose::target_sample);
  backend_.sample(probs_.data(), 1, V_, std::span(&u, 1), &token);
  return token;
}

}  // namespace tandem
