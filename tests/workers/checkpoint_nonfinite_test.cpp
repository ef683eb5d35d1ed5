// Non-finite checkpoint values (workers/checkpoint/): the conversion finds
// the first NaN or infinity of every converted dtype wherever it lies (block
// edges included) and still converts faithfully; a file read reports it in
// the whole tensor's coordinates, whatever slice was read; CheckpointReader
// refuses it with an Error naming the file, the tensor, the element and the
// value. Finite extremes (largest, subnormal, -0) are never flagged.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/error.h"
#include "safetensors_writer.h"
#include "tests/support/expect_error.h"
#include "workers/checkpoint/checkpoint_reader.h"
#include "workers/checkpoint/dtype.h"
#include "workers/checkpoint/safetensors.h"

namespace tandem {
namespace {

using test_support::error_from;

using ::testing::HasSubstr;
using testing_util::f32_bytes;
using testing_util::TempDir;
using testing_util::u16_bytes;
using testing_util::write_index;
using testing_util::write_safetensors;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Bit patterns of one stored dtype: finite extremes and the non-finite kinds.
struct DtypeBits {
  Dtype dtype;
  std::vector<uint32_t> finite;  // 1, largest finite, smallest subnormal, -0, -largest
  std::vector<uint32_t> non_finite;  // +inf, -inf, quiet NaN, NaN with the smallest payload
};
const DtypeBits kDtypes[] = {
    {Dtype::f32,
     {0x3f800000u, 0x7f7fffffu, 0x00000001u, 0x80000000u, 0xff7fffffu},
     {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u}},
    {Dtype::f16,
     {0x3c00u, 0x7bffu, 0x0001u, 0x8000u, 0xfbffu},
     {0x7c00u, 0xfc00u, 0x7e00u, 0x7c01u}},
    {Dtype::bf16,
     {0x3f80u, 0x7f7fu, 0x0001u, 0x8000u, 0xff7fu},
     {0x7f80u, 0xff80u, 0x7fc0u, 0x7f81u}},
};

// count elements cycling through the finite patterns, stored little-endian.
std::vector<std::byte> finite_elements(const DtypeBits& d, size_t count) {
  const size_t size = dtype_size(d.dtype);
  std::vector<std::byte> bytes(count * size);
  for (size_t i = 0; i < count; ++i) {
    const uint32_t bits = d.finite[i % d.finite.size()];
    for (size_t b = 0; b < size; ++b) bytes[i * size + b] = std::byte((bits >> (8 * b)) & 0xff);
  }
  return bytes;
}
void put(std::vector<std::byte>& bytes, Dtype dtype, size_t index, uint32_t bits) {
  const size_t size = dtype_size(dtype);
  for (size_t b = 0; b < size; ++b) bytes[index * size + b] = std::byte((bits >> (8 * b)) & 0xff);
}

TEST(NonFiniteConversion, FiniteExtremesAreNotFlagged) {
  for (const DtypeBits& d : kDtypes) {
    SCOPED_TRACE(dtype_name(d.dtype));
    const size_t n = 3 * 4096 + 17;  // several conversion blocks and a ragged end
    const std::vector<std::byte> src = finite_elements(d, n);
    std::vector<float> dst(n);
    EXPECT_EQ(convert_to_f32(d.dtype, src.data(), n, dst.data()), n);
    EXPECT_EQ(convert_to_f32(d.dtype, nullptr, 0, nullptr), 0u);
  }
}

TEST(NonFiniteConversion, FindsTheFirstNonFiniteElementAndConvertsTheRest) {
  const size_t n = 3 * 4096 + 17;
  for (const DtypeBits& d : kDtypes) {
    for (const uint32_t bad : d.non_finite) {
      // First and last element, either side of a block edge, mid-block.
      for (const size_t at : {size_t{0}, size_t{4095}, size_t{4096}, size_t{5000}, n - 1}) {
        SCOPED_TRACE(std::string(dtype_name(d.dtype)) + " bits " + std::to_string(bad) +
                     " at " + std::to_string(at));
        std::vector<std::byte> src = finite_elements(d, n);
        put(src, d.dtype, at, bad);
        if (at + 7 < n) put(src, d.dtype, at + 7, d.non_finite[0]);  // a later one is not first
        std::vector<float> dst(n);
        const size_t found = convert_to_f32(d.dtype, src.data(), n, dst.data());
        EXPECT_EQ(found, at);
        EXPECT_FALSE(std::isfinite(dst[at]));
        // Faithful: everything after it is converted too.
        std::vector<float> want(n);
        const std::vector<std::byte> clean = finite_elements(d, n);
        ASSERT_EQ(convert_to_f32(d.dtype, clean.data(), n, want.data()), n);
        EXPECT_EQ(dst[n - 1 == at ? 0 : n - 1], want[n - 1 == at ? 0 : n - 1]);
        EXPECT_EQ(dst[(at + 3) % n], want[(at + 3) % n]);
      }
    }
  }
}

// A (4, 5) F32 matrix with NaN at (2, 3) and +inf at (3, 1).
std::vector<float> planted_matrix() {
  std::vector<float> values(20);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) - 7.5f;
  values[2 * 5 + 3] = kNan;
  values[3 * 5 + 1] = kInf;
  return values;
}

TEST(NonFiniteSafetensors, ReadsReportTheFirstInWholeTensorCoordinates) {
  TempDir dir;
  write_safetensors(dir / "m.safetensors", {{"m", "F32", {4, 5}, f32_bytes(planted_matrix())}});
  SafetensorsFile file(dir / "m.safetensors");
  const TensorInfo& t = *file.find("m");
  std::vector<float> whole(20), two_rows(10), one_row(5), two_cols(8), one_col(4);

  SafetensorsFile::ReadResult found = file.read_f32(t, whole);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->index, 13);
  EXPECT_TRUE(std::isnan(found->value));
  EXPECT_TRUE(std::isnan(whole[13]));  // the file decodes faithfully; refusing is the caller's
  EXPECT_EQ(whole[16], kInf);
  EXPECT_EQ(whole[19], 11.5f);

