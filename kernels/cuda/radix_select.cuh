// Top-k and top-p cuts of one row by radix select, one thread block per row.
// Internal to kernels/cuda/ (standardize.cu).
//
// Both cuts keep a prefix of the row in an order "key descending, ties to the
// lower index" (kernels/cpu/sampling.cpp's order), so neither needs the row
// sorted: it is enough to find the boundary key K and how many of the entries
// equal to K, lowest indices first, make it. Keys are 32-bit, found 8 bits at a
// time from the top: each pass histograms the digit of the entries that still
// match the prefix found so far, and one thread walks the 256 bins from the
// top to pick the bin holding the boundary. Four passes over the row, no
// workspace, no global writes; ties are then ranked by a block-wide prefix
// count in index order, only when the boundary splits them.
//
//   top-k: key = ordered_bits(logit); the boundary is the k-th largest key.
//   top-p: key = bits of the (positive) weight; the boundary is the entry at
//          which the mass, accumulated in key order, first reaches the
//          threshold. Bin masses are exact fixed-point sums (fixed_mass.cuh),
//          so the cut is the same on every run.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cub/block/block_scan.cuh>

#include "kernels/cuda/fixed_mass.cuh"
#include "kernels/cuda/sampling_device.cuh"

namespace tandem::cuda::sampling {

using BlockScanI32 = cub::BlockScan<int, kThreads>;

// Which entries a cut keeps: every entry with key > key, and of the `ties`
// entries whose key equals `key` the `ties_kept` with the lowest indices. Or
// simply all of them (keep_all).
struct Cut {
  uint32_t key;
  int ties_kept;
  int ties;
  bool keep_all;
};

struct RadixStorage {
  int count[256];
  FixedMass mass[256];
  BlockScanI32::TempStorage scan;
  int digit;       // the bin holding the boundary, chosen by thread 0
  int remaining;   // top-k: entries still to keep from that bin on
  int ties;        // entries in the chosen bin (after the last pass: equal to the boundary)
  int ties_kept;   // top-p: how many of those ties are kept
  bool none;       // top-p: no bin reached the threshold
  double kept_mass;
};

// Adds `in` lanes' digits to the histogram with one atomic per distinct digit
// in the warp: neighbouring logits share their top digits, and one atomic per
// lane would serialize on those few bins. Every lane of the warp must call it.
__device__ inline void count_digit(int* count, uint32_t digit, bool in) {
  const unsigned lanes = __match_any_sync(0xffffffffu, in ? digit : 256u);
  if (in && static_cast<int>(threadIdx.x & 31u) == __ffs(static_cast<int>(lanes)) - 1) {
    atomicAdd(&count[digit], __popc(lanes));
  }
}

// The k largest entries of logit row x (V) by ordered_bits, ties to the lower
// index: cpu's top-k. Requires 0 < k < V.
__device__ inline Cut select_top_k(const float* x, int V, int k, RadixStorage& s) {
  uint32_t prefix = 0, mask = 0;
  int remaining = k;  // how many entries matching `prefix` are still to keep
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int d = threadIdx.x; d < 256; d += kThreads) s.count[d] = 0;
    __syncthreads();
    // Every lane runs every iteration (count_digit needs the whole warp).
    for (int base = 0; base < V; base += kThreads) {
      const int i = base + static_cast<int>(threadIdx.x);
      const uint32_t key = i < V ? ordered_bits(x[i]) : 0u;
      count_digit(s.count, (key >> shift) & 0xffu, i < V && (key & mask) == prefix);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      // The bins above d hold fewer than `remaining` entries, bin d completes
      // them: the k-th largest key has digit d.
      int d = 255;
      while (d > 0 && s.count[d] < remaining) remaining -= s.count[d--];
      s.digit = d;
      s.remaining = remaining;
      s.ties = s.count[d];
    }
    __syncthreads();
    prefix |= static_cast<uint32_t>(s.digit) << shift;
    mask |= 0xffu << shift;
    remaining = s.remaining;
  }
  // The next write to s.digit/remaining/ties comes after two more barriers
  // (in the next select), so every thread has read them by then.
  return Cut{prefix, remaining, s.ties, false};
}

