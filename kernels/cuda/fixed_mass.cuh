// Exact, order-independent sums of probability weights on the device: 128-bit
// unsigned fixed point with 96 fraction bits. Internal to kernels/cuda/.
//
// Why: top-p (radix_select.cuh) sums weights per histogram bin with shared
// memory atomics, whose order changes from run to run. A double sum would
// then differ in its last bits between runs, and so could the top-p cut: the
// same seeded request would not replay. Integer addition is associative, so
// these sums are the same bits whatever the order.
//
// Range: a weight w is in [0, 1] (exp of a non-positive number, or the 0/1 of
// the infinite cases), so w * 2^96 <= 2^96 and V < 2^31 of them stay below
// 2^127. Weights below 2^-96 lose bits below 2^-96 each (at most 2^-65 over
// a row, whose total is >= 1): far below double precision.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::cuda::sampling {

// No default member initializers: the type lives in __shared__ arrays, which
// cannot have constructors. Value-initialize ({}) for zero.
struct FixedMass {
  unsigned long long lo;  // bits 0..63 (2^-96 .. 2^-33)
  unsigned long long hi;  // bits 64..127 (2^-32 .. 2^31)
};

// w (finite, 0 <= w <= 1) as fixed point, truncated below 2^-96.
__device__ inline FixedMass fixed_mass(float w) {
  const uint32_t bits = __float_as_uint(w);
  int exponent = static_cast<int>(bits >> 23);  // biased; sign is 0
  unsigned long long mantissa = bits & 0x7fffffu;
  if (exponent == 0) {
    exponent = 1;  // subnormal: no implicit bit, scale of exponent 1
  } else {
    mantissa |= 0x800000u;
  }
  // w = mantissa * 2^(exponent - 150), so w * 2^96 = mantissa * 2^(exponent - 54).
  const int shift = exponent - 54;
  FixedMass m{};
  if (mantissa == 0) return m;
  if (shift >= 64) {
    m.hi = mantissa << (shift - 64);
  } else if (shift > 0) {
    m.lo = mantissa << shift;
    m.hi = mantissa >> (64 - shift);
  } else if (shift > -64) {
    m.lo = mantissa >> -shift;
  }
  return m;
}

__device__ inline FixedMass operator+(FixedMass a, FixedMass b) {
  FixedMass sum{};
  sum.lo = a.lo + b.lo;
  sum.hi = a.hi + b.hi + (sum.lo < a.lo ? 1u : 0u);  // carry out of the low word
  return sum;
}

// a * count (count < 2^31, a <= 2^96: no overflow).
__device__ inline FixedMass times(FixedMass a, unsigned count) {
  FixedMass product{};
  product.lo = a.lo * count;
  product.hi = a.hi * count + __umul64hi(a.lo, count);
  return product;
}

// The nearest double, up to one extra rounding (relative error < 2^-52).
__device__ inline double to_double(FixedMass a) {
  return (static_cast<double>(a.hi) * 0x1p64 + static_cast<double>(a.lo)) * 0x1p-96;
}

// *target += value, atomically per word. The carry out of the low word is
// detected by the one addition that wraps it, so the final 128-bit total is
// exact whatever the order of the additions.
__device__ inline void atomic_add(FixedMass* target, FixedMass value) {
  const unsigned long long old = atomicAdd(&target->lo, value.lo);
  const unsigned long long carry = old + value.lo < old ? 1u : 0u;
  if (value.hi + carry != 0) atomicAdd(&target->hi, value.hi + carry);
}

}  // namespace tandem::cuda::sampling
