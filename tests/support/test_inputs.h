// Inputs the kernel tests build again and again: normal random values with
// a fixed seed, and sampling parameters in one call.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/sampling_params.h"

namespace tandem::test_support {

// n values from N(0, scale²), the same for the same seed.
inline std::vector<float> random_normal(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  return values;
}

inline SamplingParams sampling_params(float temperature, int top_k = 0, float top_p = 1.0f) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  return p;
}

}  // namespace tandem::test_support
