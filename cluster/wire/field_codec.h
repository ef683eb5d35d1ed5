// FieldWriter and FieldReader: the two visitors that walk the field lists of
// message_fields.h, one writing each field with a ByteWriter, the other
// reading it back with a ByteReader. What a field's C++ type is decides its
// encoding, the same way in both directions:
//   bool, (u)int8..64, float, double   the scalar, little-endian
//   enum                               its underlying integer
//   std::string                        u32 length, bytes
//   std::vector<i32|u64|i64|f32>       u32 count, the values
//   std::vector<anything else>         u32 count, each element as a field
//   struct                             its own field list
// In errors, a field inside a struct or a vector's element is named after
// the innermost named field holding it ("sequences.gamma", "sampling.seed").
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "cluster/wire/message_fields.h"
#include "transport/wire_format.h"

namespace tandem::wire {

template <class T>
constexpr bool kNoEncoding = false;  // a static_assert that fails only when instantiated

class FieldWriter {
 public:
  explicit FieldWriter(ByteWriter& out) : out_(out) {}

  template <class T>
  void operator()(const char* /*name*/, const T& value) {
    if constexpr (std::is_enum_v<T>) {
      scalar(static_cast<std::underlying_type_t<T>>(value));
    } else if constexpr (std::is_arithmetic_v<T>) {
      scalar(value);
    } else if constexpr (std::is_same_v<T, std::string>) {
      out_.string(value);
    } else {
      fields(*this, value);
    }
  }

  template <class T>
  void operator()(const char* name, const std::vector<T>& values) {
    if constexpr (std::is_same_v<T, int32_t>) {
      out_.i32s(values);
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      out_.u64s(values);
    } else if constexpr (std::is_same_v<T, int64_t>) {
      out_.i64s(values);
    } else if constexpr (std::is_same_v<T, float>) {
      out_.f32s(values);
    } else {
      out_.count(values.size());
      for (const T& value : values) (*this)(name, value);
    }
  }

 private:
  template <class T>
  void scalar(T value) {
    if constexpr (std::is_same_v<T, bool>) out_.boolean(value);
    else if constexpr (std::is_same_v<T, uint8_t>) out_.u8(value);
    else if constexpr (std::is_same_v<T, uint16_t>) out_.u16(value);
    else if constexpr (std::is_same_v<T, uint32_t>) out_.u32(value);
    else if constexpr (std::is_same_v<T, uint64_t>) out_.u64(value);
    else if constexpr (std::is_same_v<T, int32_t>) out_.i32(value);
    else if constexpr (std::is_same_v<T, int64_t>) out_.i64(value);
    else if constexpr (std::is_same_v<T, float>) out_.f32(value);
    else if constexpr (std::is_same_v<T, double>) out_.f64(value);
    else static_assert(kNoEncoding<T>, "no wire encoding for this scalar type");
  }

  ByteWriter& out_;
};

// The smallest encoded size of a T: that of a default one, whose vectors are
// empty. The reader checks a vector's count against it before reserving, so
// a corrupt count fails before it allocates. Measured, not written down, so
// that it follows the field list when it changes.
template <class T>
size_t min_encoded_size() {
  static const size_t size = [] {
    ByteWriter out;
    FieldWriter writer(out);
    writer("", T{});
    return out.size();
  }();
  return size;
}

class FieldReader {
 public:
  explicit FieldReader(ByteReader& in) : in_(in) {}

  template <class T>
  void operator()(const char* name, T& value) {
    if constexpr (std::is_enum_v<T>) {
      value = static_cast<T>(scalar<std::underlying_type_t<T>>(name));
    } else if constexpr (std::is_arithmetic_v<T>) {
      value = scalar<T>(name);
    } else if constexpr (std::is_same_v<T, std::string>) {
      value = in_.string(name);
    } else {
      // Its fields are named after it: "sampling.seed".
      const char* outer = in_.set_scope(name);
      fields(*this, value);
      in_.set_scope(outer);
    }
  }

  template <class T>
  void operator()(const char* name, std::vector<T>& values) {
    if constexpr (std::is_same_v<T, int32_t>) {
      values = in_.i32s(name);
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      values = in_.u64s(name);
    } else if constexpr (std::is_same_v<T, int64_t>) {
      values = in_.i64s(name);
    } else if constexpr (std::is_same_v<T, float>) {
      values = in_.f32s(name);
    } else {
      const uint32_t n = in_.count(name, min_encoded_size<T>());
      values.clear();
      values.reserve(n);
      // Each element is named after the vector: "entries.session".
      for (uint32_t i = 0; i < n; ++i) (*this)(name, values.emplace_back());
    }
  }

 private:
  template <class T>
  T scalar(const char* name) {
    if constexpr (std::is_same_v<T, bool>) return in_.boolean(name);
    else if constexpr (std::is_same_v<T, uint8_t>) return in_.u8(name);
    else if constexpr (std::is_same_v<T, uint16_t>) return in_.u16(name);
    else if constexpr (std::is_same_v<T, uint32_t>) return in_.u32(name);
    else if constexpr (std::is_same_v<T, uint64_t>) return in_.u64(name);
    else if constexpr (std::is_same_v<T, int32_t>) return in_.i32(name);
    else if constexpr (std::is_same_v<T, int64_t>) return in_.i64(name);
    else if constexpr (std::is_same_v<T, float>) return in_.f32(name);
    else if constexpr (std::is_same_v<T, double>) return in_.f64(name);
    else static_assert(kNoEncoding<T>, "no wire encoding for this scalar type");
  }

  ByteReader& in_;
};

}  // namespace tandem::wire
