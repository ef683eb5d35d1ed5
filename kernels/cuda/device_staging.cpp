#include "kernels/cuda/device_staging.h"

#include "kernels/cuda/cuda_check.h"

namespace tandem::cuda {

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

void MetadataStaging::queue(const Copy& copy, cudaStream_t stream) {
  TANDEM_CUDA_CHECK(
      cudaMemcpyAsync(copy.device, copy.host, copy.bytes, cudaMemcpyHostToDevice, stream));
}

StagingRing::Block MetadataStaging::PinnedAndDevice::allocate(size_t bytes) {
  StagingRing::Block block;
  TANDEM_CUDA_CHECK(cudaMallocHost(&block.host, bytes));
  const cudaError_t status = cudaMalloc(&block.device, bytes);
  if (status != cudaSuccess) cudaFreeHost(block.host);
  TANDEM_CUDA_CHECK(status);
  block.bytes = bytes;
  return block;
}

void MetadataStaging::PinnedAndDevice::release(const StagingRing::Block& block) {
  // Only after the stream was synchronized (StagingRing::reset) or at the
  // backend's end: nothing reads the block any more. Errors are ignored,
  // as in every release: at process exit the context may be gone.
  cudaFreeHost(block.host);
  cudaFree(block.device);
}

}  // namespace tandem::cuda