  EXPECT_FALSE(file.read_rows_f32(t, 0, 2, two_rows).has_value());
  found = file.read_rows_f32(t, 3, 4, one_row);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->index, 16);  // row 3 of the tensor, not row 0 of the slice
  EXPECT_EQ(found->value, kInf);

  found = file.read_cols_f32(t, 0, 2, two_cols);  // only (3, 1) is in columns 0-1
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->index, 16);
  found = file.read_cols_f32(t, 2, 4, two_cols);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->index, 13);
  EXPECT_FALSE(file.read_cols_f32(t, 4, 5, one_col).has_value());
}


TEST(NonFiniteCheckpoint, RefusedNamingFileTensorElementAndValue) {
  TempDir dir;
  std::vector<float> f32 = {0.5f, -1.0f, 2.0f, 3.0f, kNan, 1.0f};
  // F16 +inf at element 5 of a vector; BF16 -inf at (1, 1, 1) of a (2, 2, 3) tensor.
  std::vector<uint16_t> f16 = {0x3c00, 0x7bff, 0x0001, 0x8000, 0x3c00, 0x7c00};
  std::vector<uint16_t> bf16(12, 0x3f80);
  bf16[10] = 0xff80;
  write_safetensors(dir / "model.safetensors",
                    {{"f32.weight", "F32", {2, 3}, f32_bytes(f32)},
                     {"f16.weight", "F16", {6}, u16_bytes(f16)},
                     {"bf16.weight", "BF16", {2, 2, 3}, u16_bytes(bf16)},
                     {"clean.weight", "F32", {2}, f32_bytes({1.0f, -0.0f})}});
  const std::string file = (dir / "model.safetensors").string();
  CheckpointReader reader(dir.path());
  const std::vector<int64_t> matrix = {2, 3}, vector = {6}, cube = {2, 2, 3};

  Error e = error_from([&] { (void)reader.read_f32("f32.weight", matrix); });
  EXPECT_EQ(e.kind(), ErrorKind::corrupt_data);
  EXPECT_THAT(e.what(), HasSubstr(file + ": tensor 'f32.weight' holds a non-finite value (nan) at "
                                         "element 4 (row 1, column 1); the checkpoint is corrupt"));
  e = error_from([&] { (void)reader.read_f32("f16.weight", vector); });
  EXPECT_EQ(e.kind(), ErrorKind::corrupt_data);
  EXPECT_THAT(e.what(), HasSubstr(file + ": tensor 'f16.weight' holds a non-finite value (inf) at "
                                         "element 5; the checkpoint is corrupt"));
  e = error_from([&] { (void)reader.read_f32("bf16.weight", cube); });
  EXPECT_EQ(e.kind(), ErrorKind::corrupt_data);
  EXPECT_THAT(e.what(), HasSubstr(file + ": tensor 'bf16.weight' holds a non-finite value (-inf) "
                                         "at element 10 (index [1, 1, 1])"));
  EXPECT_EQ(reader.bytes_read(), 0);  // a refused read counts nothing

  // A clean tensor of the same file still reads.
  const std::vector<int64_t> two = {2};
  EXPECT_EQ(reader.read_f32("clean.weight", two), (std::vector<float>{1.0f, -0.0f}));

  // Slices (a tensor-parallel rank's reads): only the elements read are
  // checked, and the error gives the element's place in the whole tensor.
  std::vector<float> row(3), column(2);
  reader.read_rows_f32("f32.weight", matrix, 0, 1, row);
  reader.read_cols_f32("f32.weight", matrix, 0, 1, column);
  reader.read_cols_f32("f32.weight", matrix, 2, 3, column);
  e = error_from([&] { reader.read_rows_f32("f32.weight", matrix, 1, 2, row); });
  EXPECT_THAT(e.what(), HasSubstr("at element 4 (row 1, column 1)"));
  e = error_from([&] { reader.read_cols_f32("f32.weight", matrix, 1, 2, column); });
  EXPECT_THAT(e.what(), HasSubstr("at element 4 (row 1, column 1)"));
}

TEST(NonFiniteCheckpoint, ShardedCheckpointNamesTheShard) {
  TempDir dir;
  write_safetensors(dir / "a.safetensors", {{"a", "F32", {2}, f32_bytes({1.0f, 2.0f})}});
  write_safetensors(dir / "b.safetensors", {{"b", "F32", {2}, f32_bytes({3.0f, -kInf})}});
  write_index(dir.path(), {{"a.safetensors", {"a"}}, {"b.safetensors", {"b"}}});
  CheckpointReader reader(dir.path());
  const std::vector<int64_t> two = {2};
  EXPECT_EQ(reader.read_f32("a", two), (std::vector<float>{1.0f, 2.0f}));
  const Error e = error_from([&] { (void)reader.read_f32("b", two); });
  EXPECT_EQ(e.kind(), ErrorKind::corrupt_data);
  EXPECT_THAT(e.what(), HasSubstr((dir / "b.safetensors").string() +
                                  ": tensor 'b' holds a non-finite value (-inf) at element 1;"));
}

}  // namespace
}  // namespace tandem
