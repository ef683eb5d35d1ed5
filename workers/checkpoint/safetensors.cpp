// Memory-mapped safetensors reading (see safetensors.h).
#include "workers/checkpoint/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/error.h"

namespace tandem {
namespace {

using nlohmann::json;

// A real header is kilobytes (a few hundred bytes per tensor); anything near
// this is a corrupt length field, and parsing it would only waste memory.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

// Product of dims, or nullopt when it overflows int64 (a corrupt shape).
std::optional<int64_t> checked_numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > INT64_MAX / d) return std::nullopt;
    n *= d;
  }
  return n;
}

}  // namespace

int64_t TensorInfo::numel() const { return checked_numel(shape).value_or(0); }

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

SafetensorsFile::SafetensorsFile(std::filesystem::path path) : path_(std::move(path)) {
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw Error(errno == ENOENT ? ErrorKind::not_found : ErrorKind::invalid_argument,
                path_.string() + ": cannot open (" + std::strerror(errno) +
                    "). Hint: check the checkpoint directory and its permissions");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorKind::invalid_argument, path_.string() + ": not a regular file");
  }
  map_size_ = static_cast<size_t>(st.st_size);
  if (map_size_ < 8) {
    ::close(fd);
    throw Error(ErrorKind::corrupt_data,
                path_.string() + ": truncated (" + std::to_string(map_size_) +
                    " bytes, shorter than the 8-byte header length). Hint: re-download the file");
  }
  void* map = ::mmap(nullptr, map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
  int map_errno = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (map == MAP_FAILED) {
    throw Error(ErrorKind::out_of_resources,
                path_.string() + ": mmap failed (" + std::strerror(map_errno) + ")");
  }
  map_ = static_cast<const std::byte*>(map);
  try {
    parse_header();
  } catch (...) {
    release();
    throw;
  }
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept { *this = std::move(other); }

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
    data_offset_ = std::exchange(other.data_offset_, 0);
    tensors_ = std::move(other.tensors_);
    index_ = std::move(other.index_);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() { release(); }

void SafetensorsFile::release() {
  if (map_ != nullptr) {
    ::munmap(const_cast<std::byte*>(map_), map_size_);
    map_ = nullptr;
    map_size_ = 0;
  }
}

void SafetensorsFile::fail_corrupt(const std::string& what) const {
  throw Error(ErrorKind::corrupt_data,
              path_.string() + ": " + what +
                  ". Hint: the file is truncated or corrupt; re-download the checkpoint");
}

void SafetensorsFile::parse_header() {
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(map_[i]);
  if (header_len > kMaxHeaderBytes || header_len > map_size_ - 8) {
    fail_corrupt("header length " + std::to_string(header_len) + " exceeds the file size " +
                 std::to_string(map_size_) + " (or the 100 MB sanity limit)");
  }
  data_offset_ = 8 + static_cast<size_t>(header_len);
  const uint64_t data_size = map_size_ - data_offset_;
  const char* text = reinterpret_cast<const char*>(map_ + 8);
  json header = json::parse(text, text + header_len, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) fail_corrupt("header is not a JSON object");

  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;  // free-form strings, unused
    index_.emplace(it.key(), tensors_.size());
    tensors_.push_back(parse_entry(it.key(), it.value(), data_size));
  }
  check_no_overlap();
}

TensorInfo SafetensorsFile::parse_entry(const std::string& name, const nlohmann::json& entry,
                                        uint64_t data_size) const {
  auto bad = [&](const std::string& what) { fail_corrupt("tensor '" + name + "': " + what); };
  if (!entry.is_object()) bad("header entry is not an object");
  auto dtype = entry.find("dtype");
  auto shape = entry.find("shape");
  auto offsets = entry.find("data_offsets");
  if (dtype == entry.end() || !dtype->is_string()) bad("missing or non-string 'dtype'");
  if (shape == entry.end() || !shape->is_array()) bad("missing or non-list 'shape'");
  if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
    bad("'data_offsets' must be two non-negative integers");
  }
  TensorInfo t;
  t.name = name;
  t.dtype_name = dtype->get<std::string>();
  t.dtype = convertible_dtype(t.dtype_name);
  for (const json& d : *shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      bad("shape " + shape->dump() + " has a dimension that is not a non-negative integer");
    }
    t.shape.push_back(d.get<int64_t>());
  }
  t.begin = (*offsets)[0].get<uint64_t>();
  t.end = (*offsets)[1].get<uint64_t>();
  if (t.end < t.begin) bad("data_offsets end precedes begin");
  if (t.end > data_size) {
    bad("data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
        ") run past the end of the data section (" + std::to_string(data_size) + " bytes)");
  }
  std::optional<int64_t> numel = checked_numel(t.shape);
  if (!numel) bad("shape " + shape_string(t.shape) + " overflows");
  // Unknown or sub-byte types cannot be size-checked here; reading them
  // fails anyway.
  if (size_t elem = safetensors_dtype_size(t.dtype_name); elem != 0) {
    const uint64_t n = static_cast<uint64_t>(*numel);
    if (n > UINT64_MAX / elem || n * elem != t.end - t.begin) {
      bad("shape " + shape_string(t.shape) + " of " + t.dtype_name + " needs " +
          std::to_string(n * elem) + " bytes but data_offsets span " +
          std::to_string(t.end - t.begin));
    }
  }
  return t;
}

