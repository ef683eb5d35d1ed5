#include "kernels/cuda/device_staging.h"

#include <algorithm>

#include "kernels/cuda/cuda_check.h"

namespace tandem::cuda {
namespace {

constexpr size_t kAlignment = 256;       // cudaMalloc's own alignment
constexpr size_t kFirstRing = 1u << 20;  // 1 MiB: a large batch's block tables
// How many of the latest regions a stage() compares with: one layer's worth
// of metadata (ids, positions, slots, six attention arrays) and then some.
constexpr size_t kLookBack = 16;

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
  const size_t want = bytes + bytes / 2;
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
  const size_t first = recent_.size() > kLookBack ? recent_.size() - kLookBack : 0;
  for (size_t i = recent_.size(); i-- > first;) {
    const Region& r = recent_[i];
    if (r.bytes == bytes && std::memcmp(pinned_ + r.offset, host, bytes) == 0) return device_ + r.offset;
  }
  const size_t need = aligned(bytes);
  if (used_ + need > capacity_) {
    // Whatever is queued may still read the ring: wait for it, then reuse
    // (or replace, when this one request does not fit at all).
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream));
    reset();
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
  recent_.push_back({used_, bytes});
  used_ += need;
  return staged;
}

}  // namespace tandem::cuda
