// Checkpoint reading: dtype conversion (exact), safetensors round trips,
// sharded directories, and every kind of corrupt or unsupported file giving
// an Error that names the file and the tensor, never a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

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
using testing_util::safetensors_bytes;
using testing_util::safetensors_from_parts;
using testing_util::TempDir;
using testing_util::TestTensor;
using testing_util::u16_bytes;
using testing_util::write_file;
using testing_util::write_index;
using testing_util::write_safetensors;


std::vector<float> read_all(const SafetensorsFile& file, const std::string& name) {
  const TensorInfo* t = file.find(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  std::vector<float> out(static_cast<size_t>(t->numel()));
  file.read_f32(*t, out);
  return out;
}

// ---- dtype conversion ---------------------------------------------------------

// The value of an f16 bit pattern, from the IEEE definition (not bit tricks).
double f16_value(uint16_t h) {
  int sign = (h >> 15) ? -1 : 1;
  int exponent = (h >> 10) & 0x1f;
  int mantissa = h & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) {
    return mantissa == 0 ? sign * std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::quiet_NaN();
  }
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

TEST(Dtype, F16EdgeValuesAreExact) {
  EXPECT_EQ(f16_to_f32(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(f16_to_f32(0x8000)));
  EXPECT_EQ(f16_to_f32(0x8000), 0.0f);
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);                   // largest finite
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));      // smallest normal
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));      // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x03ff), std::ldexp(1023.0f, -24));   // largest subnormal
  EXPECT_EQ(f16_to_f32(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_to_f32(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7c01)));  // signalling NaN stays NaN, not inf
  EXPECT_TRUE(std::isnan(f16_to_f32(0xfe00)));
}

TEST(Dtype, F16AllBitPatternsMatchDefinition) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float got = f16_to_f32(static_cast<uint16_t>(h));
    double want = f16_value(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << h;
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << std::hex << h;
      EXPECT_EQ(std::signbit(got), (h & 0x8000) != 0) << std::hex << h;
    }
  }
}

TEST(Dtype, Bf16EdgeValuesAreExact) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xc0a0), -5.0f);
  EXPECT_EQ(bf16_to_f32(0x3eab), 0.333984375f);
  EXPECT_EQ(bf16_to_f32(0x7f7f), std::ldexp(255.0f, 120));  // largest finite
  EXPECT_EQ(bf16_to_f32(0x0001), std::ldexp(1.0f, -133));   // smallest subnormal
  EXPECT_TRUE(std::signbit(bf16_to_f32(0x8000)));
  EXPECT_EQ(bf16_to_f32(0x7f80), std::numeric_limits<float>::infinity());
  EXPECT_EQ(bf16_to_f32(0xff80), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7fc0)));
}

TEST(Dtype, NamesAndSizes) {
  EXPECT_EQ(convertible_dtype("BF16"), Dtype::bf16);
  EXPECT_EQ(convertible_dtype("F16"), Dtype::f16);
  EXPECT_EQ(convertible_dtype("F32"), Dtype::f32);
  EXPECT_EQ(convertible_dtype("F64"), std::nullopt);
  EXPECT_EQ(convertible_dtype("bf16"), std::nullopt);  // the format is case-sensitive
  EXPECT_EQ(safetensors_dtype_size("I8"), 1u);
  EXPECT_EQ(safetensors_dtype_size("F64"), 8u);
  EXPECT_EQ(safetensors_dtype_size("Q4_K"), 0u);
  EXPECT_EQ(dtype_size(Dtype::bf16), 2u);
}

// ---- single files -------------------------------------------------------------

// Values exactly representable in each type, with their bit patterns.
const std::vector<uint16_t> kF16Bits = {0x3c00, 0xc000, 0x0001, 0x7bff, 0xfc00, 0x8000};
const std::vector<float> kF16Values = {1.0f, -2.0f, std::ldexp(1.0f, -24), 65504.0f,
                                       -std::numeric_limits<float>::infinity(), -0.0f};
const std::vector<uint16_t> kBf16Bits = {0x3f80, 0xc0a0, 0x7f7f};
const std::vector<float> kBf16Values = {1.0f, -5.0f, std::ldexp(255.0f, 120)};
const std::vector<float> kF32Values = {0.5f, -1.25f, 3.0e38f, 1.0e-45f, 7.0f, -0.0f};

