// ByteWriter / ByteReader: little-endian layout, bounds checked on every
// read, errors naming message and field, counts checked before allocating.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <limits>
#include <new>

#include "common/error.h"
#include "transport/wire_format.h"

// The largest single allocation this test binary asked for, to show that a
// corrupt count is refused before the vector it sizes is allocated. (A
// replacement operator new applies to the whole binary; it only records.)
namespace {
std::atomic<size_t> largest_allocation{0};
}  // namespace

void* operator new(size_t size) {
  size_t seen = largest_allocation.load(std::memory_order_relaxed);
  while (size > seen && !largest_allocation.compare_exchange_weak(seen, size)) {
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// GCC cannot see that this pairs with the malloc in operator new above.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace tandem::wire {
namespace {

using testing::HasSubstr;

template <typename F>
std::string corrupt_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::corrupt_data);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(WireFormat, ScalarsAreLittleEndian) {
  ByteWriter writer;
  writer.u16(0x0102);
  writer.u32(0x03040506);
  writer.i32(-2);
  Bytes bytes = writer.take();
  ASSERT_EQ(bytes.size(), 10u);
  EXPECT_EQ(bytes[0], std::byte{0x02});
  EXPECT_EQ(bytes[1], std::byte{0x01});
  EXPECT_EQ(bytes[2], std::byte{0x06});
  EXPECT_EQ(bytes[5], std::byte{0x03});
  EXPECT_EQ(bytes[6], std::byte{0xFE});
  EXPECT_EQ(bytes[9], std::byte{0xFF});
}

TEST(WireFormat, EveryKindRoundTrips) {
  ByteWriter writer;
  writer.u8(200);
  writer.u16(65000);
  writer.u32(4000000000u);
  writer.u64(std::numeric_limits<uint64_t>::max());
  writer.i32(std::numeric_limits<int32_t>::min());
  writer.i64(-5);
  writer.f32(-0.375f);
  writer.f64(1e300);
  writer.boolean(true);
  writer.boolean(false);
  writer.string("héllo");
  writer.string("");
  const std::vector<int32_t> i32s = {1, -2, 3};
  const std::vector<uint64_t> u64s = {1ULL << 60};
  const std::vector<int64_t> i64s = {-1, 0};
  const std::vector<float> f32s = {0.5f, std::numeric_limits<float>::infinity()};
  writer.i32s(i32s);
  writer.u64s(u64s);
  writer.i64s(i64s);
  writer.f32s(f32s);
  const Bytes bytes = writer.take();

  ByteReader reader(bytes, "Test");
  EXPECT_EQ(reader.u8("a"), 200);
  EXPECT_EQ(reader.u16("b"), 65000);
  EXPECT_EQ(reader.u32("c"), 4000000000u);
  EXPECT_EQ(reader.u64("d"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(reader.i32("e"), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(reader.i64("f"), -5);
  EXPECT_EQ(reader.f32("g"), -0.375f);
  EXPECT_EQ(reader.f64("h"), 1e300);
  EXPECT_TRUE(reader.boolean("i"));
  EXPECT_FALSE(reader.boolean("j"));
  EXPECT_EQ(reader.string("k"), "héllo");
  EXPECT_EQ(reader.string("l"), "");
  EXPECT_EQ(reader.i32s("m"), i32s);
  EXPECT_EQ(reader.u64s("n"), u64s);
  EXPECT_EQ(reader.i64s("o"), i64s);
  EXPECT_EQ(reader.f32s("p"), f32s);
  EXPECT_EQ(reader.remaining(), 0u);
  EXPECT_NO_THROW(reader.expect_end());
}

TEST(WireFormat, TruncatedReadNamesMessageAndField) {
  const Bytes bytes(3);
  ByteReader reader(bytes, "DraftStep");
  EXPECT_THAT(corrupt_message([&] { reader.u32("step"); }),
              HasSubstr("DraftStep: truncated reading step"));
  EXPECT_EQ(reader.remaining(), 3u);  // a failed read consumes nothing
}

TEST(WireFormat, BoolOtherThanZeroOrOne) {
  const Bytes bytes = {std::byte{2}};
  ByteReader reader(bytes, "TargetStep");
  EXPECT_THAT(corrupt_message([&] { reader.boolean("verify"); }),
              HasSubstr("TargetStep: verify: bool byte is 2"));
}

TEST(WireFormat, TrailingBytes) {
  const Bytes bytes(5);
  ByteReader reader(bytes, "Shutdown");
  reader.u32("exit_code");
  EXPECT_THAT(corrupt_message([&] { reader.expect_end(); }), HasSubstr("Shutdown: 1 trailing bytes"));
}

TEST(WireFormat, HugeCountFailsBeforeAllocating) {
  ByteWriter writer;
  writer.u32(0xFFFFFFFFu);  // a count claiming 2^32-1 elements (16 GiB of floats)
  writer.f32(1.0f);
  const Bytes bytes = writer.take();
  largest_allocation = 0;
  {
    ByteReader reader(bytes, "QRows");
    EXPECT_THAT(corrupt_message([&] { reader.f32s("entries.q"); }),
                HasSubstr("QRows: entries.q: count 4294967295"));
  }
  {
    ByteReader reader(bytes, "Shutdown");
    EXPECT_THAT(corrupt_message([&] { reader.string("reason"); }), HasSubstr("Shutdown: reason"));
  }
  EXPECT_LT(largest_allocation.load(), size_t{1} << 20);  // only error strings
}

TEST(WireFormat, CountBoundsAllowExactFit) {
  ByteWriter writer;
  writer.u32(2);
  writer.i32(7);
  writer.i32(8);
  const Bytes bytes = writer.take();
  ByteReader reader(bytes, "Test");
  EXPECT_EQ(reader.i32s("values"), (std::vector<int32_t>{7, 8}));
  ByteReader short_reader(std::span<const std::byte>(bytes).first(11), "Test");
  EXPECT_THAT(corrupt_message([&] { short_reader.i32s("values"); }), HasSubstr("Test: values: count 2"));
}

TEST(WireFormat, PatchU32) {
  ByteWriter writer;
  writer.u32(0);
  writer.u8(9);
  writer.patch_u32(0, 0xAABBCCDD);
  const Bytes bytes = writer.take();
  ByteReader reader(bytes, "Test");
  EXPECT_EQ(reader.u32("patched"), 0xAABBCCDDu);
  EXPECT_THROW(ByteWriter().patch_u32(0, 1), Error);
}

}  // namespace
}  // namespace tandem::wire
