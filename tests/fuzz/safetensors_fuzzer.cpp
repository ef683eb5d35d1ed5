// Checkpoints (workers/checkpoint/): the safetensors header and tensor
// table, and a sharded checkpoint's index. The input is written as a
// checkpoint directory and opened with CheckpointReader, as a model load
// opens it:
//   - an input that starts with '{' is model.safetensors.index.json up to
//     its first NUL byte, and the rest is the one shard, shard.safetensors;
//   - any other input is model.safetensors.
// Opening either succeeds or throws tandem::Error (never of kind internal).
// When it succeeds, every tensor the table lists is found by name, its
// byte range lies in the data and fits its shape and dtype, and reading it
// (whole, its first rows, the first columns of a matrix) as f32 succeeds,
// throws Error(unsupported) for a dtype Tandem does not convert, or throws
// Error(corrupt_data) for a value that is not finite (random bytes hold NaNs).
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "workers/checkpoint/checkpoint_reader.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

namespace fs = std::filesystem;
using tandem::Error;
using tandem::ErrorKind;
using tandem::fuzz::fuzz_check;

// Tensors larger than this are checked but not read (the reads would only
// cost time; their bounds are what the checks above cover).
constexpr int64_t kMaxReadElements = 1 << 16;

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    fs::path path = fs::temp_directory_path() / ("tandem-safetensors-fuzzer-" + std::to_string(getpid()));
    fs::create_directories(path);
    return path;
  }();
  return dir;
}

void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  fuzz_check(out.good(), "cannot write " + path.string());
}

void check_read(const std::string& what, const auto& read) {
  try {
    read();
  } catch (const Error& error) {
    const bool non_finite = error.kind() == ErrorKind::corrupt_data &&
                            std::string_view(error.what()).find("non-finite value") !=
                                std::string_view::npos;
    fuzz_check(error.kind() == ErrorKind::unsupported || non_finite,
               "reading " + what + " failed with other than unsupported or non-finite: " +
                   error.what());
  }
}

void check_tensors(const tandem::CheckpointReader& reader) {
  for (const tandem::SafetensorsFile& file : reader.files()) {
    for (const tandem::TensorInfo& tensor : file.tensors()) {
      fuzz_check(tensor.begin <= tensor.end, tensor.name + ": byte range ends before it begins");
      const int64_t numel = tensor.numel();
      fuzz_check(numel >= 0, tensor.name + ": negative element count");
      if (tensor.dtype) {
        fuzz_check(tensor.end - tensor.begin == static_cast<uint64_t>(numel) * dtype_size(*tensor.dtype),
                   tensor.name + ": byte range does not fit shape and dtype");
      }
      if (!reader.contains(tensor.name)) continue;  // a shard may hold tensors the index does not list
      const tandem::CheckpointReader::TensorRef ref = reader.find(tensor.name);
      if (ref.file != &file) continue;  // the index maps the name to another shard
      if (numel > kMaxReadElements) continue;
      const std::vector<int64_t>& shape = tensor.shape;
      check_read(tensor.name, [&] { (void)reader.read_f32(tensor.name, shape); });
      if (!shape.empty() && shape[0] > 0) {
        const int64_t rows = std::min<int64_t>(shape[0], 2);
        std::vector<float> out(static_cast<size_t>(rows * (numel / shape[0])));
        check_read(tensor.name + " rows", [&] { reader.read_rows_f32(tensor.name, shape, 0, rows, out); });
      }
      if (shape.size() == 2 && shape[1] > 0) {
        const int64_t cols = std::min<int64_t>(shape[1], 2);
        std::vector<float> out(static_cast<size_t>(shape[0] * cols));
        check_read(tensor.name + " columns", [&] { reader.read_cols_f32(tensor.name, shape, 0, cols, out); });
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const fs::path& dir = scratch_dir();
  fs::remove(dir / "model.safetensors");
  fs::remove(dir / "model.safetensors.index.json");
  fs::remove(dir / "shard.safetensors");
  if (input.starts_with("{")) {
    const size_t split = std::min(input.find('\0'), input.size());
    write_file(dir / "model.safetensors.index.json", input.substr(0, split));
    write_file(dir / "shard.safetensors", input.substr(std::min(split + 1, input.size())));
  } else {
    write_file(dir / "model.safetensors", input);
  }
  try {
    const tandem::CheckpointReader reader(dir);
    check_tensors(reader);
  } catch (const Error& error) {
    fuzz_check(error.kind() != ErrorKind::internal,
               std::string("opening a checkpoint: internal error: ") + error.what());
  }
  return 0;
}
