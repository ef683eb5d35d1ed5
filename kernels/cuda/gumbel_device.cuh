// The Gumbel-max race on the GPU (Coupling::gumbel): one thread block draws
// one row's token, the device side of kernels/philox.h's Gumbel contract.
// Shared by gumbel.cu (plain draws) and verify.cu (gumbel blocks). Internal
// to kernels/cuda/; nvcc only.
//
// Each thread runs the race over its share of the row (tokens threadIdx.x,
// + kThreads, ...): E_v = philox_exponential(seed, position, v), the very
// function cpu::gumbel_row calls, divided by double(p(v)) for p(v) > 0 and
// finite. One block-wide reduction then picks the least (ratio, v) pair.
// The pairs are totally ordered (ratio first, then the lower v), so the
// winner is the CPU's argmin whatever order the reduction combines them in.
//
// Bit-exactness: the Philox bits, the uniform and the division are exact or
// correctly rounded on both sides; log1p is not (CUDA's and glibc's are each
// within an ulp of the true value, not necessarily equal), so E_v can differ
// by an ulp between the CPU and the GPU. The tokens then differ only where
// two tokens' E/p lie within about an ulp (~1e-16 relative) of each other: a
// chance of the order of 1e-16 per pair of near contenders, so the twin tests
// (tests/kernels/cuda/gumbel_twin_test.cpp) require every token to match.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cub/block/block_reduce.cuh>

#include "kernels/cuda/sampling_device.cuh"
#include "kernels/philox.h"

namespace tandem::cuda::sampling {

// Token `index` with its ratio E/p; index -1 is "no contender yet".
struct GumbelCandidate {
  double ratio;
  int index;
};

// The earlier finisher of two: the smaller ratio, ties to the lower index,
// and any contender before none. Ratios are never NaN (E is finite and >= 0,
// p positive and finite).
struct EarlierFinisher {
  __device__ GumbelCandidate operator()(const GumbelCandidate& a,
                                        const GumbelCandidate& b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    if (a.ratio != b.ratio) return a.ratio < b.ratio ? a : b;
    return a.index < b.index ? a : b;
  }
};

using BlockReduceGumbel = cub::BlockReduce<GumbelCandidate, kThreads>;

struct GumbelStorage {
  BlockReduceGumbel::TempStorage temp;
  int winner;
};

// cpu::gumbel_row(p, V, seed, position) for the calling block: the token, or
// -1 if the row has no positive finite entry. Every thread gets the result.
__device__ inline int block_gumbel(const float* p, int V, uint64_t seed, int64_t position,
                                   GumbelStorage& s) {
  GumbelCandidate best{0.0, -1};
  for (int v = threadIdx.x; v < V; v += kThreads) {
    const float pv = p[v];
    if (!(pv > 0.0f) || !isfinite(pv)) continue;  // NaN, zeros and negatives never win
    const double ratio = philox_exponential(seed, position, v) / static_cast<double>(pv);
    if (best.index < 0 || ratio < best.ratio) best = GumbelCandidate{ratio, v};  // v rises
  }
  const GumbelCandidate winner = BlockReduceGumbel(s.temp).Reduce(best, EarlierFinisher{});
  return share(winner.index, s.winner);
}

}  // namespace tandem::cuda::sampling