std::vector<TestTensor> mixed_tensors() {
  return {
      {"f32.weight", "F32", {2, 3}, f32_bytes(kF32Values)},
      {"f16.weight", "F16", {6}, u16_bytes(kF16Bits)},
      {"bf16.weight", "BF16", {3, 1}, u16_bytes(kBf16Bits)},
      {"scalar", "F32", {}, f32_bytes({42.0f})},
      {"empty", "F32", {0, 4}, ""},
  };
}

TEST(SafetensorsFile, RoundTripsEveryConvertedType) {
  TempDir dir;
  write_safetensors(dir / "a.safetensors", mixed_tensors());
  SafetensorsFile file(dir / "a.safetensors");
  EXPECT_EQ(file.tensors().size(), 5u);
  EXPECT_EQ(file.find("__metadata__"), nullptr);
  EXPECT_EQ(file.find("nope"), nullptr);
  const TensorInfo* f32 = file.find("f32.weight");
  ASSERT_NE(f32, nullptr);
  EXPECT_EQ(f32->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f32->dtype, Dtype::f32);

  // Bitwise comparison: -0.0 and the denormal must survive unchanged.
  auto bits_equal = [](const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << i;
    }
  };
  bits_equal(read_all(file, "f32.weight"), kF32Values);
  bits_equal(read_all(file, "f16.weight"), kF16Values);
  bits_equal(read_all(file, "bf16.weight"), kBf16Values);
  bits_equal(read_all(file, "scalar"), {42.0f});
  EXPECT_TRUE(read_all(file, "empty").empty());

  // Moving keeps the mapping alive and readable.
  SafetensorsFile moved = std::move(file);
  bits_equal(read_all(moved, "bf16.weight"), kBf16Values);
}

TEST(SafetensorsFile, ReadsRowAndColumnRanges) {
  // (4, 5) with value 10*r + c, stored as F32 and as BF16 (exact for these).
  std::vector<float> values;
  std::vector<uint16_t> bf16;
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 5; ++c) {
      float v = static_cast<float>(10 * r + c);
      values.push_back(v);
      bf16.push_back(static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16));
    }
  }
  TempDir dir;
  write_safetensors(dir / "m.safetensors", {{"m32", "F32", {4, 5}, f32_bytes(values)},
                                            {"m16", "BF16", {4, 5}, u16_bytes(bf16)}});
  SafetensorsFile file(dir / "m.safetensors");
  for (const char* name : {"m32", "m16"}) {
    SCOPED_TRACE(name);
    const TensorInfo& t = *file.find(name);
    std::vector<float> rows(2 * 5);
    file.read_rows_f32(t, 1, 3, rows);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(rows[static_cast<size_t>(i)], values[static_cast<size_t>(5 + i)]);
    std::vector<float> cols(4 * 2);
    file.read_cols_f32(t, 2, 4, cols);
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(cols[static_cast<size_t>(2 * r)], static_cast<float>(10 * r + 2));
      EXPECT_EQ(cols[static_cast<size_t>(2 * r + 1)], static_cast<float>(10 * r + 3));
    }
    std::vector<float> wrong_size(3);
    EXPECT_THROW(file.read_rows_f32(t, 0, 1, wrong_size), Error);
    EXPECT_THROW(file.read_rows_f32(t, 3, 5, rows), Error);
    EXPECT_THROW(file.read_cols_f32(t, 4, 6, cols), Error);
  }
}

TEST(SafetensorsFile, UnconvertibleDtypesAreUnsupportedWhenRead) {
  TempDir dir;
  write_safetensors(dir / "q.safetensors",
                    {{"int8.weight", "I8", {4}, std::string(4, '\1')},
                     {"f64.weight", "F64", {2}, std::string(16, '\0')},
                     {"quant.weight", "Q4_K", {32}, std::string(18, '\0')}});
  // Opening succeeds: a file may carry tensors nobody asks for.
  SafetensorsFile file(dir / "q.safetensors");
  for (const char* name : {"int8.weight", "f64.weight", "quant.weight"}) {
    SCOPED_TRACE(name);
    const TensorInfo& t = *file.find(name);
    std::vector<float> out(static_cast<size_t>(t.numel()));
    Error e = error_from([&] { file.read_f32(t, out); });
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_THAT(e.what(), HasSubstr("q.safetensors"));
    EXPECT_THAT(e.what(), HasSubstr(name));
    EXPECT_THAT(e.what(), HasSubstr(t.dtype_name));
  }
}

