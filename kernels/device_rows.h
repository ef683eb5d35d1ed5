// DeviceRows: floats in one backend's memory (device memory on a GPU, host
// memory on the CPU backend), shared by whoever reads them.
//
// The draft's q rows travel as DeviceRows from the drafter to verification,
// so that on a GPU no probability row crosses the host: the drafter writes
// them once, a block of a pipelined proposal takes a slice of them, a
// verification in the same process reads them in place (or copies them
// device to device from another GPU), and a draft on its own rank sends
// them device to device (cluster/links/q_rows_link.h). Copying a
// DeviceRows copies a reference: the storage lives while any copy does.
//
// RowsPool hands out storage for such rows and takes it back when the last
// reader lets go, so a step's rows do not cost an allocation (on a GPU, a
// device synchronization) each time.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "kernels/backend.h"

namespace tandem {

class DeviceRows {
 public:
  DeviceRows() = default;
  // Floats offset..offset+count of `storage`, which `backend` made.
  DeviceRows(Backend& backend, std::shared_ptr<const Buffer> storage, size_t offset, size_t count);
  // A new buffer of `backend` holding host's floats (one upload).
  static DeviceRows from_host(Backend& backend, std::span<const float> host);

  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }  // floats
  const float* data() const { return storage_ ? storage_->data() + offset_ : nullptr; }
  // The backend whose memory holds them (nullptr when empty).
  Backend* backend() const { return backend_; }
  // Floats offset..offset+count of these: Error(internal) past the end.
  DeviceRows slice(size_t offset, size_t count) const;
  // Whether these start where `before` ends, in the same buffer.
  bool follows(const DeviceRows& before) const {
    return storage_ != nullptr && storage_ == before.storage_ &&
           offset_ == before.offset_ + before.count_;
  }
  // The floats on the host (one download; a copy on the CPU backend). The
  // rows must be finished (as a drafter's are once propose() returned); the
  // call is then safe while another thread uses their backend.
  std::vector<float> to_host() const;

 private:
  Backend* backend_ = nullptr;
  std::shared_ptr<const Buffer> storage_;
  size_t offset_ = 0;
  size_t count_ = 0;
};

// Storage for rows, reused once every DeviceRows over it is gone. Safe to
// use from one thread while other threads drop their DeviceRows.
class RowsPool {
 public:
  // Buffers of `backend`; at most `kept` are kept for reuse, the others
  // are freed with their last reader.
  explicit RowsPool(Backend& backend, size_t kept = 4) : backend_(backend), kept_(kept) {}
  Backend& backend() const { return backend_; }
  // A buffer of at least `count` floats that nobody else holds. Its
  // contents are whatever was there.
  std::shared_ptr<Buffer> acquire(size_t count);

 private:
  Backend& backend_;
  size_t kept_;
  std::vector<std::shared_ptr<Buffer>> buffers_;
};

}  // namespace tandem
