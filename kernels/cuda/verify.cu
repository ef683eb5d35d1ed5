// Speculative verification on the GPU (Algorithm 1, Appendix A.5's
// lenience): the twin of cpu::verify, whose header has the definitions and
// the bit-exact replay contract followed here. One thread block per
// verification block:
//   1. the contract: every drafted id is in [0, V) and q_j(x_j) > 0;
//   2. beta_j = Σ_x min(p_j(x)/l, q_j(x)) for every j (a block-wide double
//      sum; a statistic, so its summation order is free);
//   3. the accept loop, in thread 0: γ single-entry tests, no row pass;
//   4. the correction draw by inverse CDF (inverse_cdf.cuh) from the residual,
//      computed entry by entry as it is read (no scratch row), or from p.
// The accept tests are the CPU's exact double expressions on the same Philox
// uniforms, so n is bit-exact; the token is too except where inverse_cdf.cuh
// says (u within ~1e-16 of a CDF boundary).
// A gumbel block (Coupling::gumbel) takes steps 1 (ids only: q is not read)
// and then verify_gumbel: the target's Gumbel-max race at each position
// (gumbel_device.cuh), as cpu's verify_gumbel_block runs it.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gumbel_device.cuh"
#include "kernels/cuda/inverse_cdf.cuh"
#include "kernels/cuda/sampling.h"
#include "kernels/cuda/sampling_device.cuh"
#include "kernels/philox.h"

namespace tandem::cuda {
namespace {

using namespace sampling;

struct Storage : DrawStorage {
  GumbelStorage gumbel;
  int bad_draft;
  int accepted;
};

// Row j (0-based) of a (rows, V) buffer.
__device__ inline const float* row(const float* rows, int j, int V) {
  return rows + static_cast<size_t>(j) * static_cast<size_t>(V);
}

// The residual max(0, p - l q) of one position, entry by entry, as cpu's
// write_residual forms it: in double, rounded once to float, NaN to 0. l q of
// two floats is exact in double, so FMA contraction cannot change a bit. With
// q one-hot at `drafted` (q == nullptr) it is p with that entry lowered to
// max(0, p - l).
struct Residual {
  const float* p;
  const float* q;
  int drafted;
  double lenience;

