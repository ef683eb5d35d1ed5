// exp of 8 floats at once, for the ops where exp is most of the work
// (attention's softmax, SwiGLU's sigmoid). glibc's expf is one call per
// value; a prefill of the tiny model spent a fifth of its time in it.
//
// The classic method: exp(x) = 2^n exp(r) with n = round(x / ln 2) and
// r = x - n ln 2 in [-ln 2 / 2, ln 2 / 2] (ln 2 in two parts, so r is
// exact), exp(r) by a degree-7 polynomial (1 + r + r^2 p(r), the
// coefficients of the Cephes library's expf), and 2^n put into the
// exponent bits. Within 1 ulp of the correctly rounded exp over the whole
// float range, subnormal results included (tests/kernels/vector_exp_test.cpp);
// exp(0) is exactly 1, -inf gives 0, +inf gives +inf and NaN gives NaN.
// Every lane is computed alone by the same operations, so a value's exp
// does not depend on its neighbours (batch invariance holds).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/matmul_lanes.h"

namespace tandem::cpu {

using Floats8 = matmul_lanes::Half;
using Ints8 = std::int32_t __attribute__((vector_size(8 * sizeof(std::int32_t))));

using matmul_lanes::splat;

inline Floats8 exp8(Floats8 x) {
  using matmul_lanes::multiply_add;
  // Past these bounds exp is 0 or infinity in float; clamped, n stays in
  // [-151, 129], where the two-step scaling below is exact until its last
  // multiply. NaN compares false both times and stays NaN.
  Floats8 c = x < splat(-104.0f) ? splat(-104.0f) : x;
  c = c > splat(89.0f) ? splat(89.0f) : c;

  // n = round(c log2 e): adding 1.5 * 2^23 leaves the integer part in the
  // low mantissa bits, rounded to nearest.
  constexpr float kRound = 12582912.0f;
  const Floats8 shifted = multiply_add(splat(kRound), c, splat(1.44269504088896341f));
  const Floats8 n = shifted - splat(kRound);
  // r = c - n ln 2, with ln 2 = 0.693359375 (exact in 9 bits) - 2.12194440e-4.
  Floats8 r = multiply_add(c, n, splat(-0.693359375f));
  r = multiply_add(r, n, splat(2.12194440e-4f));

  Floats8 p = splat(1.9875691500e-4f);
  p = multiply_add(splat(1.3981999507e-3f), p, r);
  p = multiply_add(splat(8.3334519073e-3f), p, r);
  p = multiply_add(splat(4.1665795894e-2f), p, r);
  p = multiply_add(splat(1.6666665459e-1f), p, r);
  p = multiply_add(splat(5.0000001201e-1f), p, r);
  const Floats8 exp_r = multiply_add(r, p, r * r) + splat(1.0f);

  // 2^n as two powers of two, 2^(n >> 1) and 2^(n - (n >> 1)), each a
  // normal float for every n above: the first product is exact, the second
  // rounds once (to a subnormal, zero or infinity where the result is one).
  Ints8 bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  const Ints8 n_int = bits - std::bit_cast<std::int32_t>(kRound);
  const Ints8 first = n_int >> 1;
  const Ints8 second_bits = (n_int - first + 127) << 23;
  const Ints8 first_bits = (first + 127) << 23;
  Floats8 scale_first, scale_second;
  std::memcpy(&scale_first, &first_bits, sizeof(scale_first));
  std::memcpy(&scale_second, &second_bits, sizeof(scale_second));
  return exp_r * scale_first * scale_second;
}

// 8 floats from p, of which only the first `count` (1 to 8) are read; the
// rest are `fill`. A whole 8 is one load (a copy of variable size would be
// a string move).
inline Floats8 load8_partial(const float* p, int count, float fill) {
  if (count == 8) return matmul_lanes::load_half(p);
  Floats8 v = splat(fill);
  std::memcpy(&v, p, static_cast<size_t>(count) * sizeof(float));
  return v;
}

inline void store8_partial(float* p, Floats8 v, int count) {
  if (count == 8) {
    std::memcpy(p, &v, sizeof(v));
  } else {
    std::memcpy(p, &v, static_cast<size_t>(count) * sizeof(float));
  }
}

}  // namespace tandem::cpu
