// CPU reference of batched speculative verification (Algorithm 1 of
// Leviathan et al. 2023, with Appendix A.5's lenience); the definitions and
// the bit-exact contract are in kernels/cpu/verify.h.
#include "kernels/cpu/verify.h"
#include "kernels/cpu/thread_pool.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/sampling.h"
#include "kernels/philox.h"

namespace tandem::cpu {
namespace {

// Below this many row entries in a call (sum over blocks of (γ+1) V), thread
// start-up costs more than the work: one block of a 32k vocabulary with γ = 1
// is 64k entries, a few tens of microseconds.
constexpr size_t kParallelWork = size_t{1} << 16;

// A number as a person would write it (std::to_string prints 1e-9 as 0.000000).
std::string show(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

std::string field(size_t b, const char* name) {
  return "blocks[" + std::to_string(b) + "]." + name;
}

// Row j (0-based) of a (rows, V) buffer.
inline const float* row(const float* rows, int j, int V) {
  return rows + static_cast<size_t>(j) * static_cast<size_t>(V);
}

// ---- argument checks -------------------------------------------------------------
// Checked with `if` and a throw rather than require(): the messages format
// floats, and building one per draft token on the success path would cost
// more than verifying the token.

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorKind::invalid_argument, message);
}

}  // namespace

void check_verify_block(const VerifyBlock& block, size_t b, int V, bool q_rows_on_host) {
  if (block.gamma < 0) {
    invalid(field(b, "gamma") + " must be >= 0, got " + std::to_string(block.gamma) +
            "; use 0 for plain decoding");
  }
  if (block.p == nullptr) {
    invalid(field(b, "p") + " must not be null: pass the target's (gamma+1, V) standardized rows");
  }
  if (block.gamma > 0 && block.drafted == nullptr) {
    invalid(field(b, "drafted") + " must not be null when gamma = " + std::to_string(block.gamma) +
            " > 0");
  }
  if (!(block.lenience > 0.0f && block.lenience <= 1.0f)) {  // NaN fails too
    invalid(field(b, "lenience") + " must be in (0, 1], got " + show(block.lenience) +
            "; use 1 for lossless verification");
  }
  if (block.coupling == Coupling::gumbel && block.lenience != 1.0f) {
    invalid(field(b, "lenience") + " must be 1 with the gumbel coupling, got " +
            show(block.lenience) + "; lenient verification is Algorithm 1's (rejection)");
  }
  if (block.coupling != Coupling::rejection && block.coupling != Coupling::gumbel) {
    invalid(field(b, "coupling") + " must be rejection or gumbel, got " +
            std::to_string(static_cast<int>(block.coupling)));
  }
  if (block.first_position < 0 ||
      block.first_position > std::numeric_limits<int64_t>::max() - block.gamma) {
    invalid(field(b, "first_position") + " must be a position >= 0, got " +
            std::to_string(block.first_position));
  }
  for (int j = 0; j < block.gamma; ++j) {
    const int32_t x = block.drafted[j];
    if (x < 0 || x >= V) {
      invalid(field(b, "drafted") + "[" + std::to_string(j) + "] = " + std::to_string(x) +
              " is not a token id in [0, V = " + std::to_string(V) + ")");
    }
    // x_j ~ q_j, so q_j(x_j) > 0. Anything else means the q rows are not the
    // ones the draft sampled from, and Appendix A.1's guarantee would not hold.
    if (q_rows_on_host && block.q != nullptr && block.coupling == Coupling::rejection &&
        !(row(block.q, j, V)[x] > 0.0f)) {
      invalid(field(b, "q") + " row " + std::to_string(j) + " gives drafted token " +
              std::to_string(x) + " probability " + show(row(block.q, j, V)[x]) +
              "; pass the rows the draft sampled its tokens from");
    }
  }
}

namespace {

// ---- one block ---------------------------------------------------------------

// Algorithm 1's test of draft token x_{j+1} (0-based j): keep it iff
// r < p(x) / (l q(x)) (Appendix A.5 multiplies q by l). r is in [0, 1), so
// l q(x) <= p(x) always keeps x and p(x) = 0 never does. l q(x) > 0: both
// were checked at the boundary. The division is correctly rounded, so
// p >= l q gives a ratio >= 1 exactly.
bool accepts(const VerifyBlock& block, int j, int V) {
  const int32_t x = block.drafted[j];
  const double p = row(block.p, j, V)[x];
  const double q = block.q != nullptr ? static_cast<double>(row(block.q, j, V)[x]) : 1.0;
  const double r = philox_uniform(block.seed, block.first_position + j, RandomPurpose::accept);
  return r < p / (static_cast<double>(block.lenience) * q);
}

// beta_j = sum_x min(p_j(x)/l, q_j(x)): the chance x_j ~ q_j is accepted
// (Definition 3.1; Theorem 3.5 for l = 1, Appendix A.5 in general). Summed
// in double over independent lanes, which lets the compiler vectorize: a
// statistic, not part of the replay contract, so the summation order is free.
float acceptance_probability(const VerifyBlock& block, int j, int V) {
  const double inv_l = 1.0 / static_cast<double>(block.lenience);
  const float* p = row(block.p, j, V);
  if (block.q == nullptr) return static_cast<float>(std::min(1.0, p[block.drafted[j]] * inv_l));
  const float* q = row(block.q, j, V);
  constexpr int kLanes = 8;
  double lanes[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= V; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) {
      lanes[k] += std::min(p[i + k] * inv_l, static_cast<double>(q[i + k]));
    }
  }
  double total = 0.0;
  for (; i < V; ++i) total += std::min(p[i] * inv_l, static_cast<double>(q[i]));
  for (double lane : lanes) total += lane;
  return static_cast<float>(total);
}

