// placement.weight_dtype auto (coordinator/models/weight_dtype.h): the
// checkpoints' own 16-bit dtype where every model on a backend shares one,
// else the backend's default; an asked dtype always wins.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "coordinator/models/weight_dtype.h"
#include "tests/support/tiny_models.h"
#include "tests/workers/safetensors_writer.h"

namespace tandem {
namespace {

using testing_util::TempDir;
using testing_util::u16_bytes;
using testing_util::write_safetensors;

// A checkpoint directory holding one 2 x 2 matrix stored as `dtype`.
void write_matrix_checkpoint(const TempDir& dir, const std::string& dtype) {
  const std::string bytes = dtype == "F32" ? std::string(16, '\0') : u16_bytes({0, 0, 0, 0});
  write_safetensors(dir / "model.safetensors", {{"w", dtype, {2, 2}, bytes}});
}

Dtype auto_dtype(BackendKind kind, const std::vector<std::filesystem::path>& checkpoints) {
  return choose_weight_dtype(kind, std::nullopt, checkpoints).dtype;
}

TEST(WeightDtype, AutoKeepsTheDtypeTheCheckpointsShare) {
  const std::vector<std::filesystem::path> tiny{test_support::kTinyTarget, test_support::kTinyDraft};
  const WeightDtypeChoice choice = choose_weight_dtype(BackendKind::cpu, std::nullopt, tiny);
  EXPECT_EQ(choice.dtype, Dtype::bf16);  // models/tiny is stored in BF16
  EXPECT_NE(choice.why.find("auto"), std::string::npos) << choice.why;
  EXPECT_EQ(auto_dtype(BackendKind::cuda, tiny), Dtype::bf16);

  TempDir half;
  write_matrix_checkpoint(half, "F16");
  EXPECT_EQ(auto_dtype(BackendKind::cpu, {half.path()}), Dtype::f16);
  EXPECT_EQ(auto_dtype(BackendKind::cuda, {half.path()}), Dtype::f16);
}

TEST(WeightDtype, AutoFallsBackToTheBackendsDefault) {
  TempDir f32, half;
  write_matrix_checkpoint(f32, "F32");
  write_matrix_checkpoint(half, "F16");
  // An f32 checkpoint: the CPU keeps f32, CUDA its bf16.
  EXPECT_EQ(auto_dtype(BackendKind::cpu, {f32.path()}), Dtype::f32);
  EXPECT_EQ(auto_dtype(BackendKind::cuda, {f32.path()}), Dtype::bf16);
  // Models on one backend that disagree: nothing is narrowed that was not stored narrow.
  EXPECT_EQ(auto_dtype(BackendKind::cpu, {test_support::kTinyTarget, f32.path()}), Dtype::f32);
  EXPECT_EQ(auto_dtype(BackendKind::cpu, {test_support::kTinyTarget, half.path()}), Dtype::f32);
  // No checkpoint (dummy weights).
  EXPECT_EQ(auto_dtype(BackendKind::cpu, {}), Dtype::f32);
  EXPECT_EQ(auto_dtype(BackendKind::cuda, {}), Dtype::bf16);
}

TEST(WeightDtype, AnAskedDtypeWins) {
  const std::vector<std::filesystem::path> tiny{test_support::kTinyTarget};
  EXPECT_EQ(choose_weight_dtype(BackendKind::cpu, Dtype::f32, tiny).dtype, Dtype::f32);
  EXPECT_EQ(choose_weight_dtype(BackendKind::cpu, Dtype::f16, tiny).dtype, Dtype::f16);
  EXPECT_EQ(choose_weight_dtype(BackendKind::cuda, Dtype::f32, {}).dtype, Dtype::f32);
}

}  // namespace
}  // namespace tandem
