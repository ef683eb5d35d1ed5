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

const void* MetadataStaging::find_recent(const void* host, size_t bytes) const {
  const size_t first = recent_.size() > kLookBack ? recent_.size() - kLookBack : 0;
  for (size_t i = recent_.size(); i-- > first;) {
    const Region& r = recent_[i];
    if (r.host == host && r.bytes == bytes && std::memcmp(pinned_ + r.offset, host, bytes) == 0)
      return device_ + r.offset;
  }
  return nullptr;
}

void MetadataStaging::make_room(size_t bytes, cudaStream_t stream) {
  const size_t need = aligned(bytes);
  if (used_ + need <= capacity_) return;
  // Whatever is queued may still read the ring: wait for it, then reuse
  // (or replace, when this one request does not fit at all).
  TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream));
  reset();
  if (need > capacity_) grow(need);
}

void MetadataStaging::grow(size_t need) {
  if (pinned_) TANDEM_CUDA_CHECK(cudaFreeHost(pinned_));
  if (device_) TANDEM_CUDA_CHECK(cudaFree(device_));
  pinned_ = device_ = nullptr;
  capacity_ = 0;
  const size_t size = std::max(kFirstRing, 2 * need);
  TANDEM_CUDA_CHECK(cudaMallocHost(&pinned_, size));
  TANDEM_CUDA_CHECK(cudaMalloc(&device_, size));
  capacity_ = size;
}

// The next region (room made by the caller), filled from host; *copy is
// the copy that brings it to the device.
const void* MetadataStaging::take_region(const void* host, size_t bytes, Copy* copy) {
  std::memcpy(pinned_ + used_, host, bytes);
  *copy = {device_ + used_, pinned_ + used_, bytes};
  recent_.push_back({host, used_, bytes});
  used_ += aligned(bytes);
  return copy->device;
}

const void* MetadataStaging::stage_bytes(const void* host, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return nullptr;
  if (const void* reused = find_recent(host, bytes)) return reused;
  make_room(bytes, stream);
  Copy copy;
  const void* staged = take_region(host, bytes, &copy);
  TANDEM_CUDA_CHECK(
      cudaMemcpyAsync(copy.device, copy.pinned, bytes, cudaMemcpyHostToDevice, stream));
  return staged;
}

bool MetadataStaging::stage_bytes_deferred(const void* host, size_t bytes, const void** device,
                                           Copy* copy) {
  *copy = Copy{};
  *device = nullptr;
  if (bytes == 0) return true;
  if (const void* reused = find_recent(host, bytes)) {
    *device = reused;
    return true;
  }
  if (used_ + aligned(bytes) > capacity_) {
    // Nothing staged since the last reset (which followed a synchronize):
    // nothing queued or recorded reads the ring, so it may be replaced now.
    if (used_ != 0) return false;
    grow(aligned(bytes));
  }
  *device = take_region(host, bytes, copy);
  return true;
}

}  // namespace tandem::cuda