// A top-p cut and the mass it keeps (meaningful unless cut.keep_all).
struct TopP {
  Cut cut;
  double kept_mass;
};

// Top-p over the positive entries of weight row w (V): the shortest prefix in
// (weight descending, index ascending) order whose mass reaches `threshold`,
// cpu's apply_top_p. If the whole row's mass stays below the threshold (only
// by rounding, top_p close to 1), everything is kept, as on the CPU. Weights
// are in [0, 1].
__device__ inline TopP select_top_p(const float* w, int V, double threshold, RadixStorage& s) {
  uint32_t prefix = 0, mask = 0;
  FixedMass above{};  // thread 0: mass of the entries whose key is above the prefix
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int d = threadIdx.x; d < 256; d += kThreads) {
      s.count[d] = 0;
      s.mass[d] = FixedMass{};
    }
    __syncthreads();
    for (int base = 0; base < V; base += kThreads) {
      const int i = base + static_cast<int>(threadIdx.x);
      const float v = i < V ? w[i] : 0.0f;
      const uint32_t key = __float_as_uint(v);  // monotone for v >= 0
      const bool in = v > 0.0f && (key & mask) == prefix;
      const uint32_t digit = (key >> shift) & 0xffu;
      count_digit(s.count, digit, in);
      if (in) atomic_add(&s.mass[digit], fixed_mass(v));
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      int d = 255;
      bool found = false;
      for (; d >= 0; --d) {
        if (s.count[d] == 0) continue;
        const FixedMass with = above + s.mass[d];
        if (to_double(with) >= threshold) {
          found = true;
          break;
        }
        above = with;
      }
      s.none = !found;
      s.digit = found ? d : 0;
      s.ties = found ? s.count[d] : 0;
    }
    __syncthreads();
    if (s.none) return TopP{Cut{0u, 0, 0, true}, 0.0};
    prefix |= static_cast<uint32_t>(s.digit) << shift;
    mask |= 0xffu << shift;
  }
  if (threadIdx.x == 0) {
    // Entries equal to the boundary weigh the same, so the smallest m with
    // above + m * weight >= threshold is found by bisection; m = ties
    // qualifies (that is how the last bin was chosen).
    const FixedMass weight = fixed_mass(__uint_as_float(prefix));
    int lo = 1, hi = s.ties;
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      if (to_double(above + times(weight, static_cast<unsigned>(mid))) >= threshold) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    s.ties_kept = lo;
    s.kept_mass = to_double(above + times(weight, static_cast<unsigned>(lo)));
  }
  __syncthreads();
  return TopP{Cut{prefix, s.ties_kept, s.ties, false}, s.kept_mass};
}

// Calls visit(i, kept) once for every i in [0, V), each from one thread, where
// kept says whether `cut` keeps entry i; key_of(i) is the entry's key. Only a
// boundary that splits its ties pays for ranking them: a block-wide prefix
// count of the ties in index order, kThreads entries at a time. Every thread
// must call it; it ends with the block synchronized.
template <typename KeyOf, typename Visit>
__device__ void for_each_kept(int V, const Cut& cut, KeyOf key_of, Visit visit, RadixStorage& s) {
  if (cut.keep_all || cut.ties_kept == cut.ties) {
    for (int i = threadIdx.x; i < V; i += kThreads) visit(i, cut.keep_all || key_of(i) >= cut.key);
    __syncthreads();
    return;
  }
  int seen = 0;  // ties before this chunk
  for (int base = 0; base < V; base += kThreads) {
    const int i = base + static_cast<int>(threadIdx.x);
    const uint32_t key = i < V ? key_of(i) : 0u;
    const int tie = i < V && key == cut.key ? 1 : 0;
    int rank = 0, chunk_ties = 0;
    BlockScanI32(s.scan).ExclusiveSum(tie, rank, chunk_ties);
    if (i < V) visit(i, key > cut.key || (tie == 1 && seen + rank < cut.ties_kept));
    seen += chunk_ties;
    __syncthreads();  // the scan storage is reused by the next chunk
  }
}

}  // namespace tandem::cuda::sampling
