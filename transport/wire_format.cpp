// ByteWriter and ByteReader (see wire_format.h).
#include "transport/wire_format.h"

#include <bit>
#include <cstring>
#include <limits>

#include "common/error.h"

namespace tandem::wire {

// The wire is little-endian and values are copied as the host holds them.
// A big-endian port would byte-swap in raw(); none is planned.
static_assert(std::endian::native == std::endian::little,
              "the transport wire format assumes a little-endian host");
static_assert(sizeof(float) == 4 && sizeof(double) == 8);

// ---- ByteWriter -----------------------------------------------------------

void ByteWriter::raw(const void* data, size_t n) {
  const size_t old_size = bytes_.size();
  bytes_.resize(old_size + n);
  if (n > 0) std::memcpy(bytes_.data() + old_size, data, n);
}

void ByteWriter::u8(uint8_t value) { raw(&value, sizeof value); }
void ByteWriter::u16(uint16_t value) { raw(&value, sizeof value); }
void ByteWriter::u32(uint32_t value) { raw(&value, sizeof value); }
void ByteWriter::u64(uint64_t value) { raw(&value, sizeof value); }
void ByteWriter::i32(int32_t value) { raw(&value, sizeof value); }
void ByteWriter::i64(int64_t value) { raw(&value, sizeof value); }
void ByteWriter::f32(float value) { raw(&value, sizeof value); }
void ByteWriter::f64(double value) { raw(&value, sizeof value); }
void ByteWriter::boolean(bool value) { u8(value ? 1 : 0); }

void ByteWriter::count(size_t n) {
  require(n <= std::numeric_limits<uint32_t>::max(), ErrorKind::invalid_argument, [&] {
    return "message field of " + std::to_string(n) + " elements exceeds the wire limit of 2^32-1";
  });
  u32(static_cast<uint32_t>(n));
}

void ByteWriter::string(std::string_view value) {
  count(value.size());
  raw(value.data(), value.size());
}

void ByteWriter::i32s(std::span<const int32_t> values) {
  count(values.size());
  raw(values.data(), values.size_bytes());
}
void ByteWriter::u64s(std::span<const uint64_t> values) {
  count(values.size());
  raw(values.data(), values.size_bytes());
}
void ByteWriter::i64s(std::span<const int64_t> values) {
  count(values.size());
  raw(values.data(), values.size_bytes());
}
void ByteWriter::f32s(std::span<const float> values) {
  count(values.size());
  raw(values.data(), values.size_bytes());
}

void ByteWriter::patch_u32(size_t offset, uint32_t value) {
  require(offset + sizeof value <= bytes_.size(), ErrorKind::internal,
          "ByteWriter::patch_u32 past the end of the buffer");
  std::memcpy(bytes_.data() + offset, &value, sizeof value);
}

// ---- ByteReader -----------------------------------------------------------

ByteReader::ByteReader(std::span<const std::byte> bytes, std::string_view message)
    : bytes_(bytes), message_(message) {}

std::string ByteReader::named(const char* field) const {
  return scope_ == nullptr ? std::string(field) : std::string(scope_) + "." + field;
}

void ByteReader::fail(const char* field, const std::string& what) const {
  throw Error(ErrorKind::corrupt_data, message_ + ": " + named(field) + ": " + what);
}

void ByteReader::raw(void* out, size_t n, const char* field) {
  if (n > remaining()) {
    throw Error(ErrorKind::corrupt_data,
                message_ + ": truncated reading " + named(field) + " (" + std::to_string(n) +
                    " bytes wanted, " + std::to_string(remaining()) + " left)");
  }
  if (n > 0) std::memcpy(out, bytes_.data() + position_, n);
  position_ += n;
}

uint8_t ByteReader::u8(const char* field) { return scalar<uint8_t>(field); }
uint16_t ByteReader::u16(const char* field) { return scalar<uint16_t>(field); }
uint32_t ByteReader::u32(const char* field) { return scalar<uint32_t>(field); }
uint64_t ByteReader::u64(const char* field) { return scalar<uint64_t>(field); }
int32_t ByteReader::i32(const char* field) { return scalar<int32_t>(field); }
int64_t ByteReader::i64(const char* field) { return scalar<int64_t>(field); }
float ByteReader::f32(const char* field) { return scalar<float>(field); }
double ByteReader::f64(const char* field) { return scalar<double>(field); }

bool ByteReader::boolean(const char* field) {
  const uint8_t value = u8(field);
  if (value > 1) fail(field, "bool byte is " + std::to_string(value) + ", not 0 or 1");
  return value == 1;
}

uint32_t ByteReader::count(const char* field, size_t min_element_bytes) {
  const uint32_t n = u32(field);
  // Checked before the caller allocates: the count can only be as large as
  // the bytes that are left could hold.
  if (min_element_bytes > 0 && n > remaining() / min_element_bytes) {
    fail(field, "count " + std::to_string(n) + " needs at least " +
                    std::to_string(static_cast<uint64_t>(n) * min_element_bytes) +
                    " bytes but only " + std::to_string(remaining()) + " are left");
  }
  return n;
}

template <typename T>
std::vector<T> ByteReader::vector_of(const char* field) {
  const uint32_t n = count(field, sizeof(T));
  std::vector<T> values(n);
  raw(values.data(), n * sizeof(T), field);
  return values;
}

std::string ByteReader::string(const char* field) {
  const uint32_t n = count(field, 1);
  std::string value(n, '\0');
  raw(value.data(), n, field);
  return value;
}

std::vector<int32_t> ByteReader::i32s(const char* field) { return vector_of<int32_t>(field); }
std::vector<uint64_t> ByteReader::u64s(const char* field) { return vector_of<uint64_t>(field); }
std::vector<int64_t> ByteReader::i64s(const char* field) { return vector_of<int64_t>(field); }
std::vector<float> ByteReader::f32s(const char* field) { return vector_of<float>(field); }

void ByteReader::expect_end() {
  if (remaining() != 0) {
    throw Error(ErrorKind::corrupt_data,
                message_ + ": " + std::to_string(remaining()) + " trailing bytes after the last field");
  }
}

}  // namespace tandem::wire
