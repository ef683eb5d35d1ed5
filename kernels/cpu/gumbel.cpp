// CPU reference of the Gumbel-max draw (Coupling::gumbel): the definition is
// in kernels/philox.h (the Gumbel contract) and kernels/cpu/sampling.h.
#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/sampling.h"

namespace tandem::cpu {

int32_t gumbel_row(const float* probs, int V, uint64_t seed, int64_t position) {
  int32_t best = -1;
  double best_ratio = 0.0;
  for (int v = 0; v < V; ++v) {
    const float p = probs[v];
    if (!(p > 0.0f) || !std::isfinite(p)) continue;  // NaN, zeros and negatives never win
    const double ratio = philox_exponential(seed, position, v) / static_cast<double>(p);
    if (best < 0 || ratio < best_ratio) {  // strict: ties keep the lowest v
      best = v;
      best_ratio = ratio;
    }
  }
  return best;
}

void sample_gumbel(const float* probs, int rows, int V, std::span<const NoiseKey> keys,
                   int32_t* out) {
  require(V > 0, ErrorKind::invalid_argument,
          "V (vocabulary size) must be > 0, got " + std::to_string(V));
  require(keys.size() == static_cast<size_t>(rows), ErrorKind::invalid_argument, [&] {
    return "sample_gumbel: " + std::to_string(keys.size()) + " noise keys for " +
           std::to_string(rows) + " rows";
  });
  std::vector<int32_t> drawn(static_cast<size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    const size_t k = static_cast<size_t>(r);
    drawn[k] = gumbel_row(probs + k * static_cast<size_t>(V), V, keys[k].seed, keys[k].position);
    require(drawn[k] >= 0, ErrorKind::invalid_argument, [&] {
      return "sample_gumbel: probability row " + std::to_string(r) +
             " has no positive finite mass";
    });
  }
  std::copy(drawn.begin(), drawn.end(), out);
}

}  // namespace tandem::cpu