// cpu::sample_row draws from a row iff its positive entries have a positive
// finite sum (in double), else it throws. For float entries that is exactly
// "the largest entry is positive and finite": a sum of at most 2^31 finite
// floats stays finite in double. A max vectorizes where the sum (a serial
// chain) does not; checking first keeps exceptions out of the parallel region.
bool drawable(float largest) { return largest > 0.0f && std::isfinite(largest); }
float largest_entry(const float* probs, int V) {
  constexpr int kLanes = 16;  // independent lanes: vectorizes without -ffast-math
  float lanes[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= V; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) lanes[k] = probs[i + k] > lanes[k] ? probs[i + k] : lanes[k];
  }
  float m = 0.0f;
  for (; i < V; ++i) m = probs[i] > m ? probs[i] : m;  // NaN never wins
  for (float lane : lanes) m = lane > m ? lane : m;
  return m;
}

// residual (V) = max(0, p_{j+1} - l q_{j+1}) (0-based j), each entry formed in
// double and rounded once to float (NaN becomes 0); returns its largest entry.
float write_residual(const VerifyBlock& block, int j, int V, float* residual) {
  const double l = block.lenience;
  const float* p = row(block.p, j, V);
  if (block.q == nullptr) {
    // q one-hot at x: p - l * 0 = p exactly everywhere else, so this is bit
    // for bit the residual of the explicit one-hot row.
    for (int i = 0; i < V; ++i) residual[i] = p[i] > 0.0f ? p[i] : 0.0f;
    const int32_t x = block.drafted[j];
    const double d = static_cast<double>(p[x]) - l;
    residual[x] = d > 0.0 ? static_cast<float>(d) : 0.0f;
    return largest_entry(residual, V);
  }
  // l q is exact in double (two 24-bit significands), so the one rounding is
  // the subtraction's, with or without FMA contraction: every backend agrees.
  const float* q = row(block.q, j, V);
  for (int i = 0; i < V; ++i) {
    // Rounding to float before the clamp gives the same value as after it
    // (0 and the negatives round to <= 0) and lets the loop vectorize.
    const float d = static_cast<float>(static_cast<double>(p[i]) - l * static_cast<double>(q[i]));
    residual[i] = d > 0.0f ? d : 0.0f;
  }
  return largest_entry(residual, V);
}

struct BlockResult {
  VerifyOutcome outcome;
  int bad_row = -1;  // a p row (0-based) that had to be sampled and had no mass
};

// The gumbel coupling on one block: the target's own token at each position
// is its Gumbel-max draw t_j; x_j is kept while x_j == t_j, and the first
// t_j that differs (or t_{γ+1}) is emitted, so the output is what plain
// decoding with the same seed emits. beta_j = 1 if x_j == t_j else 0, for
// every j: each compares two draws from the same prefix and the same noise,
// so its mean is the coupling's acceptance rate.
BlockResult verify_gumbel_block(const VerifyBlock& block, int V, float* beta) {
  BlockResult result;
  int n = -1;  // the first position whose draft is not the target's token
  for (int j = 0; j <= block.gamma; ++j) {
    if (n >= 0 && (beta == nullptr || j == block.gamma)) break;  // only β left to fill
    const int32_t t = gumbel_row(row(block.p, j, V), V, block.seed, block.first_position + j);
    if (t < 0 && n < 0) {  // a row that must be drawn from has no positive finite entry
      result.bad_row = j;
      return result;
    }
    const bool kept = j < block.gamma && block.drafted[j] == t;
    if (beta != nullptr && j < block.gamma) beta[j] = kept ? 1.0f : 0.0f;
    if (n < 0 && !kept) {
      n = j;
      result.outcome = VerifyOutcome{n, t};
    }
  }
  return result;
}

