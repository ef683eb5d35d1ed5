// DeviceRows and RowsPool on the CPU backend: slices share their storage,
// the storage lives while any slice does, and the pool reuses a buffer only
// once nobody holds it. (Backend::copy_from between GPUs is in
// tests/kernels/cuda/copy_from_twin_test.cpp.)
#include "kernels/device_rows.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "common/error.h"

namespace tandem {
namespace {

TEST(DeviceRows, SlicesReadTheirPartAndKeepTheStorageAlive) {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  DeviceRows slice;
  {
    const DeviceRows all = DeviceRows::from_host(*cpu, std::vector<float>{0, 1, 2, 3, 4, 5});
    EXPECT_EQ(all.size(), 6u);
    EXPECT_EQ(all.backend(), cpu.get());
    slice = all.slice(2, 3);
    EXPECT_EQ(slice.data(), all.data() + 2);  // no copy
  }
  // The whole is gone; the slice still holds the storage.
  EXPECT_EQ(slice.to_host(), (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(slice.slice(1, 2).to_host(), (std::vector<float>{3, 4}));
  EXPECT_TRUE(slice.slice(3, 0).empty());
  EXPECT_THROW(slice.slice(2, 2), Error);  // past the end
  EXPECT_TRUE(DeviceRows::from_host(*cpu, {}).empty());
}

TEST(RowsPool, ReusesABufferOnlyOnceNobodyHoldsIt) {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  RowsPool pool(*cpu, 2);
  std::shared_ptr<Buffer> first = pool.acquire(100);
  const float* first_data = first->data();
  DeviceRows reader(*cpu, first, 0, 100);
  first.reset();
  // The reader still holds it: a new buffer.
  std::shared_ptr<Buffer> second = pool.acquire(50);
  EXPECT_NE(second->data(), first_data);
  second.reset();
  reader = DeviceRows();
  // Both free now: the first that fits is reused, whatever its size.
  std::shared_ptr<Buffer> again = pool.acquire(80);
  EXPECT_EQ(again->data(), first_data);
  EXPECT_GE(again->size(), 80u);
}

TEST(RowsPool, ReadersLettingGoOnAnotherThreadFreeTheirBuffer) {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  RowsPool pool(*cpu, 1);
  std::shared_ptr<Buffer> buffer = pool.acquire(10);
  const float* data = buffer->data();
  DeviceRows reader(*cpu, std::move(buffer), 0, 10);
  std::thread([r = std::move(reader)]() mutable { r = DeviceRows(); }).join();
  EXPECT_EQ(pool.acquire(10)->data(), data);
}

TEST(BackendCopyFrom, CopiesAnotherCpuBackendsMemory) {
  std::unique_ptr<Backend> a = make_cpu_backend(), b = make_cpu_backend();
  const DeviceRows rows = DeviceRows::from_host(*a, std::vector<float>{1, 2, 3, 4});
  Buffer into = b->allocate(3);
  b->copy_from(*a, rows.data() + 1, 3, into.data());
  std::vector<float> host(3);
  b->download(into.data(), host);
  EXPECT_EQ(host, (std::vector<float>{2, 3, 4}));
}

}  // namespace
}  // namespace tandem
