#include "kernels/cuda/device_staging.h"

#include <algorithm>

#include "kernels/cuda/cuda_check.h"

namespace tandem::cuda {
namespace {

constexpr size_t kAlignment = 256;       // cudaMalloc's own alignment
constexpr size_t kFirstRing = 1u << 20;  // 1 MiB: a large batch's block tables

size_t aligned(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

DeviceScratch::~DeviceScratch() {
  if (data_) cudaFree(data_);
}

void* DeviceScratch::get(size_t bytes, cudaStream_t stream) {
  if (bytes <= bytes_) return data_;
  if (data_) {
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream));
    TANDEM_CUDA_CHECK(cudaFree(data_));
    data_ = nullptr;
    bytes_ = 0;
  }
  // Grow by half again as much, so a slowly rising batch does not reallocate
  // every step.
  const size_t want = std::max(bytes, bytes + bytes / 2);
  TANDEM_CUDA_CHECK(cudaMalloc(&data_, want));
  bytes_ = want;
  return data_;
}

MetadataStaging::~MetadataStaging() {
  if (pinned_) cudaFreeHost(pinned_);
  if (device_) cudaFree(device_);
}

const void* MetadataStaging::stage_bytes(const void* host, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return nullptr;
  const size_t need = aligned(bytes);
  if (used_ + need > capacity_) {
    // Whatever is queued may still read the ring: wait for it, then reuse
    // (or replace, when this one request does not fit at all).
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream));
    used_ = 0;
    if (need > capacity_) {
      if (pinned_) TANDEM_CUDA_CHECK(cudaFreeHost(pinned_));
      if (device_) TANDEM_CUDA_CHECK(cudaFree(device_));
      pinned_ = device_ = nullptr;
      capacity_ = 0;
      const size_t size = std::max(kFirstRing, 2 * need);
      TANDEM_CUDA_CHECK(cudaMallocHost(&pinned_, size));
      TANDEM_CUDA_CHECK(cudaMalloc(&device_, size));
      capacity_ = size;
    }
  }
  std::memcpy(pinned_ + used_, host, bytes);
  TANDEM_CUDA_CHECK(
      cudaMemcpyAsync(device_ + used_, pinned_ + used_, bytes, cudaMemcpyHostToDevice, stream));
  const void* staged = device_ + used_;
  used_ += need;
  return staged;
}

}  // namespace tandem::cuda
