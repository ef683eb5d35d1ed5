// Sampling on the GPU: the twins of kernels/cpu/sampling.h and
// kernels/cpu/verify.h, so that no probability row leaves the device.
// Device pointers throughout unless marked host; queued on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/philox.h"
#include "kernels/sampling_params.h"
#include "kernels/verify_types.h"

namespace tandem::cuda {

// Device workspace bytes standardize needs for (rows, V) (sorting for top-k /
// top-p); the caller provides at least this much. Currently 0 for every shape:
// top-k and top-p are found by radix select in shared memory
// (radix_select.cuh), so workspace may be null.
size_t standardize_workspace_bytes(int rows, int V);

// probs (rows, V) = the standardized logits (rows, V), cpu::standardize's
// definition; params (rows) one per row, already checked on the host. May
// alias (probs == logits).
// params is device memory holding exactly `rows` entries: a Backend call with
// one SamplingParams for all rows must repeat it per row before uploading.
// rows == 0 launches nothing.
void standardize(const float* logits, int rows, int V, const SamplingParams* params,
                 float* probs, void* workspace, size_t workspace_bytes, cudaStream_t stream);

// out (rows) = 1 where the row of x (rows, V) holds a NaN or an infinity, else 0.
void find_nonfinite_rows(const float* x, int rows, int V, uint8_t* out, cudaStream_t stream);

// out (rows) = argmax of each row; ties to the lowest index, NaN ranks as -inf.
void argmax(const float* logits, int rows, int V, int32_t* out, cudaStream_t stream);

// out (rows) = cpu::sample_row(probs row, V, uniforms[row]) for each row. A
// row with no positive finite mass gives -1 (the host turns it into an Error).
// uniforms (rows) and out (rows) are device memory. A uniform outside [0, 1)
// also gives -1; the host should check them first for a precise message.
void sample(const float* probs, int rows, int V, const double* uniforms, int32_t* out,
            cudaStream_t stream);

// out (rows) = cpu::gumbel_row(probs row, V, keys[row].seed, keys[row].position)
// for each row: the Gumbel-max race (gumbel_device.cuh), -1 for a row with no
// positive finite entry (the host turns it into an Error). keys (rows) and
// out (rows) are device memory.
void sample_gumbel(const float* probs, int rows, int V, const NoiseKey* keys, int32_t* out,
                   cudaStream_t stream);

// One block of Algorithm 1 as the device sees it (kernels/verify_types.h's
// VerifyBlock with device pointers).
struct DeviceVerifyBlock {
  int gamma = 0;
  const int32_t* drafted = nullptr;  // (γ) device
  const float* p = nullptr;          // (γ+1, V) device
  const float* q = nullptr;          // (γ, V) device, or nullptr: one-hot at drafted
  int64_t first_position = 0;
  uint64_t seed = 0;
  float lenience = 1.0f;
  int beta_offset = 0;  // this block's first entry in beta
  Coupling coupling = Coupling::rejection;  // gumbel: q is not read
};

// Codes a verification writes into VerifyOutcome::accepted when the block's
// rows break the contract cpu::verify checks (the host turns them into an
// Error naming the block): q_j(x_j) <= 0 (rejection blocks only), or nothing
// to draw the token from, with that p row's index (0-based) in token.
inline constexpr int kVerifyBadDraftProbability = -1;
inline constexpr int kVerifyNoMass = -2;

// out[b] = (n, t) of blocks[b], cpu::verify's definition with the same Philox
// uniforms (rejection) or the same Gumbel-max races (gumbel); blocks of both
// couplings may share a call. beta (Σγ, device) or nullptr: β_j per drafted
// position.
// blocks (count) and out (count) are device memory. The host checks what
// cpu::verify checks on the host side (γ >= 0, p non-null, drafted non-null
// when γ > 0, ids in [0, V), lenience, first_position) before launching; the
// kernel checks q_j(x_j) > 0 (and refuses out-of-range ids rather than read
// past a row). A block with an error code in out[b].accepted has no valid
// token and possibly unwritten beta entries: raise before using either.
void verify(const DeviceVerifyBlock* blocks, int count, int V, VerifyOutcome* out, float* beta,
            cudaStream_t stream);

}  // namespace tandem::cuda
