#include "kernels/backend.h"

#include <utility>

namespace tandem {

const char* backend_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::cpu:
      return "cpu";
    case BackendKind::cuda:
      return "cuda";
  }
  return "unknown";
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    deleter_ = std::exchange(other.deleter_, nullptr);
  }
  return *this;
}

void Buffer::reset() {
  if (data_ && deleter_) deleter_(data_);
  data_ = nullptr;
  size_ = 0;
  deleter_ = nullptr;
}

}  // namespace tandem
