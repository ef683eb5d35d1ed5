#include "kernels/device_rows.h"

#include <string>

#include "common/error.h"

namespace tandem {

DeviceRows::DeviceRows(Backend& backend, std::shared_ptr<const Buffer> storage, size_t offset,
                       size_t count)
    : backend_(&backend), storage_(std::move(storage)), offset_(offset), count_(count) {
  require(storage_ != nullptr && offset + count <= storage_->size(), ErrorKind::internal, [&] {
    return "DeviceRows of floats " + std::to_string(offset) + ".." + std::to_string(offset + count) +
           " over a buffer of " + std::to_string(storage_ ? storage_->size() : 0);
  });
}

DeviceRows DeviceRows::from_host(Backend& backend, std::span<const float> host) {
  if (host.empty()) return {};
  auto storage = std::make_shared<Buffer>(backend.allocate(host.size()));
  backend.upload(host, storage->data());
  return DeviceRows(backend, std::move(storage), 0, host.size());
}

DeviceRows DeviceRows::slice(size_t offset, size_t count) const {
  require(offset + count <= count_, ErrorKind::internal, [&] {
    return "slice " + std::to_string(offset) + ".." + std::to_string(offset + count) +
           " of " + std::to_string(count_) + " floats";
  });
  if (count == 0) return {};
  return DeviceRows(*backend_, storage_, offset_ + offset, count);
}

std::vector<float> DeviceRows::to_host() const {
  std::vector<float> host(count_);
  if (count_ > 0) backend_->download_finished(data(), host);
  return host;
}

std::shared_ptr<Buffer> RowsPool::acquire(size_t count) {
  // use_count() == 1: only the pool holds it. A reader letting go on
  // another thread at the same moment only makes us allocate anew.
  for (std::shared_ptr<Buffer>& buffer : buffers_)
    if (buffer.use_count() == 1 && buffer->size() >= count) return buffer;
  auto fresh = std::make_shared<Buffer>(backend_.allocate(count));
  if (buffers_.size() < kept_) {
    buffers_.push_back(fresh);
  } else {
    // Replace a buffer nobody holds (too small for this step) if there is one.
    for (std::shared_ptr<Buffer>& buffer : buffers_) {
      if (buffer.use_count() == 1) {
        buffer = fresh;
        break;
      }
    }
  }
  return fresh;
}

}  // namespace tandem
