// CPU reference of standardization, argmax and inverse-CDF sampling; the
// definitions are in kernels/cpu/sampling.h.
#include "kernels/cpu/sampling.h"
#include "kernels/cpu/thread_pool.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace tandem::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- ordering ----------------------------------------------------------------
// Top-k and top-p order tokens by value, descending, ties to the lower index.
// Both pack (value, index) into one uint64 whose natural order is exactly
// that, so selection and sorting run on plain integers instead of an
// indirect comparator, several times faster on a 128k vocabulary.

// float -> uint32, monotone: a < b iff bits(a) < bits(b). NaN ranks as -inf
// and -0 as +0, so equal ranks are exactly the float ties.
inline uint32_t ordered_bits(float x) {
  if (std::isnan(x)) x = -kInf;
  if (x == 0.0f) x = 0.0f;
  const uint32_t b = std::bit_cast<uint32_t>(x);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
inline float from_ordered_bits(uint32_t b) {
  return std::bit_cast<float>((b & 0x80000000u) ? (b & 0x7fffffffu) : ~b);
}
// Larger key = larger value, then lower index (the low word is ~index).
inline uint64_t rank_key(float value, int32_t index) {
  return (static_cast<uint64_t>(ordered_bits(value)) << 32) | ~static_cast<uint32_t>(index);
}
inline int32_t key_index(uint64_t key) { return static_cast<int32_t>(~static_cast<uint32_t>(key)); }
inline float key_value(uint64_t key) { return from_ordered_bits(static_cast<uint32_t>(key >> 32)); }
constexpr std::greater<uint64_t> kDescending{};

// ---- row scans -----------------------------------------------------------------

// Largest non-NaN logit, or -inf if there is none. Independent lanes instead
// of one running max let the compiler vectorize without -ffast-math; a NaN
// never passes `>`, so it is skipped.
float row_max(const float* x, int V) {
  constexpr int kLanes = 16;
  float lanes[kLanes];
  std::fill(lanes, lanes + kLanes, -kInf);
  int i = 0;
  for (; i + kLanes <= V; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lanes[j] = x[i + j] > lanes[j] ? x[i + j] : lanes[j];
  }
  float m = -kInf;
  for (; i < V; ++i) m = x[i] > m ? x[i] : m;
  for (float lane : lanes) m = lane > m ? lane : m;
  return m;
}

// First index holding the row's max. NaN ranks as -inf, as in
// standardization: if nothing is above -inf, every entry ties and 0 wins.
int32_t argmax_row(const float* logits, int V) {
  const float m = row_max(logits, V);
  if (m == -kInf) return 0;
  int32_t i = 0;
  while (logits[i] != m) ++i;  // m is in the row: it came from it
  return i;
}

// exp of a scaled logit difference (<= 0 or NaN), in float. Below -200 the
// float result is 0 anyway; clamping keeps the double -> float conversion in
// range (out of range it would be undefined behaviour).
inline float exp_of(double scaled) {
  return std::exp(static_cast<float>(std::max(scaled, -200.0)));
}

// The softmax numerator exp((x - max) / T) of one logit. The max entry gets
// exactly 1, so a row's total is >= 1. The argument is formed in double, so
// neither inf - inf nor a denormal T can make a NaN; exp runs in float.
// Limits: if the max is +inf, the +inf entries share all the mass; if there
// is no finite logit, all are "equal" (uniform). A NaN logit weighs 0.
struct Weight {
  float max_logit;
  double inv_temperature;
  float operator()(float x) const {
    if (max_logit == kInf) return x == kInf ? 1.0f : 0.0f;
    if (max_logit == -kInf) return 1.0f;
    const float w = exp_of((static_cast<double>(x) - max_logit) * inv_temperature);
    return w >= 0.0f ? w : 0.0f;  // NaN -> 0
  }
};

// probs[i] = weight(logits[i]) for every i, returning the sum (double). probs
// may alias logits: element i is read before it is written.
double write_all_weights(const float* logits, int V, const Weight& weight, float* probs) {
  double total = 0.0;
  if (weight.max_logit == kInf || weight.max_logit == -kInf) {
    for (int i = 0; i < V; ++i) total += probs[i] = weight(logits[i]);
    return total;
  }
  for (int i = 0; i < V; ++i) {  // the hot loop: branch-free, no sort
    const float w =
        exp_of((static_cast<double>(logits[i]) - weight.max_logit) * weight.inv_temperature);
    probs[i] = w >= 0.0f ? w : 0.0f;
    total += probs[i];
  }
  return total;
}

// ---- top-k / top-p ---------------------------------------------------------------

// Top-k: writes the weights of the k largest logits (ties: lower index) and 0
// elsewhere; returns their sum. keys[0..k) are left holding the kept tokens.
// O(V) selection plus only k exps. The kept logits are read back from the
// keys, so probs may alias logits and be zeroed before they are weighed.
double write_top_k_weights(const float* logits, int V, int k, double inv_temperature, float* probs,
                           uint64_t* keys) {
  for (int i = 0; i < V; ++i) keys[i] = rank_key(logits[i], i);
  std::nth_element(keys, keys + k, keys + V, kDescending);
  uint64_t top = keys[0];
  for (int j = 1; j < k; ++j) top = std::max(top, keys[j]);
  const Weight weight{key_value(top), inv_temperature};
  std::fill(probs, probs + V, 0.0f);
  double total = 0.0;
  for (int j = 0; j < k; ++j) total += probs[key_index(keys[j])] = weight(key_value(keys[j]));
  return total;
}

// Top-p over the n candidate tokens whose indices keys[0..n) hold (the keys
// are rebuilt here from the probabilities): keeps the shortest
// probability-descending prefix whose mass reaches top_p of theirs, zeroes
// the rest, and returns the kept mass. The prefix is sorted
// chunk by chunk (select the next chunk, sort only it, 4x larger each time),
// so a peaked row costs O(n) and the worst case stays O(n log n).
double apply_top_p(float* probs, uint64_t* keys, int n, double top_p) {
  double mass = 0.0;
  for (int j = 0; j < n; ++j) {
    const int32_t i = key_index(keys[j]);
    keys[j] = rank_key(probs[i], i);
    mass += probs[i];
  }
  const double threshold = top_p * mass;
  double cum = 0.0;
  int keep = n;  // if rounding never lets cum reach the threshold: keep all
  int sorted = 0;
  int64_t chunk_end = std::min(n, 1024);
  while (keep == n && sorted < n) {
    if (chunk_end < n) std::nth_element(keys + sorted, keys + chunk_end, keys + n, kDescending);
    std::sort(keys + sorted, keys + chunk_end, kDescending);
    for (int j = sorted; j < chunk_end; ++j) {
      cum += probs[key_index(keys[j])];
      if (cum >= threshold) {
        keep = j + 1;
        break;
      }
    }
    sorted = static_cast<int>(chunk_end);
    chunk_end = std::min<int64_t>(n, chunk_end * 4);
  }
  for (int j = keep; j < n; ++j) probs[key_index(keys[j])] = 0.0f;
  return cum;
}

// Min-p over a normalized row: zeroes every p < min_p * max p and
// renormalizes (sum in double). The max entry always stays, so the kept
// mass is > 0.
void apply_min_p(float* probs, int V, float min_p) {
  float top = 0.0f;
  for (int i = 0; i < V; ++i) top = probs[i] > top ? probs[i] : top;
  const float threshold = min_p * top;
  double kept = 0.0;
  for (int i = 0; i < V; ++i) {
    if (probs[i] < threshold) probs[i] = 0.0f;
    kept += probs[i];
  }
  const double scale = 1.0 / kept;
  for (int i = 0; i < V; ++i) probs[i] = static_cast<float>(probs[i] * scale);
}

// standardize_row without the argument checks. keys: scratch of V entries,
// needed only when top-k or top-p is on (may be null otherwise).
void standardize_row_unchecked(const float* logits, int V, const SamplingParams& p, float* probs,
                               uint64_t* keys) {
  if (p.greedy()) {
    const int32_t best = argmax_row(logits, V);  // before probs overwrites logits
    std::fill(probs, probs + V, 0.0f);
    probs[best] = 1.0f;
    return;
  }
  const double inv_temperature = 1.0 / static_cast<double>(p.temperature);
  const bool top_k_on = p.top_k > 0 && p.top_k < V;
  const int kept = top_k_on ? p.top_k : V;
  double total = 0.0;
  if (top_k_on) {
    total = write_top_k_weights(logits, V, kept, inv_temperature, probs, keys);
  } else {
    total = write_all_weights(logits, V, Weight{row_max(logits, V), inv_temperature}, probs);
  }
  if (p.top_p < 1.0f) {
    if (!top_k_on) {  // every token is a candidate; apply_top_p adds the values
      for (int i = 0; i < V; ++i) keys[i] = rank_key(0.0f, i);
    }
    total = apply_top_p(probs, keys, kept, p.top_p);
  }
  const double scale = 1.0 / total;  // total >= 1: the max token weighs 1
  for (int i = 0; i < V; ++i) probs[i] = static_cast<float>(probs[i] * scale);
  if (p.min_p > 0.0f) apply_min_p(probs, V, p.min_p);
}

bool needs_keys(const SamplingParams& p, int V) {
  return !p.greedy() && ((p.top_k > 0 && p.top_k < V) || p.top_p < 1.0f);
}

// A number as a person would write it (std::to_string prints 1e-9 as 0.000000).
std::string show(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

void check_vocab(int V) {
  require(V > 0, ErrorKind::invalid_argument,
          "V (vocabulary size) must be > 0, got " + std::to_string(V) +
              "; pass the model's vocab_size");
}

}  // namespace

void check_sampling_params(const SamplingParams& p) {
  if (const std::optional<SamplingProblem> problem = find_sampling_problem(p))
    throw Error(ErrorKind::invalid_argument, problem->message);
}

void standardize_row(const float* logits, int V, const SamplingParams& p, float* probs) {
  check_vocab(V);
  check_sampling_params(p);
  require(logits != nullptr && probs != nullptr, ErrorKind::invalid_argument,
          "standardize_row: logits and probs must not be null");
  std::vector<uint64_t> keys(needs_keys(p, V) ? static_cast<size_t>(V) : 0);
  standardize_row_unchecked(logits, V, p, probs, keys.data());
}

void standardize(const float* logits, int rows, int V, std::span<const SamplingParams> params,
                 float* probs) {
  check_vocab(V);
  require(rows >= 0, ErrorKind::invalid_argument, "rows must be >= 0, got " + std::to_string(rows));
  require(params.size() == static_cast<size_t>(rows) || params.size() == 1,
          ErrorKind::invalid_argument,
          "params must hold one SamplingParams per row (" + std::to_string(rows) +
              ") or exactly one for all rows, got " + std::to_string(params.size()));
  if (rows == 0) return;
  require(logits != nullptr && probs != nullptr, ErrorKind::invalid_argument,
          "standardize: logits and probs must not be null");
  // Check every row first, so a bad entry leaves probs untouched (and no
  // exception is thrown inside the parallel region).
  bool any_keys = false;
  for (const SamplingParams& p : params) {
    check_sampling_params(p);
    any_keys = any_keys || needs_keys(p, V);
  }
  const bool shared = params.size() == 1;
  // A verification block (γ+1 rows of a small vocabulary) is less work than
  // waking the threads: as argmax below, rows run in parallel only past 2^16
  // values. Each row's result is its own either way.
  const bool parallel = rows > 1 && static_cast<size_t>(rows) * V >= (size_t{1} << 16);
  parallel_ranges(rows, parallel, [&](int64_t begin, int64_t end) {
    // One (V) key scratch per chunk of rows: a row's work is O(V) anyway.
    std::vector<uint64_t> scratch(any_keys ? static_cast<size_t>(V) : 0);
    uint64_t* keys = any_keys ? scratch.data() : nullptr;
    for (int64_t r = begin; r < end; ++r) {
      const size_t offset = static_cast<size_t>(r) * V;
      standardize_row_unchecked(logits + offset, V, params[shared ? 0 : static_cast<size_t>(r)],
                                probs + offset, keys);
    }
  });
}

void argmax(const float* logits, int rows, int V, int32_t* out) {
  check_vocab(V);
  require(rows >= 0, ErrorKind::invalid_argument, "rows must be >= 0, got " + std::to_string(rows));
  if (rows == 0) return;
  require(logits != nullptr && out != nullptr, ErrorKind::invalid_argument,
          "argmax: logits and out must not be null");
  parallel_for(rows, rows > 1 && static_cast<size_t>(rows) * V >= (size_t{1} << 16),
               [&](int64_t r) { out[r] = argmax_row(logits + static_cast<size_t>(r) * V, V); });
}

void find_nonfinite_rows(const float* x, int rows, int V, uint8_t* out) {
  check_vocab(V);
  require(rows >= 0, ErrorKind::invalid_argument, "rows must be >= 0, got " + std::to_string(rows));
  if (rows == 0) return;
  require(x != nullptr && out != nullptr, ErrorKind::invalid_argument,
          "find_nonfinite_rows: x and out must not be null");
  parallel_for(rows, rows > 1 && static_cast<size_t>(rows) * V >= (size_t{1} << 16), [&](int64_t r) {
    const float* row = x + static_cast<size_t>(r) * V;
    bool finite = true;
    // No early exit: the loop stays branch-free and vectorizes.
    for (int i = 0; i < V; ++i) finite &= std::isfinite(row[i]);
    out[r] = finite ? 0 : 1;
  });
}

int32_t sample_row(const float* probs, int V, double u) {
  check_vocab(V);
  require(probs != nullptr, ErrorKind::invalid_argument, "sample_row: probs must not be null");
  // Messages are built only on failure: this runs once per sampled token.
  require(u >= 0.0 && u < 1.0, ErrorKind::invalid_argument, [&] {
    return "u must be a uniform in [0, 1), got " + show(u) + "; draw it with philox_uniform";
  });
  double total = 0.0;
  for (int i = 0; i < V; ++i) {
    if (probs[i] > 0.0f) total += probs[i];  // skips zeros, negatives and NaN
  }
  require(total > 0.0 && std::isfinite(total), ErrorKind::invalid_argument, [&] {
    return "sample_row: the probability row has no positive finite mass (total " + show(total) +
           "); standardize the logits first";
  });
  const double target = u * total;
  double cum = 0.0;
  int32_t last_positive = 0;
  for (int i = 0; i < V; ++i) {
    if (!(probs[i] > 0.0f)) continue;
    cum += probs[i];
    last_positive = i;
    if (cum > target) return i;
  }
  // Not reached: cum ends at exactly total (same terms, same order) and
  // u * total < total for u < 1. Kept so that no rounding path could ever
  // hand out a zero-probability token.
  return last_positive;
}

}  // namespace tandem::cpu