// Algorithm 1 on one block. beta: (γ) or null; residual: (V) scratch.
BlockResult verify_block(const VerifyBlock& block, int V, float* beta, float* residual) {
  if (block.coupling == Coupling::gumbel) return verify_gumbel_block(block, V, beta);
  if (beta != nullptr) {
    for (int j = 0; j < block.gamma; ++j) beta[j] = acceptance_probability(block, j, V);
  }
  int n = 0;
  while (n < block.gamma && accepts(block, n, V)) ++n;
  // The token at position first_position + n: one uniform, whichever row it
  // is drawn from, so the draw is a pure function of (seed, position).
  const double u =
      philox_uniform(block.seed, block.first_position + n, RandomPurpose::target_sample);
  BlockResult result;
  result.outcome.accepted = n;
  if (n < block.gamma) {
    // x_{n+1} was rejected: draw from the residual (Appendix A.1 shows the
    // accepted mass min(p, q) plus the rejected mass times the normalized
    // residual is exactly p). A zero residual is only reachable by rounding
    // (see verify.h), and then p is the right row.
    const float largest = write_residual(block, n, V, residual);
    if (drawable(largest)) {
      result.outcome.token = sample_row(residual, V, u);
      return result;
    }
    if (largest > 0.0f) {  // infinite: p itself is not a probability row
      result.bad_row = n;
      return result;
    }
  }
  const float* p = row(block.p, n, V);
  if (!drawable(largest_entry(p, V))) {
    result.bad_row = n;
    return result;
  }
  result.outcome.token = sample_row(p, V, u);
  return result;
}

}  // namespace

void verify(std::span<const VerifyBlock> blocks, int V, std::span<VerifyOutcome> out,
            std::span<float> beta) {
  require(V > 0, ErrorKind::invalid_argument,
          "V (vocabulary size) must be > 0, got " + std::to_string(V) +
              "; pass the model's vocab_size");
  require(out.size() == blocks.size(), ErrorKind::invalid_argument,
          "out must hold one VerifyOutcome per block (" + std::to_string(blocks.size()) +
              "), got " + std::to_string(out.size()));
  // Check everything first, so a bad block leaves out and beta untouched.
  // beta_offset[b]: where block b's beta entries start.
  std::vector<size_t> beta_offset(blocks.size() + 1, 0);
  size_t work = 0;
  bool any_draft = false;
  for (size_t b = 0; b < blocks.size(); ++b) {
    check_verify_block(blocks[b], b, V, /*q_rows_on_host=*/true);
    beta_offset[b + 1] = beta_offset[b] + static_cast<size_t>(blocks[b].gamma);
    work += static_cast<size_t>(blocks[b].gamma + 1) * static_cast<size_t>(V);
    any_draft = any_draft || blocks[b].gamma > 0;
  }
  require(beta.empty() || beta.size() == beta_offset.back(), ErrorKind::invalid_argument,
          "beta must be empty or hold one entry per draft token (sum of gamma = " +
              std::to_string(beta_offset.back()) + "), got " + std::to_string(beta.size()));
  if (blocks.empty()) return;

  // Results are staged and copied out only when every block succeeded, so
  // a bad p row found mid-way changes nothing either.
  const int blocks_n = static_cast<int>(blocks.size());
  const bool parallel = blocks_n > 1 && work >= kParallelWork;
  std::vector<BlockResult> staged(blocks.size());
  std::vector<float> staged_beta(beta.size());
  parallel_ranges(blocks_n, parallel, [&](int64_t begin, int64_t end) {
    // One (V) residual scratch per chunk of blocks.
    std::vector<float> scratch(any_draft ? static_cast<size_t>(V) : 0);
    float* residual = any_draft ? scratch.data() : nullptr;
    for (int64_t b = begin; b < end; ++b) {
      float* block_beta = beta.empty() ? nullptr : staged_beta.data() + beta_offset[b];
      staged[b] = verify_block(blocks[b], V, block_beta, residual);
    }
  });
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (staged[b].bad_row >= 0) {
      invalid(field(b, "p") + " row " + std::to_string(staged[b].bad_row) +
              " has no positive finite mass; pass standardized rows (cpu::standardize)");
    }
  }
  for (size_t b = 0; b < blocks.size(); ++b) out[b] = staged[b].outcome;
  std::copy(staged_beta.begin(), staged_beta.end(), beta.begin());
}

void verify_greedy(std::span<const GreedyBlock> blocks, std::span<VerifyOutcome> out) {
  require(out.size() == blocks.size(), ErrorKind::invalid_argument,
          "out must hold one VerifyOutcome per block (" + std::to_string(blocks.size()) +
              "), got " + std::to_string(out.size()));
  for (size_t b = 0; b < blocks.size(); ++b) {
    const GreedyBlock& block = blocks[b];
    if (block.gamma < 0) {
      invalid(field(b, "gamma") + " must be >= 0, got " + std::to_string(block.gamma) +
              "; use 0 for plain decoding");
    }
    if (block.target_argmax == nullptr) {
      invalid(field(b, "target_argmax") + " must not be null: pass the target's gamma+1 argmaxes");
    }
    if (block.gamma > 0 && block.drafted == nullptr) {
      invalid(field(b, "drafted") +
              " must not be null when gamma = " + std::to_string(block.gamma) + " > 0");
    }
  }
  // O(γ) per block: threads would cost more than they save.
  for (size_t b = 0; b < blocks.size(); ++b) {
    const GreedyBlock& block = blocks[b];
    int n = 0;
    while (n < block.gamma && block.drafted[n] == block.target_argmax[n]) ++n;
    out[b] = VerifyOutcome{n, block.target_argmax[n]};
  }
}

}  // namespace tandem::cpu