// Each corrupt file must fail to open with corrupt_data, naming the file and,
// where one tensor is at fault, that tensor.
struct CorruptCase {
  const char* label;
  std::string bytes;
  const char* tensor;  // expected in the message, or nullptr
};

std::string header_for(const std::string& dtype, const std::string& shape, const std::string& offsets) {
  return R"({"w":{"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":)" + offsets + "}}";
}

std::vector<CorruptCase> corrupt_cases() {
  std::string valid = safetensors_bytes({{"w", "F32", {2, 2}, f32_bytes({1, 2, 3, 4})}});
  std::string huge_len = valid;
  huge_len[7] = '\x7f';
  // The length field claims every byte of the file, 8 more than there are.
  std::string longer_than_file = valid;
  for (int i = 0; i < 8; ++i) {
    longer_than_file[static_cast<size_t>(i)] = static_cast<char>((valid.size() >> (8 * i)) & 0xff);
  }
  const std::string data(16, '\0');
  return {
      {"empty file", "", nullptr},
      {"shorter than the length field", std::string("\x10\x00\x00", 3), nullptr},
      {"header length near 2^63", huge_len, nullptr},
      {"header length larger than the file", longer_than_file, nullptr},
      {"data truncated", valid.substr(0, valid.size() - 3), "w"},
      {"malformed JSON", safetensors_from_parts(R"({"w": {"dtype": "F32", )", data), nullptr},
      {"header not an object", safetensors_from_parts("[1,2]", data), nullptr},
      {"offsets past the end", safetensors_from_parts(header_for("F32", "[2,2]", "[0,32]"), data), "w"},
      {"end before begin", safetensors_from_parts(header_for("F32", "[0]", "[8,4]"), data), "w"},
      {"size mismatch", safetensors_from_parts(header_for("F32", "[2,3]", "[0,16]"), data), "w"},
      {"size mismatch, other dtype", safetensors_from_parts(header_for("F64", "[4]", "[0,16]"), data), "w"},
      {"negative dim", safetensors_from_parts(header_for("F32", "[-2,2]", "[0,16]"), data), "w"},
      {"float offsets", safetensors_from_parts(header_for("F32", "[2,2]", "[0.0,16.0]"), data), "w"},
      {"one offset", safetensors_from_parts(header_for("F32", "[2,2]", "[16]"), data), "w"},
      {"shape overflows", safetensors_from_parts(header_for("F32", "[4294967296,4294967296]", "[0,16]"), data), "w"},
      {"missing dtype", safetensors_from_parts(R"({"w":{"shape":[4],"data_offsets":[0,16]}})", data), "w"},
      {"entry not an object", safetensors_from_parts(R"({"w":[1,2]})", data), "w"},
      {"overlapping tensors",
       safetensors_from_parts(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
                              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", data),
       "b"},
  };
}

TEST(SafetensorsFile, CorruptFilesNameFileAndTensor) {
  TempDir dir;
  for (const CorruptCase& c : corrupt_cases()) {
    SCOPED_TRACE(c.label);
    write_file(dir / "bad.safetensors", c.bytes);
    Error e = error_from([&] { SafetensorsFile file(dir / "bad.safetensors"); });
    EXPECT_EQ(e.kind(), ErrorKind::corrupt_data) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("bad.safetensors"));
    if (c.tensor != nullptr) {
      EXPECT_THAT(e.what(), HasSubstr(std::string("'") + c.tensor + "'"));
    }
    EXPECT_THAT(e.what(), HasSubstr("Hint:"));
  }
}

TEST(SafetensorsFile, MissingFileIsNotFound) {
  TempDir dir;
  Error e = error_from([&] { SafetensorsFile file(dir / "absent.safetensors"); });
  EXPECT_EQ(e.kind(), ErrorKind::not_found);
  EXPECT_THAT(e.what(), HasSubstr("absent.safetensors"));
}

