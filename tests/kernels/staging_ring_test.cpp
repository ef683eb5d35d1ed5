// StagingRing on a fake memory whose "device" is host memory and whose
// copies land at once: every address stage() returned still holds its bytes,
// in memory not yet released, until reset(), however the arrays of one op
// overflow the block (the CUDA backend's attention stages six arrays before
// its kernel reads any); reused arrays cost no copy; equal steps after a
// reset stage to equal addresses (a step graph's key).
#include "kernels/staging_ring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace tandem {
namespace {

// Blocks from the heap, remembered until released, so a test can tell
// whether an address still lies in live memory.
class FakeMemory final : public StagingRing::Memory {
 public:
  ~FakeMemory() override { EXPECT_TRUE(live_.empty()) << "a block was never released"; }
  StagingRing::Block allocate(size_t bytes) override {
    auto host = std::make_unique<char[]>(bytes);
    auto device = std::make_unique<char[]>(bytes);
    StagingRing::Block block{host.get(), device.get(), bytes};
    live_.push_back({block, std::move(host), std::move(device)});
    ++allocations;
    return block;
  }
  void release(const StagingRing::Block& block) override {
    const auto found = std::find_if(live_.begin(), live_.end(),
                                    [&](const Live& l) { return l.block.device == block.device; });
    ASSERT_NE(found, live_.end()) << "released a block twice, or one never allocated";
    live_.erase(found);
  }
  // Whether [address, address + bytes) lies in one block not yet released.
  bool live(const void* address, size_t bytes) const {
    const char* a = static_cast<const char*>(address);
    return std::any_of(live_.begin(), live_.end(), [&](const Live& l) {
      return a >= l.block.device && a + bytes <= l.block.device + l.block.bytes;
    });
  }
  int allocations = 0;

 private:
  struct Live {
    StagingRing::Block block;
    std::unique_ptr<char[]> host, device;
  };
  std::vector<Live> live_;
};

// An array the test stages, and where it went.
struct Staged {
  std::vector<int32_t> host;
  const void* device = nullptr;
};

// stage() with its copy done at once, as the stream would before a kernel.
const void* stage_and_copy(StagingRing& ring, const std::vector<int32_t>& host, int* copies) {
  StagingRing::Copy copy;
  const void* device = ring.stage(host.data(), host.size() * sizeof(int32_t), &copy);
  if (copy.bytes > 0) {
    EXPECT_EQ(copy.device, device);
    std::memcpy(copy.device, copy.host, copy.bytes);
    if (copies) ++*copies;
  }
  return device;
}

// The kernel's view: every staged array is where it was put, whole.
void expect_readable(const FakeMemory& memory, const std::vector<Staged>& arrays) {
  for (size_t i = 0; i < arrays.size(); ++i) {
    const size_t bytes = arrays[i].host.size() * sizeof(int32_t);
    ASSERT_TRUE(memory.live(arrays[i].device, bytes)) << "array " << i << " was released";
    EXPECT_EQ(std::memcmp(arrays[i].device, arrays[i].host.data(), bytes), 0)
        << "array " << i << " was overwritten";
  }
}

std::vector<int32_t> filled(size_t count, int32_t first) {
  std::vector<int32_t> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = first + static_cast<int32_t>(i);
  return values;
}

TEST(StagingRing, AnArrayLargerThanTheBlockLeavesTheArraysStagedBeforeItIntact) {
  FakeMemory memory;
  StagingRing ring(memory, /*first_block=*/4096);
  // Five small arrays, then one of 64 KiB (the block is 4 KiB): all six are
  // read by one kernel after the last is staged.
  std::vector<Staged> arrays;
  for (int i = 0; i < 5; ++i) arrays.push_back({filled(40, 100 * i)});
  arrays.push_back({filled(16384, 7)});
  for (Staged& a : arrays) a.device = stage_and_copy(ring, a.host, nullptr);
  expect_readable(memory, arrays);
  EXPECT_EQ(ring.retired_blocks(), 1u);
  EXPECT_GE(ring.capacity(), 2 * 16384 * sizeof(int32_t));
  ring.reset();  // the stream finished: the full block goes
  EXPECT_EQ(ring.retired_blocks(), 0u);
}

TEST(StagingRing, ABlockThatFillsUpIsNeverReusedBeforeReset) {
  FakeMemory memory;
  StagingRing ring(memory, /*first_block=*/1024);  // four 256-byte regions
  std::vector<Staged> arrays;
  for (int i = 0; i < 7; ++i) {
    arrays.push_back({filled(64, 1000 * i)});
    arrays.back().device = stage_and_copy(ring, arrays.back().host, nullptr);
  }
  expect_readable(memory, arrays);
  for (size_t i = 0; i < arrays.size(); ++i)
    for (size_t j = 0; j < i; ++j) EXPECT_NE(arrays[i].device, arrays[j].device) << i << ", " << j;
}

TEST(StagingRing, TheSameArrayUnchangedIsCopiedOnceUntilReset) {
  FakeMemory memory;
  StagingRing ring(memory, 4096);
  std::vector<int32_t> positions = filled(8, 0);
  int copies = 0;
  const void* first = stage_and_copy(ring, positions, &copies);
  EXPECT_EQ(stage_and_copy(ring, positions, &copies), first);  // every layer's RoPE
  EXPECT_EQ(copies, 1);
  positions[3] = -1;  // changed: staged anew
  const void* changed = stage_and_copy(ring, positions, &copies);
  EXPECT_NE(changed, first);
  EXPECT_EQ(copies, 2);
  const std::vector<int32_t> equal_elsewhere = positions;  // same bytes, another array
  EXPECT_NE(stage_and_copy(ring, equal_elsewhere, &copies), changed);
  ring.reset();
  EXPECT_EQ(stage_and_copy(ring, positions, &copies), first);  // from the start again
  EXPECT_EQ(copies, 4);
  StagingRing::Copy copy;
  EXPECT_EQ(ring.stage(positions.data(), 0, &copy), nullptr);  // nothing to stage
  EXPECT_EQ(copy.bytes, 0u);
}

TEST(StagingRing, EqualStepsAfterAResetStageToEqualAddresses) {
  FakeMemory memory;
  StagingRing ring(memory, 1024);
  const std::vector<int32_t> ids = filled(100, 0), slots = filled(100, 500);
  const std::vector<int32_t> tables = filled(1000, 9);  // overflows the first block
  std::vector<const void*> step[3];
  for (auto& addresses : step) {
    for (const auto* array : {&ids, &slots, &tables})
      addresses.push_back(stage_and_copy(ring, *array, nullptr));
    ring.reset();
  }
  // The first step outgrew the first block; from then on one block holds a
  // step, and every step lays its arrays out alike.
  EXPECT_EQ(step[1], step[2]);
  EXPECT_EQ(memory.allocations, 2);
}

}  // namespace
}  // namespace tandem
