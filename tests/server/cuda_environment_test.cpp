// With TANDEM_TEST_BACKEND=cuda (ctest's server_tests_on_cuda_self_check_*)
// every server test runs its deployment on the GPU; on a machine without a
// CUDA device the whole suite reports "skipped: no CUDA device" rather than
// failing to start servers or passing without having run.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/backend.h"

namespace tandem {
namespace {

class CudaEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* backend = std::getenv("TANDEM_TEST_BACKEND");
    if (backend && std::string(backend) == "cuda" && cuda_device_count() == 0) {
      std::printf("skipped: no CUDA device\n");  // what ctest's SKIP_REGULAR_EXPRESSION reads
      GTEST_SKIP() << "skipped: no CUDA device";
    }
  }
};

[[maybe_unused]] ::testing::Environment* const kCudaEnvironment =
    ::testing::AddGlobalTestEnvironment(new CudaEnvironment);

}  // namespace
}  // namespace tandem
