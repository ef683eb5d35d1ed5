// What a deployment may name and this build has: backend names and whether
// CUDA is there. Apart from backend.cpp (which makes backends, and so needs
// every op) so that the config checks link without the kernels themselves.
#include "kernels/backend.h"

#ifdef TANDEM_HAVE_CUDA
#include "kernels/cuda/device_info.h"
#endif

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

int cuda_device_count() {
#ifdef TANDEM_HAVE_CUDA
  return cuda::device_count();
#else
  return 0;
#endif
}

bool cuda_backend_built() {
#ifdef TANDEM_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace tandem
