// CPU reference of the sampling ops: standardization (paper §2.2), argmax and
// inverse-CDF sampling. The CUDA backend is checked against these.
//
// Dimension glossary: V vocabulary size; rows = logit rows in the batch (for
// the target, T rows: γ+1 per verifying session).
//
// Standardization turns one logit row into the probability row that both the
// draft (q) and the target (p) sample from, so speculative sampling sees
// exactly the distribution the user asked for:
//   1. temperature: logits / T (T = 0 is greedy: a one-hot row at the argmax);
//   2. softmax, max-subtracted, summed in double;
//   3. top-k (k > 0 and k < V): keep the k largest logits; ties keep the lower
//      token index;
//   4. top-p (p < 1): order the kept tokens by probability, descending, ties
//      by lower index, and keep the shortest prefix whose mass reaches p of
//      the kept mass (cumsum >= p * kept mass; at least one token);
//   5. renormalize;
//   6. min-p (min_p > 0): keep the tokens with p >= min_p * max p, renormalize
//      again (vLLM's rule, after top-k and top-p). Removed tokens get exactly 0.
// Special logits: +inf entries share all the mass equally (the limit of
// softmax); a row with no finite or +inf entry is uniform (all logits equal);
// -inf entries get 0; a NaN logit is treated as -inf (never NaN out).
//
// Thread safety: all functions are pure (no shared state); rows of one
// standardize() call are processed in parallel (thread_pool.h).
#pragma once

#include <cstdint>
#include <span>

#include "kernels/philox.h"
#include "kernels/sampling_params.h"

namespace tandem::cpu {

// Throws tandem::Error(invalid_argument) naming the parameter unless
// temperature is finite and >= 0, top_k >= 0 and top_p is in (0, 1].
void check_sampling_params(const SamplingParams& p);

// logits (V) -> probs (V), which sums to 1 within 1e-6. probs may alias
// logits (in-place). Checks V > 0 and p.
void standardize_row(const float* logits, int V, const SamplingParams& p, float* probs);

// logits (rows, V) -> probs (rows, V); probs may alias logits.
// params: one entry per row (params.size() == rows), or exactly one entry
// used for every row. Everything is checked before anything is written, so a
// bad argument leaves probs untouched.
void standardize(const float* logits, int rows, int V, std::span<const SamplingParams> params,
                 float* probs);

// out (rows) = argmax of each row of logits (rows, V); ties go to the lowest
// index. NaN ranks as -inf (as in standardize), so it wins only in a row
// with nothing above -inf, where every entry ties and index 0 wins.
void argmax(const float* logits, int rows, int V, int32_t* out);

// out (rows) = 1 where the row of x (rows, V) holds a NaN or an infinity.
void find_nonfinite_rows(const float* x, int rows, int V, uint8_t* out);

// One token from probs (V) by inverse CDF in token-index order, with u in
// [0, 1): the first i with probs[i] > 0 and cumsum(probs[0..i]) > u * total,
// total = the row's positive mass (the row need not be normalized, which
// lets the caller pass the residual max(0, p - q) as is). Entries <= 0 or
// NaN are never returned for any u in [0, 1): the cumsum and the total add
// the same terms in the same order, so u -> 1 lands on the last positive
// entry, not on the zeros after it. Throws invalid_argument if V <= 0, u
// is outside [0, 1), or the row has no positive finite mass.
int32_t sample_row(const float* probs, int V, double u);

// One token from probs (V) by the Gumbel-max race of (seed, position)
// (kernels/philox.h, the Gumbel contract): argmin over probs[v] > 0 of
// philox_exponential(seed, position, v) / probs[v], ties to the lowest v.
// The row need not be normalized (scaling it scales every ratio alike).
// Entries <= 0 or NaN never win. Returns -1 if the row has no positive
// finite entry. (Kept in kernels/cpu/gumbel.cpp.)
int32_t gumbel_row(const float* probs, int V, uint64_t seed, int64_t position);

// out (rows) = gumbel_row of each row of probs (rows, V) with keys[r].
// Throws invalid_argument if V <= 0, keys.size() != rows, or a row has no
// positive finite entry (naming the row); nothing is written then.
void sample_gumbel(const float* probs, int rows, int V, std::span<const NoiseKey> keys,
                   int32_t* out);

}  // namespace tandem::cpu
