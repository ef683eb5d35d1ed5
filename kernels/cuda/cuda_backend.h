// The CUDA backend: the Backend interface on one GPU.
//
// Weights live in bf16 (or f16) and GEMMs run through cuBLAS with f32
// accumulation; activations, the KV cache and probability rows stay f32.
// Every op is queued on the backend's own stream; host metadata (token ids,
// positions, slots, block tables, sampling parameters) is staged through
// pinned memory; ops that return host results wait for them. Each op is
// checked against its CPU twin in tests/kernels/cuda/.
#pragma once

#include <memory>

#include "kernels/backend.h"

namespace tandem {

// A backend on GPU `device` storing weight matrices in weight_dtype (bf16 or
// f16; f32 is accepted too). Error(unavailable) naming the device when it
// cannot be used (no driver, no such device).
std::unique_ptr<Backend> make_cuda_backend(int device, Dtype weight_dtype);

}  // namespace tandem
