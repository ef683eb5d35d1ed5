// Backend::copy_from on the CUDA backend: rows written by one backend (the
// draft's) read by another (the target's) without leaving the GPUs: two
// backends on one device, on two devices where there are two, and from the
// CPU backend (through the host).
#include <gtest/gtest.h>

#include <vector>

#include "kernels/device_rows.h"
#include "tests/support/cuda_twin.h"

namespace tandem {
namespace {

std::vector<float> ramp(size_t n) {
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i) * 0.5f - 7.0f;
  return values;
}

void expect_copied(Backend& from, Backend& to) {
  const std::vector<float> host = ramp(100003);  // not a multiple of any vector width
  const DeviceRows rows = DeviceRows::from_host(from, host);
  Buffer into = to.allocate(host.size() - 3);
  to.copy_from(from, rows.data() + 3, host.size() - 3, into.data());
  EXPECT_EQ(testing::to_host(to, into.data(), host.size() - 3),
            std::vector<float>(host.begin() + 3, host.end()));
}

TEST(CudaCopyFrom, BetweenTwoBackendsOnOneDevice) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  std::unique_ptr<Backend> draft = testing::cuda_backend(), target = testing::cuda_backend();
  expect_copied(*draft, *target);
}

TEST(CudaCopyFrom, FromTheCpuBackend) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  std::unique_ptr<Backend> cpu = make_cpu_backend(), gpu = testing::cuda_backend();
  expect_copied(*cpu, *gpu);
}

TEST(CudaCopyFrom, BetweenTwoDevices) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  if (cuda_device_count() < 2) GTEST_SKIP() << "skipped: needs 2 CUDA devices";
  std::unique_ptr<Backend> draft = make_backend(BackendKind::cuda, 1);
  std::unique_ptr<Backend> target = make_backend(BackendKind::cuda, 0);
  expect_copied(*draft, *target);
}

}  // namespace
}  // namespace tandem
