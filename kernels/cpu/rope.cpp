#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"

namespace tandem::cpu {
namespace {

// cos and sin of every (position, frequency) angle of a step. A model step
// rotates q and k of every layer at the same positions with the same
// frequencies, so each thread keeps the table of its last call and reuses
// it while both are equal (compared by value: a table never outlives what
// it was computed from).
struct Angles {
  std::vector<int32_t> positions;
  std::vector<float> inv_freq;
  std::vector<float> cos, sin;  // (T, half)

  bool matches(std::span<const int32_t> p, const float* f, int half) const {
    return std::equal(p.begin(), p.end(), positions.begin(), positions.end()) &&
           std::equal(f, f + half, inv_freq.begin(), inv_freq.end());
  }

  void compute(std::span<const int32_t> p, const float* f, int half) {
    positions.assign(p.begin(), p.end());
    inv_freq.assign(f, f + half);
    const size_t count = p.size() * static_cast<size_t>(half);
    cos.resize(count);
    sin.resize(count);
    const long rows = static_cast<long>(p.size());
    parallel_for(rows, rows * half >= (1 << 12), [&](int64_t t) {
      // Angles in double: positions reach 10^5 and fp32 loses the phase there.
      const double position = p[static_cast<size_t>(t)];
      for (int i = 0; i < half; ++i) {
        const double angle = position * static_cast<double>(f[i]);
        cos[static_cast<size_t>(t) * half + i] = static_cast<float>(std::cos(angle));
        sin[static_cast<size_t>(t) * half + i] = static_cast<float>(std::sin(angle));
      }
    });
  }
};

}  // namespace

// Hugging Face's rotate-half convention: element i pairs with i + D/2, and
//   x'[i]       = x[i] cos(θ_i) - x[i+D/2] sin(θ_i)
//   x'[i+D/2]   = x[i+D/2] cos(θ_i) + x[i] sin(θ_i),   θ_i = position · inv_freq[i].
void rope(float* x, std::span<const int32_t> positions, int heads, int D, const float* inv_freq) {
  const int half = D / 2;
  thread_local Angles last_step;
  Angles& angles = last_step;  // this thread's, read by the workers below
  if (!angles.matches(positions, inv_freq, half)) angles.compute(positions, inv_freq, half);
  const long rows = static_cast<long>(positions.size());
  parallel_for(rows, rows * heads * D >= (1 << 15), [&](int64_t t) {
    const float* cos_t = angles.cos.data() + static_cast<size_t>(t) * half;
    const float* sin_t = angles.sin.data() + static_cast<size_t>(t) * half;
    for (int h = 0; h < heads; ++h) {
      float* head = x + (static_cast<size_t>(t) * heads + h) * static_cast<size_t>(D);
      for (int i = 0; i < half; ++i) {
        const float a = head[i];
        const float b = head[i + half];
        head[i] = a * cos_t[i] - b * sin_t[i];
        head[i + half] = b * cos_t[i] + a * sin_t[i];
      }
    }
  });
}

}  // namespace tandem::cpu