// Random damage to the length field and header, and random truncations: the
// file either opens (and then every tensor reads within bounds) or raises an
// Error. Run under ASan to make "no crash" mean "no out-of-bounds read".
TEST(SafetensorsFile, RandomCorruptionNeverCrashes) {
  TempDir dir;
  const std::string valid = safetensors_bytes(mixed_tensors());
  const size_t header_end = 8 + static_cast<size_t>(static_cast<uint8_t>(valid[0])) +
                            256 * static_cast<size_t>(static_cast<uint8_t>(valid[1]));
  std::mt19937_64 rng(1234);
  int opened = 0, rejected = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string bytes = valid;
    if (trial % 3 == 2) {
      bytes.resize(rng() % valid.size());
    } else {
      for (int k = 0; k < 1 + trial % 4; ++k) {
        bytes[rng() % header_end] = static_cast<char>(rng() & 0xff);
      }
    }
    write_file(dir / "fuzz.safetensors", bytes);
    try {
      SafetensorsFile file(dir / "fuzz.safetensors");
      ++opened;
      for (const TensorInfo& t : file.tensors()) {
        std::vector<float> out(static_cast<size_t>(t.numel()));
        try {
          file.read_f32(t, out);
        } catch (const Error& e) {
          EXPECT_EQ(e.kind(), ErrorKind::unsupported) << e.what();
        }
      }
    } catch (const Error& e) {
      ++rejected;
      EXPECT_THAT(e.what(), HasSubstr("fuzz.safetensors"));
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(opened, 0);  // some damage (e.g. in a value's digits) keeps the file valid
}

// NumPy writes a file the way Hugging Face's writer does (header padded with
// spaces to 8 bytes): F16 encoded by NumPy's own float16 cast (subnormals and
// overflow to inf included), BF16 by round-to-nearest-even, each next to the
// F32 values NumPy decodes it to. An encoder independent of the code tested.
const char* const kNumpyWriter = R"PY(
import json, struct, sys
import numpy as np
rng = np.random.default_rng(0)
edge = [0.0, -0.0, 65504.0, 1e-7, 6e-8, 3e-8, 1e-5, -6.1e-5, np.inf, -np.inf, 7e4, 1e38]
x = np.concatenate([rng.standard_normal(998) * 100, edge]).astype(np.float32).reshape(101, 10)
with np.errstate(over="ignore"):
    h16 = x.astype(np.float16)
b = x.view(np.uint32).astype(np.uint64)
bf16 = ((b + 0x7fff + ((b >> 16) & 1)) >> 16).astype(np.uint16)
tensors = [("f16", "F16", h16), ("f16.expected", "F32", h16.astype(np.float32)),
           ("bf16", "BF16", bf16),
           ("bf16.expected", "F32", (bf16.astype(np.uint32) << 16).view(np.float32))]
header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
for name, dtype, array in tensors:
    raw = array.astype(array.dtype.newbyteorder("<")).tobytes()
    header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
    blobs.append(raw)
    offset += len(raw)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
)PY";

TEST(SafetensorsFile, ReadsNumpyWrittenFile) {
  TempDir dir;
  write_file(dir / "writer.py", kNumpyWriter);
  const std::filesystem::path file_path = dir / "numpy.safetensors";
  std::string command = std::string(TANDEM_PYTHON) + " " + (dir / "writer.py").string() + " " +
                        file_path.string() + " 2>/dev/null";
  if (std::system(command.c_str()) != 0 || !std::filesystem::exists(file_path)) {
    GTEST_SKIP() << "skipped: no python3 with numpy";
  }
  SafetensorsFile file(file_path);
  for (const std::string name : {"f16", "bf16"}) {
    SCOPED_TRACE(name);
    std::vector<float> got = read_all(file, name);
    std::vector<float> want = read_all(file, name + ".expected");
    ASSERT_EQ(got.size(), 1010u);
    ASSERT_EQ(want.size(), 1010u);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
          << "element " << i << ": " << got[i] << " vs " << want[i];
    }
  }
}

// ---- checkpoint directories ---------------------------------------------------