void SafetensorsFile::check_no_overlap() const {
  // Two tensors sharing bytes means a corrupt header (the format lays them
  // out back to back). Empty tensors occupy no bytes and cannot overlap.
  std::vector<const TensorInfo*> by_offset;
  for (const TensorInfo& t : tensors_) {
    if (t.end > t.begin) by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->begin < by_offset[i - 1]->end) {
      fail_corrupt("tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name +
                   "' overlap in the data section");
    }
  }
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const std::byte> SafetensorsFile::bytes(const TensorInfo& tensor) const {
  return {map_ + data_offset_ + tensor.begin, static_cast<size_t>(tensor.end - tensor.begin)};
}

Dtype SafetensorsFile::require_convertible(const TensorInfo& tensor) const {
  if (!tensor.dtype) {
    throw Error(ErrorKind::unsupported,
                path_.string() + ": tensor '" + tensor.name + "' has dtype " + tensor.dtype_name +
                    ", which Tandem does not load. Hint: convert the checkpoint to F32, F16 or "
                    "BF16 (quantized checkpoints are not supported)");
  }
  return *tensor.dtype;
}

SafetensorsFile::ReadResult SafetensorsFile::read_f32(const TensorInfo& tensor,
                                                      std::span<float> out) const {
  return read_rows_f32(tensor, 0, tensor.shape.empty() ? 1 : tensor.shape[0], out);
}

SafetensorsFile::ReadResult SafetensorsFile::read_rows_f32(const TensorInfo& tensor, int64_t r0,
                                                           int64_t r1,
                                                           std::span<float> out) const {
  Dtype dtype = require_convertible(tensor);
  // A 0-d tensor (scalar) is one row of one element.
  const int64_t rows = tensor.shape.empty() ? 1 : tensor.shape[0];
  const int64_t row_len = rows == 0 ? 0 : tensor.numel() / rows;
  if (r0 < 0 || r1 < r0 || r1 > rows || out.size() != static_cast<size_t>((r1 - r0) * row_len)) {
    throw Error(ErrorKind::internal,
                path_.string() + ": tensor '" + tensor.name + "' " + shape_string(tensor.shape) +
                    ": bad row range [" + std::to_string(r0) + ", " + std::to_string(r1) +
                    ") or output size " + std::to_string(out.size()));
  }
  const size_t elem = dtype_size(dtype);
  const std::byte* src = bytes(tensor).data() + static_cast<size_t>(r0 * row_len) * elem;
  const size_t bad = convert_to_f32(dtype, src, out.size(), out.data());
  if (bad == out.size()) return std::nullopt;
  return NonFiniteElement{r0 * row_len + static_cast<int64_t>(bad), out[bad]};
}

SafetensorsFile::ReadResult SafetensorsFile::read_cols_f32(const TensorInfo& tensor, int64_t c0,
                                                           int64_t c1,
                                                           std::span<float> out) const {
  Dtype dtype = require_convertible(tensor);
  if (tensor.shape.size() != 2) {
    throw Error(ErrorKind::internal, path_.string() + ": tensor '" + tensor.name + "' " +
                                         shape_string(tensor.shape) +
                                         ": a column range needs a 2-D tensor");
  }
  const int64_t rows = tensor.shape[0], cols = tensor.shape[1], width = c1 - c0;
  if (c0 < 0 || c1 < c0 || c1 > cols || out.size() != static_cast<size_t>(rows * width)) {
    throw Error(ErrorKind::internal,
                path_.string() + ": tensor '" + tensor.name + "' " + shape_string(tensor.shape) +
                    ": bad column range [" + std::to_string(c0) + ", " + std::to_string(c1) +
                    ") or output size " + std::to_string(out.size()));
  }
  const size_t elem = dtype_size(dtype);
  const std::byte* base = bytes(tensor).data();
  ReadResult first;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = out.data() + r * width;
    const size_t bad = convert_to_f32(dtype, base + static_cast<size_t>(r * cols + c0) * elem,
                                      static_cast<size_t>(width), row);
    if (!first && bad != static_cast<size_t>(width)) {
      first = NonFiniteElement{r * cols + c0 + static_cast<int64_t>(bad), row[bad]};
    }
  }
  return first;
}

}  // namespace tandem
