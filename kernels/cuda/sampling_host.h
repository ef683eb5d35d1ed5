// The host side of the CUDA sampling ops beyond a line or two: the argument
// checks made before anything is queued, the device view of verification
// blocks, and the Errors a kernel's error codes become, with the CPU twin's
// messages where the device knows as much. Kept apart from cuda_backend.cpp,
// which is the glue that calls them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cuda/sampling.h"
#include "kernels/philox.h"
#include "kernels/verify_types.h"

namespace tandem::cuda {

// cpu::sample_gumbel's argument checks, with its messages: V > 0 and one
// noise key per row.
void check_sample_gumbel(int rows, int V, std::span<const NoiseKey> keys);

// Throws cpu::sample_gumbel's Error for the first row the device drew -1 for
// (no positive finite entry); returns if there is none.
void raise_gumbel_failures(std::span<const int32_t> tokens);

// What cpu::verify checks on the host (cpu::check_verify_block without the q
// rows, which the kernel checks), and the sizes of out and beta. Returns the
// number of draft tokens, Σγ.
size_t check_verify(std::span<const VerifyBlock> blocks, int V, size_t out_size,
                    size_t beta_size);

// The device view of `blocks`; `drafted` (device) holds every block's drafted
// ids, block after block.
std::vector<DeviceVerifyBlock> device_verify_blocks(std::span<const VerifyBlock> blocks,
                                                    const int32_t* drafted);

// Throws the Error of the first block whose outcome carries an error code
// (sampling.h's kVerify*); returns if there is none.
void raise_verify_failures(std::span<const VerifyOutcome> outcomes);

}  // namespace tandem::cuda
