// CheckpointReader: the tensors of a Hugging Face checkpoint directory.
//
// The directory holds either one `model.safetensors` or shards listed by
// `model.safetensors.index.json` ({"weight_map": {tensor name: shard file}}).
// Each shard is mapped once, when the reader is made; reads convert to f32
// and check the shape the caller expects, so every error names the file and
// the tensor. A read that meets a NaN or an infinity refuses the checkpoint
// (Error corrupt_data naming the file, the tensor, the element and its
// value): weights must be finite, or every logit they touch is NaN. Only
// the elements read are checked, in the conversion's own pass. Row and column ranges let a tensor-parallel rank read only its
// slice of a weight; bytes_read() counts what they touched, so a rank can
// report how much of the checkpoint it read.
//
// Thread-safety: const member functions may be called concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "workers/checkpoint/safetensors.h"

namespace tandem {

class CheckpointReader {
 public:
  explicit CheckpointReader(const std::filesystem::path& model_dir);
  CheckpointReader(CheckpointReader&&) noexcept = default;
  CheckpointReader& operator=(CheckpointReader&&) noexcept = default;

  struct TensorRef {
    const SafetensorsFile* file;
    const TensorInfo* info;
  };
  bool contains(std::string_view name) const;
  // The tensor, or a not_found Error naming it and the files searched.
  TensorRef find(std::string_view name) const;

  // Whole tensor as f32 after checking its shape; out.size() == numel.
  void read_f32(std::string_view name, std::span<const int64_t> expected_shape,
                std::span<float> out) const;
  std::vector<float> read_f32(std::string_view name,
                              std::span<const int64_t> expected_shape) const;
  // Rows [r0, r1) along dimension 0, after checking the full shape.
  void read_rows_f32(std::string_view name, std::span<const int64_t> expected_shape, int64_t r0,
                     int64_t r1, std::span<float> out) const;
  // Columns [c0, c1) of a 2-D tensor, after checking the full shape.
  void read_cols_f32(std::string_view name, std::span<const int64_t> expected_shape, int64_t c0,
                     int64_t c1, std::span<float> out) const;

  // Tensor bytes (in their stored dtype) the read_* calls have converted so
  // far: for a tensor-parallel rank, the size of its slices.
  int64_t bytes_read() const { return bytes_read_->load(std::memory_order_relaxed); }

  // The dtype every weight matrix (every tensor of two or more dimensions)
  // is stored in, when they all share one Tandem converts; nullopt when
  // they differ, or for a checkpoint without one.
  std::optional<Dtype> matrix_dtype() const;

  const std::filesystem::path& directory() const { return dir_; }
  const std::vector<SafetensorsFile>& files() const { return files_; }

 private:
  void open_index(const std::filesystem::path& index_path);
  TensorRef find_checked(std::string_view name, std::span<const int64_t> expected_shape) const;
  std::string searched_files() const;
  void count(const TensorRef& ref, size_t elements) const;
  // Throws corrupt_data when a read found a non-finite element.
  void refuse_non_finite(const TensorRef& ref, const SafetensorsFile::ReadResult& found) const;

  std::filesystem::path dir_;
  std::filesystem::path index_path_;  // empty for a single-file checkpoint
  std::vector<SafetensorsFile> files_;
  // Per index entry: tensor name → position in files_.
  std::vector<std::pair<std::string, size_t>> weight_map_;
  // Behind a pointer so that the reader stays movable; atomic because const
  // reads may run concurrently.
  std::unique_ptr<std::atomic<int64_t>> bytes_read_ = std::make_unique<std::atomic<int64_t>>(0);
};

}  // namespace tandem
