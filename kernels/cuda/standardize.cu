// Standardization on the GPU: the twin of cpu::standardize
// (kernels/cpu/sampling.h has the definition this follows step by step).
//
// One thread block per row; each row takes its own path:
//   greedy (temperature 0)  one-hot at the argmax: 1 pass to find, 1 to write;
//   plain                   max, weights (+ their double sum), scale: 3 passes;
//   top-k (0 < k < V)       radix select of the k-th largest logit (4 passes,
//                           radix_select.cuh) before the weights are written;
//   top-p (p < 1)           radix select of the top-p boundary over the
//                           written weights (4 passes), fused with the scale;
//   min-p (min_p > 0)       after the above: max, cut below min_p * max with
//                           the kept mass, rescale: 2 more passes.
// So rows without top-k or top-p never pay for selection, and nothing needs
// sorting: no workspace (standardize_workspace_bytes is 0).
//
// Matching the CPU: weights are exp((x - max) / T) with the argument formed
// in double and rounded to float exactly as the CPU does; the float exp is
// computed as a correctly rounded exp (double exp, then one rounding), where
// the CPU's glibc expf is within 0.502 ulp, so an entry can differ from the
// CPU's by one float ulp. Sums are in double (the CPU's sequential order is
// not reproduced: they differ in the last bits only). Removed tokens get
// exactly 0, as on the CPU.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/radix_select.cuh"
#include "kernels/cuda/sampling.h"
#include "kernels/cuda/sampling_device.cuh"

namespace tandem::cuda {
namespace {

using namespace sampling;

// The softmax numerator of one logit, cpu's Weight: the max entry weighs 1;
// if the max is +inf the +inf entries share the mass; if nothing is above
// -inf the row is uniform; NaN and -inf weigh 0.
struct Weight {
  float max_logit;
  double inv_temperature;

  __device__ float operator()(float x) const {
    if (max_logit == INFINITY) return x == INFINITY ? 1.0f : 0.0f;
    if (max_logit == -INFINITY) return 1.0f;
    const double scaled = (static_cast<double>(x) - max_logit) * inv_temperature;
    // The CPU clamps at -200 before exp (float exp is 0 well before that) and
    // maps a NaN result to 0: both are 0 here directly.
    if (!(scaled > -200.0)) return 0.0f;
    return static_cast<float>(exp(static_cast<double>(static_cast<float>(scaled))));
  }
};

struct Storage {
  ReduceStorage reduce;
  RadixStorage radix;
};

__device__ void write_one_hot(const float* x, int V, float* y, Storage& s) {
  const int best = block_argmax(x, V, s.reduce);  // every read of x is done
  for (int i = threadIdx.x; i < V; i += kThreads) y[i] = i == best ? 1.0f : 0.0f;
}

// The largest non-NaN logit, or -inf if there is none (cpu's row_max; -0
// and +0 come back as +0, which weighs the same).
__device__ float row_max(const float* x, int V, Storage& s) {
  uint32_t mine = 0;  // below ordered_bits of every float
  for (int i = threadIdx.x; i < V; i += kThreads) {
    const uint32_t key = ordered_bits(x[i]);
    mine = key > mine ? key : mine;
  }
  const unsigned long long top = block_max(static_cast<unsigned long long>(mine), s.reduce);
  return from_ordered_bits(static_cast<uint32_t>(top));
}

// Writes the row's weights into y (0 outside the top-k) and returns their sum.
__device__ double write_weights(const float* x, int V, const SamplingParams& p, float* y,
                                Storage& s) {
  const Weight weight{row_max(x, V, s), 1.0 / static_cast<double>(p.temperature)};
  double sum = 0.0;
  if (p.top_k > 0 && p.top_k < V) {
    const Cut cut = select_top_k(x, V, p.top_k, s.radix);
    // Each entry is read and written by the same thread: probs may alias logits.
    for_each_kept(
        V, cut, [&](int i) { return ordered_bits(x[i]); },
        [&](int i, bool kept) {
          const float w = kept ? weight(x[i]) : 0.0f;
          y[i] = w;
          sum += w;
        },
        s.radix);
  } else {
    for (int i = threadIdx.x; i < V; i += kThreads) {
      const float w = weight(x[i]);
      y[i] = w;
      sum += w;
    }
  }
  return block_sum(sum, s.reduce);  // its barrier publishes y to the block
}

// cpu's apply_min_p over a normalized row y: zeroes p < min_p * max p and
// renormalizes (sum in double).
__device__ void apply_min_p(float* y, int V, float min_p, Storage& s) {
  float top = 0.0f;
  for (int i = threadIdx.x; i < V; i += kThreads) top = y[i] > top ? y[i] : top;
  const float threshold = min_p * block_max(top, s.reduce);
  double kept = 0.0;
  for (int i = threadIdx.x; i < V; i += kThreads) {
    if (y[i] < threshold) y[i] = 0.0f;
    kept += y[i];
  }
  const double scale = 1.0 / block_sum(kept, s.reduce);  // its barrier publishes y
  for (int i = threadIdx.x; i < V; i += kThreads) y[i] = static_cast<float>(y[i] * scale);
}

__global__ void __launch_bounds__(kThreads)
    standardize_kernel(const float* logits, int V, const SamplingParams* params, float* probs) {
  __shared__ Storage s;
  const size_t offset = static_cast<size_t>(blockIdx.x) * static_cast<size_t>(V);
  const float* x = logits + offset;
  float* y = probs + offset;
  const SamplingParams p = params[blockIdx.x];
  if (p.temperature == 0.0f) {
    write_one_hot(x, V, y, s);
    return;
  }
  double total = write_weights(x, V, p, y, s);  // >= 1: the max entry weighs 1
  if (p.top_p < 1.0f) {
    const TopP top_p = select_top_p(y, V, static_cast<double>(p.top_p) * total, s.radix);
    if (!top_p.cut.keep_all) total = top_p.kept_mass;
    const double scale = 1.0 / total;
    for_each_kept(
        V, top_p.cut, [&](int i) { return __float_as_uint(y[i]); },
        [&](int i, bool kept) { y[i] = kept ? static_cast<float>(y[i] * scale) : 0.0f; }, s.radix);
  } else {
    const double scale = 1.0 / total;
    for (int i = threadIdx.x; i < V; i += kThreads) y[i] = static_cast<float>(y[i] * scale);
  }
  if (p.min_p > 0.0f) {
    __syncthreads();  // every thread's writes of y before apply_min_p reads them
    apply_min_p(y, V, p.min_p, s);
  }
}

}  // namespace

size_t standardize_workspace_bytes(int rows, int V) {
  (void)rows;
  (void)V;
  return 0;  // radix select works in shared memory: nothing to sort
}

void standardize(const float* logits, int rows, int V, const SamplingParams* params,
                 float* probs, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  (void)workspace;  // see standardize_workspace_bytes
  (void)workspace_bytes;
  if (rows <= 0 || V <= 0) return;
  standardize_kernel<<<rows, kThreads, 0, stream>>>(logits, V, params, probs);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::cuda
