// Device memory the CUDA backend reuses from op to op: grow-only scratch
// buffers, and the staging ring that carries small host metadata (token ids,
// positions, slots, block tables, sampling parameters) to the device.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <span>

#include "kernels/staging_ring.h"

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
// The layout is StagingRing's (kernels/staging_ring.h): a staged address
// keeps its bytes until reset(), which the backend calls once its stream
// has been synchronized; a full block gives way to a bigger one rather
// than being reused under an op that has staged only part of its arrays.
class MetadataStaging {
 public:
  using Copy = StagingRing::Copy;

  MetadataStaging() = default;
  MetadataStaging(const MetadataStaging&) = delete;
  MetadataStaging& operator=(const MetadataStaging&) = delete;

  // Staged, and its copy queued on `stream`.
  template <typename T>
  const T* stage(std::span<const T> host, cudaStream_t stream) {
    Copy copy;
    const void* device = ring_.stage(host.data(), host.size_bytes(), &copy);
    if (copy.bytes > 0) queue(copy, stream);
    return static_cast<const T*>(device);
  }
  // Staged, but the copy is left to the caller (*copy: what to queue,
  // before whatever reads the result; a step graph records it).
  template <typename T>
  const T* stage_deferred(std::span<const T> host, Copy* copy) {
    return static_cast<const T*>(ring_.stage(host.data(), host.size_bytes(), copy));
  }
  static void queue(const Copy& copy, cudaStream_t stream);
  // The stream has been synchronized: every region is free again.
  void reset() { ring_.reset(); }

 private:
  // Pinned host memory and device memory for the ring's blocks.
  class PinnedAndDevice final : public StagingRing::Memory {
   public:
    StagingRing::Block allocate(size_t bytes) override;
    void release(const StagingRing::Block& block) override;
  };
  PinnedAndDevice memory_;  // declared before ring_: outlives it
  StagingRing ring_{memory_};
};

}  // namespace tandem::cuda
