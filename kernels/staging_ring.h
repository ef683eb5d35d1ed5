// StagingRing: where the CUDA backend lays out small host metadata (token
// ids, positions, slots, block tables, sampling parameters) before copying
// it to the device. The bookkeeping lives here, apart from CUDA, so that it
// is tested on any machine (tests/kernels/staging_ring_test.cpp with a fake
// Memory); kernels/cuda/device_staging.h gives it pinned and device memory.
//
// The rule a kernel relies on: an address stage() returned keeps its bytes,
// and its memory, until the next reset(). An op may stage several arrays
// (attention stages six) before its kernel reads any, so a full block is
// never reused or freed mid-way: a bigger one takes over, and the full one
// is retired until reset() says that everything queued has finished.
#pragma once

#include <cstddef>
#include <vector>

namespace tandem {

class StagingRing {
 public:
  // Host memory and device memory of the same size; bytes at offset i of
  // one are copied to offset i of the other.
  struct Block {
    char* host = nullptr;
    char* device = nullptr;
    size_t bytes = 0;
  };
  // Where blocks come from (on a GPU: cudaMallocHost and cudaMalloc).
  class Memory {
   public:
    virtual ~Memory() = default;
    virtual Block allocate(size_t bytes) = 0;
    virtual void release(const Block& block) = 0;
  };
  // The copy that brings one staged array to the device.
  struct Copy {
    void* device = nullptr;
    const void* host = nullptr;
    size_t bytes = 0;  // 0: nothing to copy (empty, or a device copy reused)
  };

  static constexpr size_t kFirstBlock = size_t{1} << 20;  // 1 MiB: a large batch's block tables

  explicit StagingRing(Memory& memory, size_t first_block = kFirstBlock)
      : memory_(memory), first_block_(first_block) {}
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;
  ~StagingRing();

  // host's `bytes` bytes, staged: the device address they will be at, and
  // in *copy the copy that brings them there (to be queued before anything
  // reads them). An array staged since the last reset() from the same host
  // address with the same bytes is not staged again: its device copy is
  // returned and *copy is empty. (The same address too, not only the same
  // bytes, so which copies are skipped depends on the caller's arrays and
  // not on their values: a step graph's key includes the addresses.)
  const void* stage(const void* host, size_t bytes, Copy* copy);
  // Every copy queued so far and every kernel reading staged memory has
  // finished (the stream was synchronized): regions are free again, and
  // retired blocks are released. The next stage() starts at the start of
  // the current block, so equal steps stage to equal addresses.
  void reset();

  size_t capacity() const { return current_.bytes; }  // the current block's
  size_t retired_blocks() const { return retired_.size(); }

 private:
  struct Region {
    const void* source = nullptr;  // the caller's host array
    const char* host = nullptr;    // its staged bytes
    void* device = nullptr;
    size_t bytes = 0;
  };
  const void* find_recent(const void* source, size_t bytes) const;
  // A block with room for `bytes` more: the current one, or a bigger one.
  void make_room(size_t bytes);

  Memory& memory_;
  size_t first_block_;
  Block current_;
  size_t used_ = 0;              // of current_
  std::vector<Block> retired_;   // full blocks still read by queued work
  std::vector<Region> recent_;   // staged since the last reset, oldest first
};

}  // namespace tandem
