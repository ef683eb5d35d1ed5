// SafetensorsFile: one .safetensors file, memory-mapped and validated.
//
// Format: 8 bytes little-endian header length N, N bytes of JSON mapping each
// tensor name to {dtype, shape, data_offsets: [begin, end)}, then the data
// section that the offsets index. The whole header is checked when the file
// opens (sizes, offsets, overlaps), so reading a tensor later can only fail
// for a type Tandem does not convert. Tensor bytes are never copied until
// converted: a tensor-parallel rank reading a slice touches only its pages.
// Reads decode faithfully (inf stays inf) and report the first value they
// met that is not finite; refusing it is the caller's decision
// (CheckpointReader refuses it).
//
// Thread-safety: const member functions may be called concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "workers/checkpoint/dtype.h"

namespace tandem {

struct TensorInfo {
  std::string name;
  std::string dtype_name;        // as the header spells it ("BF16", "I8", ...)
  std::optional<Dtype> dtype;    // set when Tandem converts it
  std::vector<int64_t> shape;
  uint64_t begin = 0;            // byte range in the data section
  uint64_t end = 0;
  int64_t numel() const;
};

// The first element a read met that is not finite (NaN, +inf or -inf).
struct NonFiniteElement {
  int64_t index = 0;  // row-major position in the whole tensor, not the slice read
  float value = 0;
};

// "[4096, 11008]", for messages.
std::string shape_string(std::span<const int64_t> shape);

class SafetensorsFile {
 public:
  // Maps and validates the file; a bad file is an Error naming it (and the
  // tensor, where one is at fault).
  explicit SafetensorsFile(std::filesystem::path path);
  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::filesystem::path& path() const { return path_; }
  // Tensors sorted by name.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(std::string_view name) const;  // nullptr if absent

  // The tensor's raw bytes inside the mapping.
  std::span<const std::byte> bytes(const TensorInfo& tensor) const;

  // Each read returns the first non-finite element it converted (in
  // row-major order), or nullopt when every one was finite.
  using ReadResult = std::optional<NonFiniteElement>;
  // Whole tensor as f32; out.size() must equal numel().
  ReadResult read_f32(const TensorInfo& tensor, std::span<float> out) const;
  // Rows [r0, r1) along dimension 0 (a "row" is everything after dim 0), as
  // f32: out.size() == (r1 - r0) * row length. For output-dim TP splits.
  ReadResult read_rows_f32(const TensorInfo& tensor, int64_t r0, int64_t r1,
                           std::span<float> out) const;
  // Columns [c0, c1) of a 2-D tensor (rows, cols), as a (rows, c1 - c0)
  // row-major block. For input-dim TP splits.
  ReadResult read_cols_f32(const TensorInfo& tensor, int64_t c0, int64_t c1,
                           std::span<float> out) const;

 private:
  void parse_header();
  TensorInfo parse_entry(const std::string& name, const nlohmann::json& entry,
                         uint64_t data_size) const;
  void check_no_overlap() const;
  void release();
  Dtype require_convertible(const TensorInfo& tensor) const;
  [[noreturn]] void fail_corrupt(const std::string& what) const;

  std::filesystem::path path_;
  const std::byte* map_ = nullptr;  // whole file, read-only
  size_t map_size_ = 0;
  size_t data_offset_ = 0;          // 8 + header length
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> index_;  // name → tensors_ position
};

}  // namespace tandem
