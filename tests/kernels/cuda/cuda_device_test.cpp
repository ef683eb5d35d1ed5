// The CUDA build path: compiled whenever nvcc is present; on a machine with no
// GPU the test reports "skipped: no CUDA device" instead of passing silently.
// Plumbing only: it names each device the build sees (the log's first line
// of the GPU checks) and compares no number.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#ifdef TANDEM_HAVE_CUDA
#include "kernels/cuda/device_info.h"
#endif

namespace tandem {

TEST(CudaDevicePlumbing, DescribesEachDevice) {
#ifdef TANDEM_HAVE_CUDA
  const int count = cuda::device_count();
  if (count == 0) GTEST_SKIP() << "skipped: no CUDA device";
  for (int i = 0; i < count; ++i) {
    const std::string description = cuda::device_description(i);
    std::printf("CUDA device %d: %s\n", i, description.c_str());
    EXPECT_NE(description.find("sm_"), std::string::npos) << description;
  }
#else
  GTEST_SKIP() << "skipped: built without CUDA (no nvcc found)";
#endif
}

}  // namespace tandem
