// StreamEvent: Backend::Event on CUDA, an event recorded on the backend's
// stream after every op queued so far; wait() blocks the host until they
// have finished (Backend::record_event).
#pragma once

#include <cuda_runtime.h>

#include "kernels/backend.h"
#include "kernels/cuda/cuda_check.h"

namespace tandem::cuda {

class StreamEvent final : public Backend::Event {
 public:
  explicit StreamEvent(cudaStream_t stream) {
    TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    const cudaError_t status = cudaEventRecord(event_, stream);
    if (status != cudaSuccess) cudaEventDestroy(event_);
    TANDEM_CUDA_CHECK(status);
  }
  StreamEvent(const StreamEvent&) = delete;
  StreamEvent& operator=(const StreamEvent&) = delete;
  ~StreamEvent() override { cudaEventDestroy(event_); }
  void wait() override { TANDEM_CUDA_CHECK(cudaEventSynchronize(event_)); }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace tandem::cuda
