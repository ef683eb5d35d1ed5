// Device memory the CUDA backend reuses from op to op: grow-only scratch
// buffers, and the staging ring that carries small host metadata (token ids,
// positions, slots, block tables, sampling parameters) to the device.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>
#include <span>
#include <vector>

namespace tandem::cuda {

// A device allocation that only grows; its contents do not survive growing.
class DeviceScratch {
 public:
  DeviceScratch() = default;
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  ~DeviceScratch();
  // At least `bytes` bytes. Growing frees the old block after `stream`
  // finishes with it (the caller's stream is the only user).
  void* get(size_t bytes, cudaStream_t stream);
  size_t size() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Host metadata → device, through pinned memory so that the copies are
// asynchronous and ordered on the stream with the kernels that read them.
// Each stage() takes the next free region of a ring; regions are reused only
// after the stream has been synchronized (reset()), so no copy still in
// flight is overwritten. A full ring synchronizes and starts over.
// A forward pass stages the same arrays again and again (every layer's
// RoPE, KV write and attention see the same positions, slots and block
// tables): bytes equal to one of the last few staged since the last reset
// are not copied again, their device copy is returned.
class MetadataStaging {
 public:
  MetadataStaging() = default;
  MetadataStaging(const MetadataStaging&) = delete;
  MetadataStaging& operator=(const MetadataStaging&) = delete;
  ~MetadataStaging();

  template <typename T>
  const T* stage(std::span<const T> host, cudaStream_t stream) {
    return static_cast<const T*>(stage_bytes(host.data(), host.size_bytes(), stream));
  }
  // The stream has been synchronized: every region is free again.
  void reset() {
    used_ = 0;
    recent_.clear();
  }

 private:
  const void* stage_bytes(const void* host, size_t bytes, cudaStream_t stream);

  struct Region {
    size_t offset = 0;
    size_t bytes = 0;
  };
  char* pinned_ = nullptr;
  char* device_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
  std::vector<Region> recent_;  // staged since the last reset, oldest first
};

}  // namespace tandem::cuda