TEST(CheckpointReader, SingleFileReadsWithShapeCheck) {
  TempDir dir;
  write_safetensors(dir / "model.safetensors", mixed_tensors());
  CheckpointReader reader(dir.path());
  EXPECT_EQ(reader.files().size(), 1u);
  EXPECT_TRUE(reader.contains("f16.weight"));
  EXPECT_FALSE(reader.contains("lm_head.weight"));
  std::vector<int64_t> shape = {2, 3};
  EXPECT_EQ(reader.read_f32("f32.weight", shape), kF32Values);

  std::vector<int64_t> wrong = {3, 2};
  Error e = error_from([&] { reader.read_f32("f32.weight", wrong); });
  EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
  EXPECT_THAT(e.what(), HasSubstr("model.safetensors"));
  EXPECT_THAT(e.what(), HasSubstr("'f32.weight'"));
  EXPECT_THAT(e.what(), HasSubstr("[2, 3]"));  // found
  EXPECT_THAT(e.what(), HasSubstr("[3, 2]"));  // expected

  e = error_from([&] { reader.find("lm_head.weight"); });
  EXPECT_EQ(e.kind(), ErrorKind::not_found);
  EXPECT_THAT(e.what(), HasSubstr("'lm_head.weight'"));
  EXPECT_THAT(e.what(), HasSubstr("model.safetensors"));
}

TEST(CheckpointReader, ShardedIndexOpensEachShardOnce) {
  TempDir dir;
  write_safetensors(dir / "model-00001-of-00002.safetensors",
                    {{"a", "F32", {2}, f32_bytes({1, 2})}, {"b", "BF16", {1}, u16_bytes({0x3f80})}});
  write_safetensors(dir / "model-00002-of-00002.safetensors",
                    {{"c", "F16", {2, 2}, u16_bytes({0x3c00, 0x4000, 0x4200, 0x4400})}});
  write_index(dir.path(), {{"model-00001-of-00002.safetensors", {"a", "b"}},
                           {"model-00002-of-00002.safetensors", {"c"}}});
  CheckpointReader reader(dir.path());
  EXPECT_EQ(reader.files().size(), 2u);
  std::vector<int64_t> two = {2}, one = {1}, square = {2, 2};
  EXPECT_EQ(reader.read_f32("a", two), (std::vector<float>{1, 2}));
  EXPECT_EQ(reader.read_f32("b", one), (std::vector<float>{1}));
  EXPECT_EQ(reader.read_f32("c", square), (std::vector<float>{1, 2, 3, 4}));
  std::vector<float> row(2);
  reader.read_rows_f32("c", square, 1, 2, row);
  EXPECT_EQ(row, (std::vector<float>{3, 4}));
  reader.read_cols_f32("c", square, 1, 2, row);
  EXPECT_EQ(row, (std::vector<float>{2, 4}));

  Error e = error_from([&] { reader.find("missing.weight"); });
  EXPECT_EQ(e.kind(), ErrorKind::not_found);
  EXPECT_THAT(e.what(), HasSubstr("'missing.weight'"));
  EXPECT_THAT(e.what(), HasSubstr("model.safetensors.index.json"));
  EXPECT_THAT(e.what(), HasSubstr("model-00001-of-00002.safetensors"));
  EXPECT_THAT(e.what(), HasSubstr("model-00002-of-00002.safetensors"));
}

TEST(CheckpointReader, IndexAndShardsMustAgree) {
  TempDir dir;
  write_safetensors(dir / "s1.safetensors", {{"a", "F32", {1}, f32_bytes({1})}});
  // The index claims "z" is in s1, which lacks it.
  write_index(dir.path(), {{"s1.safetensors", {"a", "z"}}});
  CheckpointReader reader(dir.path());
  Error e = error_from([&] { reader.find("z"); });
  EXPECT_EQ(e.kind(), ErrorKind::corrupt_data);
  EXPECT_THAT(e.what(), HasSubstr("s1.safetensors"));
  EXPECT_THAT(e.what(), HasSubstr("'z'"));

  // A shard the index names but the directory lacks.
  write_index(dir.path(), {{"s1.safetensors", {"a"}}, {"s2.safetensors", {"b"}}});
  e = error_from([&] { CheckpointReader r(dir.path()); });
  EXPECT_EQ(e.kind(), ErrorKind::not_found);
  EXPECT_THAT(e.what(), HasSubstr("s2.safetensors"));

  // Shard names may not leave the directory.
  write_index(dir.path(), {{"../s1.safetensors", {"a"}}});
  e = error_from([&] { CheckpointReader r(dir.path()); });
  EXPECT_EQ(e.kind(), ErrorKind::corrupt_data);
  EXPECT_THAT(e.what(), HasSubstr("'a'"));

  write_file(dir / "model.safetensors.index.json", "{\"weight_map\": ");
  e = error_from([&] { CheckpointReader r(dir.path()); });
  EXPECT_EQ(e.kind(), ErrorKind::corrupt_data);
  EXPECT_THAT(e.what(), HasSubstr("model.safetensors.index.json"));
}

