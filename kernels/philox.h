// Philox4x32-10 and the uniforms every backend draws from it.
//
// Randomness in Tandem is counter-based (docs/design.md, "Rules every part keeps"):
// each uniform is a pure function of (session seed, absolute position,
// purpose), never the state of a generator. A seeded request therefore replays
// exactly whatever batch it shared, the TP degree, the backend, or how often
// the scheduler preempted and recomputed it.
//
// The core is Philox4x32 with 10 rounds exactly as Random123 defines it
// (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3",
// SC'11), checked against Random123's kat_vectors in
// tests/kernels/philox_test.cpp. The header is freestanding (no std::
// containers, no exceptions) so nvcc compiles the very same code for device
// kernels: TANDEM_HOST_DEVICE marks what runs on both sides.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define TANDEM_HOST_DEVICE __host__ __device__
#else
#define TANDEM_HOST_DEVICE
#endif

namespace tandem {

// ---- Philox4x32-10 (Random123's philox4x32_R with R = 10) -------------------

struct PhiloxCounter {
  uint32_t w[4];
};
struct PhiloxKey {
  uint32_t w[2];
};

// Random123's PHILOX_M4x32_0/1 (round multipliers) and PHILOX_W32_0/1 (Weyl
// key increments: golden ratio and sqrt(3)-1, as 32-bit fractions).
inline constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
inline constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
inline constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;
inline constexpr int kPhiloxRounds = 10;

// One Philox round: two 32x32->64 multiplies, their halves mixed with the
// other two words and the round key.
TANDEM_HOST_DEVICE constexpr PhiloxCounter philox_round(PhiloxCounter x, PhiloxKey k) {
  const uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * x.w[0];
  const uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * x.w[2];
  const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
  const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
  return PhiloxCounter{{hi1 ^ x.w[1] ^ k.w[0], lo1, hi0 ^ x.w[3] ^ k.w[1], lo0}};
}

// The block cipher: 10 rounds, the key bumped by the Weyl increments between
// rounds (9 bumps; wraps modulo 2^32).
TANDEM_HOST_DEVICE constexpr PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round > 0) {
      key.w[0] += kPhiloxW0;
      key.w[1] += kPhiloxW1;
    }
    counter = philox_round(counter, key);
  }
  return counter;
}

// ---- Tandem's uniforms -------------------------------------------------------

// Which random draw of Algorithm 1 (paper §2.3) a uniform feeds. The value is
// the third counter word, so the three draws at one position are independent
// streams. Values are part of the replay contract: never renumber them.
enum class RandomPurpose : uint32_t {
  // x_i ~ q_i: the draft model's sample of the token at position i.
  draft_sample = 1,
  // r_i ~ U(0,1): the accept/reject test of draft token x_i (accept iff
  // r_i < p_i(x_i) / q_i(x_i), strictly), at x_i's position.
  accept = 2,
  // t ~ p': the target's own token at the position after the accepted prefix,
  // drawn from p_{n+1} or from the residual norm(max(0, p_{n+1} - q_{n+1})).
  // Plain (non-speculative) decoding uses this purpose for every token too.
  target_sample = 3,
  // E_v ~ Exp(1): token v's clock in the Gumbel-max race at a position
  // (Coupling::gumbel, kernels/sampling_params.h). The fourth counter word is
  // v, so every token has its own clock; the draft and the target read the
  // same clocks, which is what couples them.
  gumbel_race = 4,
};

// 53 bits -> a double in [0, 1): the top 53 of the 64 bits hi:lo, scaled by
// 2^-53. Every value is exact; the largest is 1 - 2^-53 < 1.
TANDEM_HOST_DEVICE constexpr double philox_bits_to_uniform(uint32_t hi, uint32_t lo) {
  const uint64_t bits = ((static_cast<uint64_t>(hi) << 32) | lo) >> 11;
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);  // 2^-53
}

// The uniform for one draw. THE REPLAY CONTRACT every backend keeps, bit for
// bit, so that a seeded request gives the same tokens everywhere:
//
//   key     = { seed & 0xffffffff, seed >> 32 }
//   counter = { pos & 0xffffffff, pos >> 32, uint32_t(purpose), 0 }
//             where pos = uint64_t(position), the token's absolute position
//             in its sequence (0 = first prompt token), two's complement
//   out     = philox4x32_10(counter, key)
//   u       = philox_bits_to_uniform(out[0], out[1])
//           = ((out[0] << 32 | out[1]) >> 11) * 2^-53,  in [0, 1)
//
// out[2], out[3] and the fourth counter word are unused (reserved).
// A position is drawn from more than once per purpose only after every draw
// that could have influenced the kept output was committed: draws past the
// first rejected draft token are discarded with it, so reusing their position
// on the next step leaves the output distribution exact.
TANDEM_HOST_DEVICE constexpr double philox_uniform(uint64_t seed, int64_t position,
                                                   RandomPurpose purpose) {
  const uint64_t pos = static_cast<uint64_t>(position);
  const PhiloxKey key{{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  const PhiloxCounter counter{{static_cast<uint32_t>(pos), static_cast<uint32_t>(pos >> 32),
                               static_cast<uint32_t>(purpose), 0u}};
  const PhiloxCounter out = philox4x32_10(counter, key);
  return philox_bits_to_uniform(out.w[0], out.w[1]);
}

// ---- the Gumbel-max race (Coupling::gumbel) ----------------------------------

// Where a row's noise comes from: the session's seed and the absolute
// position of the token being drawn.
struct NoiseKey {
  uint64_t seed = 0;
  int64_t position = 0;
};

// Token v's clock at a position. THE GUMBEL CONTRACT every backend keeps:
//
//   counter = { pos & 0xffffffff, pos >> 32, uint32_t(gumbel_race), uint32_t(v) }
//   u       = philox_bits_to_uniform(out[0], out[1])   (key and out as above)
//   E_v     = -log1p(-u)                               in [0, 37.5], Exp(1)
//
// and the token drawn from a probability row p is
//
//   argmin over v with p(v) > 0 of  E_v / double(p(v)),  ties to the lowest v
//
// which is argmax_v (log p(v) + G_v) with G_v = -log E_v ~ Gumbel(0, 1): an
// exact sample of p (Gumbel 1954; the exponential race). log1p is the one
// operation not correctly rounded everywhere (CUDA's and glibc's agree to
// within an ulp), so two backends could disagree only where two tokens'
// E / p differ by less than an ulp.
//
// The u of token v's clock (E_v = -log1p(-u) is monotone in u).
TANDEM_HOST_DEVICE constexpr double philox_race_uniform(uint64_t seed, int64_t position,
                                                        int32_t token) {
  const uint64_t pos = static_cast<uint64_t>(position);
  const PhiloxKey key{{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
  const PhiloxCounter counter{{static_cast<uint32_t>(pos), static_cast<uint32_t>(pos >> 32),
                               static_cast<uint32_t>(RandomPurpose::gumbel_race),
                               static_cast<uint32_t>(token)}};
  const PhiloxCounter out = philox4x32_10(counter, key);
  return philox_bits_to_uniform(out.w[0], out.w[1]);
}
TANDEM_HOST_DEVICE inline double philox_exponential(uint64_t seed, int64_t position,
                                                    int32_t token) {
  return -log1p(-philox_race_uniform(seed, position, token));
}

}  // namespace tandem
