// The CUDA build path: compiled whenever nvcc is present; on a machine with no
// GPU the test reports "skipped: no CUDA device" instead of passing silently.
#include <gtest/gtest.h>

#ifdef TANDEM_HAVE_CUDA
#include "kernels/cuda/device_info.h"
#endif

namespace tandem {

TEST(CudaDevice, ReportsDevicesOrSkips) {
#ifdef TANDEM_HAVE_CUDA
  const int count = cuda::device_count();
  if (count == 0) GTEST_SKIP() << "skipped: no CUDA device";
  for (int i = 0; i < count; ++i) {
    const std::string description = cuda::device_description(i);
    EXPECT_NE(description.find("sm_"), std::string::npos) << description;
  }
#else
  GTEST_SKIP() << "skipped: built without CUDA (no nvcc found)";
#endif
}

}  // namespace tandem
