// cpu::sample_row on the device, one thread block per row: the first index i
// with row[i] > 0 whose cumulative positive mass exceeds u * total. Internal
// to kernels/cuda/ (sample.cu, verify.cu).
//
// The row is given by a functor entry(i) -> float, so verify.cu can sample its
// residual max(0, p - l q) as it computes it, with no scratch row.
//
// Rounding: the CPU sums in double, one entry after another in index order.
// Here the cumulative sums are a block-wide prefix sum in double (each thread
// adds its kItems consecutive entries in order, a scan adds the threads'
// subtotals), so they may differ from the CPU's in the last bits (relative
// ~1e-16 of the row's mass). A token can therefore differ from the CPU's only
// when u * total lands within that distance of a CDF boundary: for a uniform
// u, a chance of about 1e-16 per boundary. The sums are deterministic (fixed
// order for a fixed block size): the same row and u give the same token on
// every run.
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cub/block/block_exchange.cuh>
#include <cub/block/block_scan.cuh>

#include "kernels/cuda/sampling_device.cuh"

namespace tandem::cuda::sampling {

inline constexpr int kItems = 8;  // consecutive entries per thread per chunk

using BlockExchangeF32 = cub::BlockExchange<float, kThreads, kItems>;
using BlockScanF64 = cub::BlockScan<double, kThreads>;

struct CdfStorage {
  BlockExchangeF32::TempStorage exchange;
  BlockScanF64::TempStorage scan;
};

// The shared memory of a kernel that measures a row's mass and draws from
// it (sample.cu; verify.cu adds its own fields).
struct DrawStorage {
  ReduceStorage reduce;
  CdfStorage cdf;
};

// What sample_row checks before it draws.
struct RowMass {
  double total;       // sum of the positive entries (+inf ones included), in double
  float largest;      // largest entry, or 0 if none is positive (NaN never wins)
  int last_positive;  // highest index with a positive entry, or -1
};

template <typename Entry>
__device__ RowMass row_mass(Entry entry, int V, ReduceStorage& s) {
  double total = 0.0;
  float largest = 0.0f;
  int last = -1;
  for (int i = threadIdx.x; i < V; i += kThreads) {
    const float v = entry(i);
    if (v > 0.0f) {
      total += v;
      largest = v > largest ? v : largest;
      last = i;  // i only grows in this thread
    }
  }
  RowMass mass;
  mass.total = block_sum(total, s);
  mass.largest = block_max(largest, s);
  mass.last_positive = block_max(last, s);
  return mass;
}

// sample_row can draw from the row: positive finite mass. For float entries
// that is "the largest entry is positive and finite" (V < 2^31 finite floats
// cannot overflow a double sum), the form cpu::verify checks.
__device__ inline bool drawable(const RowMass& mass) {
  return mass.largest > 0.0f && isfinite(mass.largest);
}

// The index sample_row(row, V, u) returns, for a drawable row (`mass` from
// row_mass). Every thread must call it; every thread gets the index.
template <typename Entry>
__device__ int inverse_cdf(Entry entry, int V, const RowMass& mass, double u, CdfStorage& cdf,
                           ReduceStorage& s) {
  const double target = u * mass.total;
  constexpr int kChunk = kThreads * kItems;
  double before_chunk = 0.0;  // positive mass of the chunks already scanned
  for (int base = 0; base < V; base += kChunk) {
    // Coalesced loads (striped), then each thread takes kItems consecutive
    // entries (blocked), so the sums below run in index order.
    float v[kItems];
    for (int k = 0; k < kItems; ++k) {
      const int i = base + k * kThreads + static_cast<int>(threadIdx.x);
      v[k] = i < V ? entry(i) : 0.0f;
    }
    BlockExchangeF32(cdf.exchange).StripedToBlocked(v);
    double mine = 0.0;
    for (int k = 0; k < kItems; ++k) mine += v[k] > 0.0f ? v[k] : 0.0f;
    double before = 0.0, chunk_mass = 0.0;
    BlockScanF64(cdf.scan).ExclusiveSum(mine, before, chunk_mass);
    // This thread's first crossing, if any. Each thread's running sum only
    // grows, so the smallest crossing index over the block is the answer.
    const int first = base + static_cast<int>(threadIdx.x) * kItems;
    int found = INT_MAX;
    double cum = before_chunk + before;
    for (int k = 0; k < kItems; ++k) {
      if (v[k] > 0.0f) {
        cum += v[k];
        if (cum > target) {
          found = first + k;
          break;
        }
      }
    }
    found = block_min(found, s);  // its barriers also free cdf for the next chunk
    if (found != INT_MAX) return found;
    before_chunk += chunk_mass;
  }
  // Reached only if rounding left the scanned mass below u * total (u within
  // ~1e-16 of 1): like the CPU, never hand out a zero-probability entry.
  return mass.last_positive;
}

}  // namespace tandem::cuda::sampling