TEST(CheckpointReader, SingleFileWinsOverIndex) {
  TempDir dir;
  write_safetensors(dir / "model.safetensors", {{"a", "F32", {1}, f32_bytes({1})}});
  write_index(dir.path(), {{"absent-shard.safetensors", {"a"}}});
  CheckpointReader reader(dir.path());
  std::vector<int64_t> one = {1};
  EXPECT_EQ(reader.read_f32("a", one), std::vector<float>{1});
}

TEST(CheckpointReader, CorruptShardNamesItsFile) {
  TempDir dir;
  std::string bytes = safetensors_bytes({{"w", "F32", {4}, f32_bytes({1, 2, 3, 4})}});
  write_file(dir / "model.safetensors", bytes.substr(0, bytes.size() - 4));
  Error e = error_from([&] { CheckpointReader r(dir.path()); });
  EXPECT_EQ(e.kind(), ErrorKind::corrupt_data);
  EXPECT_THAT(e.what(), HasSubstr("model.safetensors"));
  EXPECT_THAT(e.what(), HasSubstr("'w'"));
}

TEST(CheckpointReader, MatrixDtypeIsTheOneEveryMatrixShares) {
  // Matrices (two dimensions or more) in BF16 across shards; a 1-D norm in
  // F32 does not count (norms stay f32 in memory).
  TempDir sharded;
  write_safetensors(sharded / "model-00001-of-00002.safetensors",
                    {{"a", "BF16", {1, 2}, u16_bytes({0x3f80, 0x4000})}, {"norm", "F32", {2}, f32_bytes({1, 2})}});
  write_safetensors(sharded / "model-00002-of-00002.safetensors",
                    {{"c", "BF16", {2, 1, 1}, u16_bytes({0x3f80, 0x4000})}});
  write_index(sharded.path(), {{"model-00001-of-00002.safetensors", {"a", "norm"}},
                               {"model-00002-of-00002.safetensors", {"c"}}});
  EXPECT_EQ(CheckpointReader(sharded.path()).matrix_dtype(), Dtype::bf16);

  TempDir f32;
  write_safetensors(f32 / "model.safetensors", {{"w", "F32", {2, 1}, f32_bytes({1, 2})}});
  EXPECT_EQ(CheckpointReader(f32.path()).matrix_dtype(), Dtype::f32);

  TempDir mixed;  // F32, F16 and BF16 matrices
  write_safetensors(mixed / "model.safetensors", mixed_tensors());
  EXPECT_EQ(CheckpointReader(mixed.path()).matrix_dtype(), std::nullopt);

  TempDir quantized;  // a type Tandem does not convert
  write_safetensors(quantized / "model.safetensors", {{"w", "I8", {2, 2}, std::string(4, '\1')}});
  EXPECT_EQ(CheckpointReader(quantized.path()).matrix_dtype(), std::nullopt);

  TempDir vectors_only;
  write_safetensors(vectors_only / "model.safetensors", {{"norm", "BF16", {2}, u16_bytes({0x3f80, 0x4000})}});
  EXPECT_EQ(CheckpointReader(vectors_only.path()).matrix_dtype(), std::nullopt);
}

TEST(CheckpointReader, EmptyDirectoryIsNotFound) {
  TempDir dir;
  Error e = error_from([&] { CheckpointReader r(dir.path()); });
  EXPECT_EQ(e.kind(), ErrorKind::not_found);
  EXPECT_THAT(e.what(), HasSubstr("model.safetensors"));
  EXPECT_THAT(e.what(), HasSubstr(dir.path().string()));
}

}  // namespace
}  // namespace tandem
