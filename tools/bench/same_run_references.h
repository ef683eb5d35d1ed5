// References `tandem-bench forward` measures in its own run, so that its
// figures can be judged on any host: what this machine's memory streams,
// and what OpenBLAS's sgemm does on the model's own prefill shapes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "workers/model_config.h"

namespace tandem::bench {

// The largest cache of cpu0 in bytes (Linux's sysfs, else the C library;
// 32 MiB where neither says).
size_t last_level_cache_bytes();

// GB/s of a plain multi-threaded streaming read (the kernels' thread pool, each
// summing its contiguous share with several vector accumulators) over a
// buffer of `bytes`, best of `rounds` passes. The roofline a decode step,
// which must read every weight once, can approach.
class StreamRead {
 public:
  explicit StreamRead(size_t bytes);
  double gigabytes_per_second(int rounds);

 private:
  std::vector<float> buffer_;
  volatile float checksum_ = 0;
};

// One prefill projection of the model as the forward pass issues it: one or
// more matmuls x (T, Kin) · w (N, Kin)ᵀ.
struct ProjectionShape {
  std::string name;
  std::vector<std::pair<int, int>> calls;  // (Kin, N) each
  bool one_op = false;  // one op over the calls' stacked weights and one x (the same Kin)
};
std::vector<ProjectionShape> prefill_projections(const ModelConfig& config);

// Median seconds of our matmul and of cblas_sgemm over `repeats`
// alternating rounds, on random inputs of one projection's shapes.
struct MatmulPair {
  double ours_seconds = 0;
  double blas_seconds = 0;
};
MatmulPair time_projection(const ProjectionShape& shape, int T, int repeats);

}  // namespace tandem::bench
