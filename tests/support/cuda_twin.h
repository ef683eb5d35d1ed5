// Testing a CUDA op against its CPU twin: a CUDA backend (or a skipped test
// when this machine has no device) and copies between host vectors and
// backend memory.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <span>
#include <vector>

#include "kernels/backend.h"

namespace tandem::testing {

// Skips the calling test (returns from it) unless a CUDA device can run it.
#define TANDEM_SKIP_WITHOUT_CUDA_DEVICE()                                   \
  do {                                                                      \
    if (::tandem::cuda_device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device"; \
  } while (0)

inline std::unique_ptr<Backend> cuda_backend(Dtype weight_dtype = Dtype::bf16) {
  return make_backend(BackendKind::cuda, /*device=*/0, weight_dtype);
}

// A fresh f32 buffer of `backend` holding `host`.
inline Buffer to_backend(Backend& backend, std::span<const float> host) {
  Buffer buffer = backend.allocate(host.size());
  if (!host.empty()) backend.upload(host, buffer.data());
  return buffer;
}

// `count` floats of backend memory at `data`, copied to the host.
inline std::vector<float> to_host(Backend& backend, const float* data, size_t count) {
  std::vector<float> host(count);
  backend.download(data, host);
  return host;
}

}  // namespace tandem::testing