  __device__ float operator()(int i) const {
    const float pi = p[i];
    if (q == nullptr) {
      if (i != drafted) return pi > 0.0f ? pi : 0.0f;
      const double d = static_cast<double>(pi) - lenience;
      return d > 0.0 ? static_cast<float>(d) : 0.0f;
    }
    const float d = static_cast<float>(static_cast<double>(pi) - lenience * static_cast<double>(q[i]));
    return d > 0.0f ? d : 0.0f;
  }
};

// Whether every drafted token could have been drawn from its q row (cpu's
// check_verify_block; a gumbel block's q is not read). Out-of-range ids are
// refused here too, so no read strays outside a row even if the host did not
// check them.
__device__ bool drafts_are_valid(const DeviceVerifyBlock& b, int V, Storage& s) {
  if (threadIdx.x == 0) s.bad_draft = 0;
  __syncthreads();
  for (int j = threadIdx.x; j < b.gamma; j += kThreads) {
    const int32_t x = b.drafted[j];
    const bool ok = x >= 0 && x < V &&
                    (b.coupling == Coupling::gumbel || b.q == nullptr || row(b.q, j, V)[x] > 0.0f);
    if (!ok) s.bad_draft = 1;  // every writer writes the same value
  }
  __syncthreads();
  return s.bad_draft == 0;
}

// beta_j for j = 0..γ-1 (0-based), cpu's acceptance_probability.
__device__ void write_beta(const DeviceVerifyBlock& b, int V, float* beta, Storage& s) {
  const double inv_l = 1.0 / static_cast<double>(b.lenience);
  for (int j = 0; j < b.gamma; ++j) {
    const float* p = row(b.p, j, V);
    float* out = beta + b.beta_offset + j;
    if (b.q == nullptr) {  // one-hot q: min(1, p(x)/l)
      if (threadIdx.x == 0) {
        const double ratio = p[b.drafted[j]] * inv_l;
        *out = static_cast<float>(ratio < 1.0 ? ratio : 1.0);
      }
      continue;
    }
    const float* q = row(b.q, j, V);
    double part = 0.0;
    for (int i = threadIdx.x; i < V; i += kThreads) {
      const double scaled_p = p[i] * inv_l;
      const double qi = q[i];
      part += qi < scaled_p ? qi : scaled_p;  // std::min(scaled_p, qi), NaN included
    }
    const double total = block_sum(part, s.reduce);
    if (threadIdx.x == 0) *out = static_cast<float>(total);
  }
}

// n: how many drafted tokens are kept. γ Philox draws and γ single-entry
// tests: one thread, the CPU's exact expression.
__device__ int accepted_count(const DeviceVerifyBlock& b, int V, Storage& s) {
  if (threadIdx.x == 0) {
    int n = 0;
    while (n < b.gamma) {
      const int32_t x = b.drafted[n];
      const double p = row(b.p, n, V)[x];
      const double q = b.q != nullptr ? static_cast<double>(row(b.q, n, V)[x]) : 1.0;
      const double r = philox_uniform(b.seed, b.first_position + n, RandomPurpose::accept);
      if (!(r < p / (static_cast<double>(b.lenience) * q))) break;
      ++n;
    }
    s.accepted = n;
  }
  __syncthreads();
  return s.accepted;
}

// The token at position first_position + n, or a negative error code
// (sampling.h's kVerifyNoMass). Every thread gets the result.
__device__ int32_t correction_token(const DeviceVerifyBlock& b, int n, int V, Storage& s) {
  // One uniform, whichever row the token comes from.
  const double u = philox_uniform(b.seed, b.first_position + n, RandomPurpose::target_sample);
  if (n < b.gamma) {
    const Residual residual{row(b.p, n, V), b.q != nullptr ? row(b.q, n, V) : nullptr,
                            b.drafted[n], static_cast<double>(b.lenience)};
    const RowMass mass = row_mass(residual, V, s.reduce);
    if (drawable(mass)) return inverse_cdf(residual, V, mass, u, s.cdf, s.reduce);
    if (mass.largest > 0.0f) return kVerifyNoMass;  // infinite: p is not a probability row
    // An all-zero residual is reachable only by rounding (p = q up to an ulp):
    // then p itself is the row to draw from, with the same u.
  }
  const auto p = [row_p = row(b.p, n, V)](int i) { return row_p[i]; };
  const RowMass mass = row_mass(p, V, s.reduce);
  if (!drawable(mass)) return kVerifyNoMass;
  return inverse_cdf(p, V, mass, u, s.cdf, s.reduce);
}

// A gumbel block, cpu's verify_gumbel_block: t_j = the target's Gumbel-max
// token of p_j at position first_position + j; x_j is kept while x_j == t_j,
// and the first t_j that differs (or t_{γ+1}) is the token. beta_j = 1 if
// x_j == t_j else 0 for every j, so with beta the races go on past n (a row
// there without mass just gives beta 0, as on the CPU). A row that had to be
// drawn from and has no mass gives (kVerifyNoMass, its index). Every thread
// returns the same outcome.
__device__ VerifyOutcome verify_gumbel(const DeviceVerifyBlock& b, int V, float* beta,
                                       Storage& s) {
  VerifyOutcome outcome;
  bool decided = false;
  for (int j = 0; j <= b.gamma; ++j) {
    if (decided && (beta == nullptr || j == b.gamma)) break;  // only beta left to fill
    const int32_t t = block_gumbel(row(b.p, j, V), V, b.seed, b.first_position + j, s.gumbel);
    if (t < 0 && !decided) return VerifyOutcome{kVerifyNoMass, j};
    const bool kept = j < b.gamma && b.drafted[j] == t;
    if (beta != nullptr && j < b.gamma && threadIdx.x == 0) {
      beta[b.beta_offset + j] = kept ? 1.0f : 0.0f;
    }
    if (!decided && !kept) {
      outcome = VerifyOutcome{j, t};
      decided = true;
    }
  }
  return outcome;
}

__global__ void __launch_bounds__(kThreads)
    verify_kernel(const DeviceVerifyBlock* blocks, int V, VerifyOutcome* out, float* beta) {
  __shared__ Storage s;
  const DeviceVerifyBlock b = blocks[blockIdx.x];
  VerifyOutcome outcome;
  if (!drafts_are_valid(b, V, s)) {
    outcome.accepted = kVerifyBadDraftProbability;
    if (threadIdx.x == 0) out[blockIdx.x] = outcome;
    return;
  }
  if (b.coupling == Coupling::gumbel) {  // the same for every thread of the block
    outcome = verify_gumbel(b, V, beta, s);
    if (threadIdx.x == 0) out[blockIdx.x] = outcome;
    return;
  }
  if (beta != nullptr) write_beta(b, V, beta, s);
  const int n = accepted_count(b, V, s);
  const int32_t token = correction_token(b, n, V, s);
  if (token < 0) {
    outcome.accepted = token;  // the error code
    outcome.token = n;         // and the p row without mass
  } else {
    outcome.accepted = n;
    outcome.token = token;
  }
  if (threadIdx.x == 0) out[blockIdx.x] = outcome;
}

}  // namespace

void verify(const DeviceVerifyBlock* blocks, int count, int V, VerifyOutcome* out, float* beta,
            cudaStream_t stream) {
  if (count <= 0 || V <= 0) return;
  verify_kernel<<<count, kThreads, 0, stream>>>(blocks, V, out, beta);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::cuda
