#include "kernels/backend.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/sampling.h"
#ifdef TANDEM_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace tandem {

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    dtype_ = std::exchange(other.dtype_, Dtype::f32);
    deleter_ = std::exchange(other.deleter_, nullptr);
  }
  return *this;
}

void Buffer::reset() {
  if (data_ && deleter_) deleter_(data_);
  data_ = nullptr;
  size_ = 0;
  dtype_ = Dtype::f32;
  deleter_ = nullptr;
}

Buffer Backend::upload_weights(std::span<const float> host) {
  require(weight_dtype() == Dtype::f32, ErrorKind::internal,
          "a backend storing narrow weights must override upload_weights");
  Buffer buffer = allocate(host.size());
  if (!host.empty()) upload(host, buffer.data());
  return buffer;
}

void Backend::matmul_parts(const float* x, WeightView w, const float* bias, int T, int Kin,
                           std::span<const MatmulOutput> outputs) {
  size_t first_row = 0;
  for (const MatmulOutput& out : outputs) {
    matmul(x, w.offset(first_row * static_cast<size_t>(Kin)), bias ? bias + first_row : nullptr, T, Kin,
           out.rows, out.y);
    first_row += static_cast<size_t>(out.rows);
  }
}

void Backend::copy_from(Backend& source, const float* from, size_t n, float* to) {
  if (n == 0) return;
  if (source.reads_host_memory()) return upload(std::span(from, n), to);
  std::vector<float> staged(n);
  source.download(from, staged);
  upload(staged, to);
}

void Backend::sample_gumbel(const float* probs, int rows, int V, std::span<const NoiseKey> keys,
                            int32_t* out) {
  std::vector<float> host(static_cast<size_t>(std::max(rows, 0)) * static_cast<size_t>(std::max(V, 0)));
  if (!host.empty()) download(probs, host);
  cpu::sample_gumbel(host.data(), rows, V, keys, out);
}

std::unique_ptr<Backend> make_backend(BackendKind kind, int device, Dtype weight_dtype) {
  if (kind == BackendKind::cpu) return make_cpu_backend(weight_dtype);
#ifdef TANDEM_HAVE_CUDA
  return make_cuda_backend(device, weight_dtype);
#else
  throw Error(ErrorKind::invalid_argument,
              "this build of tandem has no CUDA backend (nvcc was not found when it was "
              "built); rebuild on a machine with the CUDA toolkit, see docs/gpu.md");
#endif
}

}  // namespace tandem
