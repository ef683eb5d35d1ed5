// CPU reference of the Gumbel-max draw (Coupling::gumbel): the definition is
// in kernels/philox.h (the Gumbel contract) and kernels/cpu/sampling.h.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/sampling.h"

namespace tandem::cpu {
namespace {

// E = -log1p(-u) >= u for u in [0, 1), so a token whose u alone already
// reaches best_ratio * p cannot finish strictly ahead: its log1p is skipped.
// The margin (1e-9 relative) covers the roundings of E and E / p many times
// over, so the winner is exactly the definition's; on a long tail it skips
// most logarithms.
constexpr double kPruneMargin = 1.0 + 1e-9;

// Tokens per chunk: the clocks' uniforms of a chunk are drawn in one loop
// the compiler vectorizes (Philox is integer multiplies and xors), then
// scanned.
constexpr int kChunk = 256;

}  // namespace

int32_t gumbel_row(const float* probs, int V, uint64_t seed, int64_t position) {
  int32_t best = -1;
  double best_ratio = 0.0;
  double u[kChunk];
  for (int start = 0; start < V; start += kChunk) {
    const int n = std::min(kChunk, V - start);
#pragma omp simd
    for (int i = 0; i < n; ++i) u[i] = philox_race_uniform(seed, position, start + i);
    for (int i = 0; i < n; ++i) {
      const float p = probs[start + i];
      if (!(p > 0.0f) || !std::isfinite(p)) continue;  // NaN, zeros and negatives never win
      if (best >= 0 && u[i] >= best_ratio * static_cast<double>(p) * kPruneMargin) continue;
      const double ratio = -std::log1p(-u[i]) / static_cast<double>(p);
      if (best < 0 || ratio < best_ratio) {  // strict: ties keep the lowest v
        best = start + i;
        best_ratio = ratio;
      }
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
