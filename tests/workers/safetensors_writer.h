// Test helpers: write safetensors files and checkpoint directories by hand,
// so checkpoint tests need no Python and can build corrupt files on purpose.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

namespace tandem::testing_util {

// A fresh directory under the test temp dir, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::path(::testing::TempDir()) / "tandem-ckpt-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Little-endian bytes of a sequence of trivially copyable values.
template <typename T>
std::string raw_bytes(std::span<const T> values) {
  static_assert(std::endian::native == std::endian::little);
  std::string s(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(s.data(), values.data(), s.size());
  return s;
}
inline std::string f32_bytes(const std::vector<float>& v) { return raw_bytes<float>(v); }
inline std::string u16_bytes(const std::vector<uint16_t>& v) { return raw_bytes<uint16_t>(v); }

struct TestTensor {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", ...
  std::vector<int64_t> shape;
  std::string data;   // raw bytes
};

// 8-byte length + header text + data, exactly as the format lays it out.
inline std::string safetensors_from_parts(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

// A valid file holding the tensors back to back, in the given order.
inline std::string safetensors_bytes(const std::vector<TestTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::string data;
  for (const TestTensor& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {data.size(), data.size() + t.data.size()}}};
    data += t.data;
  }
  return safetensors_from_parts(header.dump(), data);
}

inline void write_safetensors(const std::filesystem::path& path,
                              const std::vector<TestTensor>& tensors) {
  write_file(path, safetensors_bytes(tensors));
}

// model.safetensors.index.json for shards {file: tensors}.
inline void write_index(const std::filesystem::path& dir,
                        const std::map<std::string, std::vector<std::string>>& shards) {
  nlohmann::json index;
  index["metadata"] = {{"total_size", 0}};
  index["weight_map"] = nlohmann::json::object();
  for (const auto& [file, names] : shards) {
    for (const std::string& name : names) index["weight_map"][name] = file;
  }
  write_file(dir / "model.safetensors.index.json", index.dump(2));
}

}  // namespace tandem::testing_util
