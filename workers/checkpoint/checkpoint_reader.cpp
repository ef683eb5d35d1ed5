// Reading a checkpoint directory's tensors (see checkpoint_reader.h).
#include "workers/checkpoint/checkpoint_reader.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"

namespace tandem {
namespace {

using nlohmann::json;

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

// Shards live next to the index; a name that climbs out of the directory is
// a corrupt (or hostile) index, not a path to follow.
bool is_plain_file_name(const std::string& name) {
  std::filesystem::path p(name);
  return !name.empty() && p.is_relative() && p.has_filename() && p == p.filename() &&
         name != "." && name != "..";
}

// "nan", "inf" or "-inf", as the message names a non-finite value.
const char* non_finite_name(float value) {
  if (std::isnan(value)) return "nan";
  return value > 0 ? "inf" : "-inf";
}

// Where a row-major element index lies: " (row 2, column 210)" in a matrix,
// " (index [1, 0, 3])" in a tensor of more dimensions, nothing in a vector.
std::string position_of(std::span<const int64_t> shape, int64_t index) {
  if (shape.size() < 2) return "";
  std::vector<int64_t> at(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    at[d] = index % shape[d];  // no dimension is 0: the read found an element
    index /= shape[d];
  }
  if (shape.size() == 2) {
    return " (row " + std::to_string(at[0]) + ", column " + std::to_string(at[1]) + ")";
  }
  return " (index " + shape_string(at) + ")";
}

}  // namespace

CheckpointReader::CheckpointReader(const std::filesystem::path& model_dir) : dir_(model_dir) {
  // The single file wins when both exist, as in Hugging Face's loader.
  std::error_code ec;
  if (std::filesystem::exists(dir_ / kSingleFile, ec)) {
    files_.emplace_back(dir_ / kSingleFile);
  } else if (std::filesystem::exists(dir_ / kIndexFile, ec)) {
    open_index(dir_ / kIndexFile);
  } else {
    throw Error(ErrorKind::not_found,
                dir_.string() + ": neither " + kSingleFile + " nor " + kIndexFile +
                    " exists. Hint: --model must name a Hugging Face checkpoint directory with "
                    "safetensors weights (convert .bin / .pth checkpoints first)");
  }
}

void CheckpointReader::open_index(const std::filesystem::path& index_path) {
  index_path_ = index_path;
  std::ifstream in(index_path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  json index = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  auto corrupt = [&](const std::string& what) {
    throw Error(ErrorKind::corrupt_data,
                index_path.string() + ": " + what +
                    ". Hint: the index is corrupt; re-download model.safetensors.index.json");
  };
  if (!in || index.is_discarded() || !index.is_object()) corrupt("not a JSON object");
  auto map = index.find("weight_map");
  if (map == index.end() || !map->is_object()) corrupt("key 'weight_map' is missing or not an object");

  // Each shard opens once however many tensors name it.
  std::map<std::string, size_t> shard_slot;
  for (auto it = map->begin(); it != map->end(); ++it) {
    if (!it.value().is_string()) corrupt("weight_map entry '" + it.key() + "' is not a file name");
    const std::string file = it.value().get<std::string>();
    if (!is_plain_file_name(file)) {
      corrupt("weight_map entry '" + it.key() + "' names '" + file +
              "', which is not a file in the checkpoint directory");
    }
    auto [slot, inserted] = shard_slot.emplace(file, files_.size());
    if (inserted) files_.emplace_back(dir_ / file);
    weight_map_.emplace_back(it.key(), slot->second);
  }
  if (files_.empty()) corrupt("weight_map lists no tensors");
  // json objects iterate in key order, so weight_map_ is sorted for lookup.
}

std::string CheckpointReader::searched_files() const {
  std::string s;
  if (!index_path_.empty()) s = index_path_.filename().string() + " weight_map, then ";
  for (size_t i = 0; i < files_.size(); ++i) {
    if (i > 0) s += ", ";
    s += files_[i].path().filename().string();
  }
  return s;
}

bool CheckpointReader::contains(std::string_view name) const {
  return std::any_of(files_.begin(), files_.end(),
                     [&](const SafetensorsFile& f) { return f.find(name) != nullptr; });
}

CheckpointReader::TensorRef CheckpointReader::find(std::string_view name) const {
  // The index says where a tensor should be; check that the shard agrees.
  auto entry = std::lower_bound(weight_map_.begin(), weight_map_.end(), name,
                                [](const auto& e, std::string_view n) { return e.first < n; });
  if (entry != weight_map_.end() && entry->first == name) {
    const SafetensorsFile& file = files_[entry->second];
    if (const TensorInfo* info = file.find(name)) return {&file, info};
    throw Error(ErrorKind::corrupt_data,
                file.path().string() + ": has no tensor '" + std::string(name) + "', but " +
                    index_path_.filename().string() +
                    " says it is there. Hint: the shard and the index come from different "
                    "downloads; re-download the checkpoint");
  }
  // Not indexed (or no index): any file that has it will do.
  for (const SafetensorsFile& file : files_) {
    if (const TensorInfo* info = file.find(name)) return {&file, info};
  }
  throw Error(ErrorKind::not_found,
              dir_.string() + ": tensor '" + std::string(name) + "' not found (searched " +
                  searched_files() +
                  "). Hint: check that config.json matches the weights (architecture, "
                  "num_hidden_layers, tie_word_embeddings)");
}

CheckpointReader::TensorRef CheckpointReader::find_checked(
    std::string_view name, std::span<const int64_t> expected_shape) const {
  TensorRef ref = find(name);
  if (!std::equal(expected_shape.begin(), expected_shape.end(), ref.info->shape.begin(),
                  ref.info->shape.end())) {
    throw Error(ErrorKind::invalid_argument,
                ref.file->path().string() + ": tensor '" + std::string(name) + "' has shape " +
                    shape_string(ref.info->shape) + " but the model config expects " +
                    shape_string(expected_shape) +
                    ". Hint: check that config.json belongs to these weights");
  }
  return ref;
}

void CheckpointReader::count(const TensorRef& ref, size_t elements) const {
  // Only called after a successful read, so the dtype is one Tandem converts.
  const size_t bytes = elements * (ref.info->dtype ? dtype_size(*ref.info->dtype) : 0);
  bytes_read_->fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
}

void CheckpointReader::refuse_non_finite(const TensorRef& ref,
                                         const SafetensorsFile::ReadResult& found) const {
  if (!found) return;
  throw Error(ErrorKind::corrupt_data,
              ref.file->path().string() + ": tensor '" + ref.info->name +
                  "' holds a non-finite value (" + non_finite_name(found->value) +
                  ") at element " + std::to_string(found->index) +
                  position_of(ref.info->shape, found->index) +
                  "; the checkpoint is corrupt. Hint: every weight must be a finite number; "
                  "re-download the checkpoint, or re-export it from a model whose weights are "
                  "finite");
}

void CheckpointReader::read_f32(std::string_view name, std::span<const int64_t> expected_shape,
                                std::span<float> out) const {
  TensorRef ref = find_checked(name, expected_shape);
  refuse_non_finite(ref, ref.file->read_f32(*ref.info, out));
  count(ref, out.size());
}

std::vector<float> CheckpointReader::read_f32(std::string_view name,
                                              std::span<const int64_t> expected_shape) const {
  TensorRef ref = find_checked(name, expected_shape);
  std::vector<float> out(static_cast<size_t>(ref.info->numel()));
  refuse_non_finite(ref, ref.file->read_f32(*ref.info, out));
  count(ref, out.size());
  return out;
}

void CheckpointReader::read_rows_f32(std::string_view name, std::span<const int64_t> expected_shape,
                                     int64_t r0, int64_t r1, std::span<float> out) const {
  TensorRef ref = find_checked(name, expected_shape);
  refuse_non_finite(ref, ref.file->read_rows_f32(*ref.info, r0, r1, out));
  count(ref, out.size());
}

void CheckpointReader::read_cols_f32(std::string_view name, std::span<const int64_t> expected_shape,
                                     int64_t c0, int64_t c1, std::span<float> out) const {
  TensorRef ref = find_checked(name, expected_shape);
  refuse_non_finite(ref, ref.file->read_cols_f32(*ref.info, c0, c1, out));
  count(ref, out.size());
}

std::optional<Dtype> CheckpointReader::matrix_dtype() const {
  std::optional<Dtype> shared;
  bool any = false;
  for (const SafetensorsFile& file : files_) {
    for (const TensorInfo& tensor : file.tensors()) {
      if (tensor.shape.size() < 2) continue;  // norms and biases: f32 in memory whatever they are
      if (!tensor.dtype || (any && shared != tensor.dtype)) return std::nullopt;
      shared = tensor.dtype;
      any = true;
    }
  }
  return shared;
}

}  // namespace tandem
