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
// tables): an array staged since the last reset from the same host address
// with the same bytes is not copied again, its device copy is returned.
// (The same address too, not only the same bytes, so that which copies are
// skipped depends on the caller's arrays and not on their values: a step
// graph's key includes it.)
class MetadataStaging {
 public:
  // A copy stage_deferred() left to its caller to queue.
  struct Copy {
    void* device = nullptr;
    const void* pinned = nullptr;
    size_t bytes = 0;  // 0: nothing to copy (empty, or a device copy reused)
  };

  MetadataStaging() = default;
  MetadataStaging(const MetadataStaging&) = delete;
  MetadataStaging& operator=(const MetadataStaging&) = delete;
  ~MetadataStaging();

  template <typename T>
  const T* stage(std::span<const T> host, cudaStream_t stream) {
    return static_cast<const T*>(stage_bytes(host.data(), host.size_bytes(), stream));
  }
  // The same, but the copy is not queued: *copy says what to queue, before
  // whatever reads the result. False, with nothing staged, when the ring is
  // full: what was staged must be copied and the stream synchronized first.
  template <typename T>
  bool stage_deferred(std::span<const T> host, const T** staged, Copy* copy) {
    const void* device = nullptr;
    if (!stage_bytes_deferred(host.data(), host.size_bytes(), &device, copy)) return false;
    *staged = static_cast<const T*>(device);
    return true;
  }
  // The stream has been synchronized: every region is free again.
  void reset() {
    used_ = 0;
    recent_.clear();
  }

 private:
  const void* stage_bytes(const void* host, size_t bytes, cudaStream_t stream);
  bool stage_bytes_deferred(const void* host, size_t bytes, const void** device, Copy* copy);
  const void* find_recent(const void* host, size_t bytes) const;
  void make_room(size_t bytes, cudaStream_t stream);
  void grow(size_t need);  // a new, empty ring of at least need bytes
  const void* take_region(const void* host, size_t bytes, Copy* copy);

  struct Region {
    const void* host = nullptr;
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
