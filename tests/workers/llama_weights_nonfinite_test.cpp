// A checkpoint whose weights hold NaN or an infinity is refused at load:
// load_llama_weights on a copy of the shipped tiny target (BF16) with one
// element poked fails with corrupt_data naming the file, the tensor, the
// element and its value, instead of loading a model whose logits are NaN.
// Each tensor-parallel rank checks the slices it reads. (F32 and F16 values
// are covered on hand-written files in checkpoint_nonfinite_test.cpp.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "kernels/backend.h"
#include "safetensors_writer.h"
#include "tests/support/thread_communicator.h"
#include "tests/support/tiny_models.h"
#include "workers/checkpoint/safetensors.h"
#include "workers/llama_weights.h"
#include "workers/model_config.h"

namespace tandem {
namespace {

using test_support::kTinyTarget;

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing_util::read_file_bytes;
using testing_util::TempDir;
using testing_util::write_file;

constexpr uint16_t kBf16Nan = 0x7fc0, kBf16Inf = 0x7f80;

// A copy of the tiny target's config and weights in a fresh directory.
class TinyTargetCopy {
 public:
  TinyTargetCopy() {
    if (!fs::exists(kTinyTarget / "model.safetensors")) {
      throw std::runtime_error("models/tiny/target is missing: restore it from git");
    }
    for (const char* name : {"config.json", "model.safetensors"}) {
      fs::copy_file(kTinyTarget / name, dir_ / name);
    }
  }
  const fs::path& path() const { return dir_.path(); }
  fs::path weights() const { return dir_ / "model.safetensors"; }

  // Overwrites element (row, column) of a BF16 matrix in the copy.
  void poke(const std::string& tensor, int64_t row, int64_t column, uint16_t bits) {
    uint64_t begin = 0;
    int64_t columns = 0;
    {
      SafetensorsFile file(weights());
      const TensorInfo* t = file.find(tensor);
      ASSERT_NE(t, nullptr) << tensor;
      ASSERT_EQ(t->dtype_name, "BF16");
      ASSERT_EQ(t->shape.size(), 2u);
      begin = t->begin;
      columns = t->shape[1];
    }
    std::string bytes = read_file_bytes(weights());
    uint64_t header = 0;
    for (int i = 7; i >= 0; --i) header = (header << 8) | static_cast<uint8_t>(bytes[i]);
    const size_t at = 8 + header + begin + 2 * static_cast<size_t>(row * columns + column);
    bytes[at] = static_cast<char>(bits & 0xff);
    bytes[at + 1] = static_cast<char>(bits >> 8);
    write_file(weights(), bytes);
  }

 private:
  TempDir dir_;
};

// Loads dir as tensor-parallel rank `rank` of `size`; true when it read weights.
// Loading runs no collective, so the ranks' communicators need no threads.
bool loads(const fs::path& dir, int rank = 0, int size = 1) {
  test_support::ThreadGroup group(size);
  test_support::ThreadCommunicator comm(group, rank);
  const TensorShard shard{rank, size, size > 1 ? &comm : nullptr};
  std::unique_ptr<Backend> backend = make_cpu_backend();
  const LlamaWeights w = load_llama_weights(dir, load_model_config(dir), *backend, shard);
  return w.checkpoint_bytes_read > 0;
}
// The Error that loading throws.
Error load_error(const fs::path& dir, int rank = 0, int size = 1) {
  try {
    loads(dir, rank, size);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "rank " << rank << " of " << size << " loaded " << dir;
  return Error(ErrorKind::internal, "");
}

TEST(NonFiniteWeights, CleanCopyLoads) {
  TinyTargetCopy copy;
  EXPECT_TRUE(loads(copy.path()));
}

TEST(NonFiniteWeights, NanInTheLmHeadIsRefused) {
  TinyTargetCopy copy;
  copy.poke("lm_head.weight", 2, 210, kBf16Nan);  // element 2 * 256 + 210
  const Error e = load_error(copy.path());
  EXPECT_EQ(e.kind(), ErrorKind::corrupt_data);
  EXPECT_THAT(e.what(), HasSubstr(copy.weights().string() +
                                  ": tensor 'lm_head.weight' holds a non-finite value (nan) at "
                                  "element 722 (row 2, column 210); the checkpoint is corrupt"));
}

TEST(NonFiniteWeights, InfinityInALayerIsRefused) {
  TinyTargetCopy copy;
  // down_proj is (C 256, I 688); a row-parallel weight, read by columns under TP.
  copy.poke("model.layers.5.mlp.down_proj.weight", 100, 600, kBf16Inf);
  const Error e = load_error(copy.path());
  EXPECT_EQ(e.kind(), ErrorKind::corrupt_data);
  EXPECT_THAT(e.what(),
              HasSubstr(copy.weights().string() +
                        ": tensor 'model.layers.5.mlp.down_proj.weight' holds a non-finite value "
                        "(inf) at element 69400 (row 100, column 600)"));
}

// TP 2 on the tiny target: rank 1 owns vocabulary rows [2048, 4096) and
// down_proj columns [344, 688). A bad element in rank 1's slices is found by
// rank 1, which names it in whole-tensor coordinates; rank 0 never reads it.
TEST(NonFiniteWeights, EachTensorParallelRankChecksTheSlicesItReads) {
  {
    TinyTargetCopy copy;
    copy.poke("lm_head.weight", 3000, 7, kBf16Nan);
    EXPECT_TRUE(loads(copy.path(), 0, 2));
    const Error e = load_error(copy.path(), 1, 2);
    EXPECT_EQ(e.kind(), ErrorKind::corrupt_data);
    EXPECT_THAT(e.what(), HasSubstr("tensor 'lm_head.weight' holds a non-finite value (nan) at "
                                    "element 768007 (row 3000, column 7)"));
  }
  {
    TinyTargetCopy copy;
    copy.poke("model.layers.0.mlp.down_proj.weight", 9, 600, kBf16Inf);
    EXPECT_TRUE(loads(copy.path(), 0, 2));
    const Error e = load_error(copy.path(), 1, 2);
    EXPECT_THAT(e.what(), HasSubstr("tensor 'model.layers.0.mlp.down_proj.weight' holds a "
                                    "non-finite value (inf) at element 6792 (row 9, column 600)"));
  }
}

}  // namespace
}  // namespace tandem
