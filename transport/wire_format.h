// ByteWriter and ByteReader: the primitive encoding under transport messages.
//
// Scalars are little-endian, bools one byte (0 or 1), strings and vectors a
// u32 count then their elements. The reader checks every read against the
// bytes left and throws Error(corrupt_data) naming the message and field, so
// a truncated or corrupt message is an error, never a read past the end.
// Counts are checked against the bytes left *before* anything is allocated:
// a corrupt count of 2^32-1 fails at once instead of asking for 16 GB.
//
// Values are copied with memcpy (no type punning); the byte order of the
// wire is the host's, which the static_assert in wire_format.cpp pins to
// little-endian (every machine Tandem targets, x86-64 and ARM64).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "transport/communicator.h"

namespace tandem::wire {

class ByteWriter {
 public:
  void u8(uint8_t value);
  void u16(uint16_t value);
  void u32(uint32_t value);
  void u64(uint64_t value);
  void i32(int32_t value);
  void i64(int64_t value);
  void f32(float value);
  void f64(double value);
  void boolean(bool value);
  void string(std::string_view value);
  void i32s(std::span<const int32_t> values);
  void u64s(std::span<const uint64_t> values);
  void i64s(std::span<const int64_t> values);
  void f32s(std::span<const float> values);
  // A u32 element count; throws Error(invalid_argument) above 2^32-1.
  void count(size_t n);

  size_t size() const { return bytes_.size(); }
  // Overwrites 4 bytes at `offset` (a length field written before its payload).
  void patch_u32(size_t offset, uint32_t value);
  Bytes take() { return std::move(bytes_); }

 private:
  void raw(const void* data, size_t n);
  Bytes bytes_;
};

class ByteReader {
 public:
  // message: named in every error ("TargetStep: truncated reading tokens").
  ByteReader(std::span<const std::byte> bytes, std::string_view message);

  uint8_t u8(const char* field);
  uint16_t u16(const char* field);
  uint32_t u32(const char* field);
  uint64_t u64(const char* field);
  int32_t i32(const char* field);
  int64_t i64(const char* field);
  float f32(const char* field);
  double f64(const char* field);
  bool boolean(const char* field);  // rejects bytes other than 0 and 1
  std::string string(const char* field);
  std::vector<int32_t> i32s(const char* field);
  std::vector<uint64_t> u64s(const char* field);
  std::vector<int64_t> i64s(const char* field);
  std::vector<float> f32s(const char* field);
  // A u32 count of elements that take at least min_element_bytes each,
  // checked against the bytes left (so a vector of structs can reserve).
  uint32_t count(const char* field, size_t min_element_bytes);

  // Fields read from now on are named "<scope>.<field>" in errors (the
  // fields of a nested struct, of a vector's elements); nullptr names them
  // as given. Returns the scope before. Only errors build the name.
  const char* set_scope(const char* scope) {
    const char* outer = scope_;
    scope_ = scope;
    return outer;
  }

  size_t remaining() const { return bytes_.size() - position_; }
  // Throws unless every byte was read (trailing bytes mean a wrong layout).
  void expect_end();
  // Throws Error(corrupt_data, "<message>: <field>: <what>").
  [[noreturn]] void fail(const char* field, const std::string& what) const;

 private:
  void raw(void* out, size_t n, const char* field);
  std::string named(const char* field) const;
  // One little-endian value of T (the native layout: see the static_assert).
  template <typename T>
  T scalar(const char* field) {
    T value;
    raw(&value, sizeof value, field);
    return value;
  }
  template <typename T>
  std::vector<T> vector_of(const char* field);

  std::span<const std::byte> bytes_;
  size_t position_ = 0;
  std::string message_;
  const char* scope_ = nullptr;
};

}  // namespace tandem::wire
