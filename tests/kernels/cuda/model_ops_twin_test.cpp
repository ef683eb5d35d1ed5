// The CUDA model ops against their CPU twins on the same inputs.
//
// Weights of a narrow dtype are compared with the CPU op run on the same
// weights rounded on the host (kernels/dtype.h), so what is measured is the
// op, not the rounding. Tolerances: elementwise ops and gathers are exact or
// within a few f32 ulps (transcendentals may differ in the last bit between
// the CUDA and glibc libraries); dot products are compared with a reference
// summed in double, within 1e-5 of the sum of |terms|: the GPU's f32 sum
// rounds K times, an error with a standard deviation of about
// 0.3·sqrt(K)·2^-24 of that sum (6e-7 at K = 1024), so 1e-5 is over 15
// standard deviations and a wrong term (about 1e-3 of the sum here) is not.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/ops.h"
#include "tests/support/cuda_twin.h"
#include "tests/support/test_inputs.h"

namespace tandem {
namespace {

using testing::to_backend;
using testing::to_host;

using test_support::random_normal;

// The values a backend storing dtype holds for `values`.
std::vector<float> rounded(const std::vector<float>& values, Dtype dtype) {
  std::vector<float> out(values);
  for (float& v : out) {
    if (dtype == Dtype::bf16) v = bf16_to_f32(f32_to_bf16(v));
    if (dtype == Dtype::f16) v = f16_to_f32(f32_to_f16(v));
  }
  return out;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float abs_tol,
                     float rel_tol, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], abs_tol + rel_tol * std::fabs(want[i])) << what << " at " << i;
  }
}

class ModelOpsTwin : public ::testing::Test {
 protected:
  void SetUp() override {
    TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
    cpu_ = make_cpu_backend();
    gpu_ = testing::cuda_backend(Dtype::bf16);
  }
  std::unique_ptr<Backend> cpu_, gpu_;
};

TEST_F(ModelOpsTwin, EmbeddingGathersEveryDtypeExactly) {
  const int V = 50, C = 96;
  const std::vector<int32_t> ids = {0, 49, 7, -1, 7, 23};
  const auto table = random_normal(static_cast<size_t>(V) * C, 1);
  for (Dtype dtype : {Dtype::f32, Dtype::bf16, Dtype::f16}) {
    auto gpu = testing::cuda_backend(dtype);
    const Buffer device_table = gpu->upload_weights(table);
    ASSERT_EQ(device_table.dtype(), dtype);
    Buffer out = gpu->allocate(ids.size() * C);
    gpu->embedding(ids, device_table.view(), C, out.data());
    const auto want_table = rounded(table, dtype);
    std::vector<float> want(ids.size() * C);
    cpu_->embedding(ids, want_table.data(), C, want.data());
    EXPECT_EQ(to_host(*gpu, out.data(), want.size()), want) << dtype_name(dtype);
  }
}

TEST_F(ModelOpsTwin, RmsnormRopeSwigluAddMatchTheCpu) {
  const int T = 7, C = 4096, heads = 4, D = 128, I = 1000;
  const auto x = random_normal(static_cast<size_t>(T) * C, 2, 3.0f);
  const auto weight = random_normal(C, 3);
  Buffer gx = to_backend(*gpu_, x), gw = to_backend(*gpu_, weight);
  Buffer gout = gpu_->allocate(x.size());
  std::vector<float> want(x.size());
  gpu_->rmsnorm(gx.data(), gw.data(), T, C, 1e-5f, gout.data());
  cpu_->rmsnorm(x.data(), weight.data(), T, C, 1e-5f, want.data());
  expect_near_all(to_host(*gpu_, gout.data(), want.size()), want, 1e-6f, 1e-6f, "rmsnorm");

  // RoPE at positions up to 10^5, where the phase needs double angles.
  const std::vector<int32_t> positions = {0, 1, 17, 4095, 32768, 99999, 131071};
  std::vector<float> inv_freq(D / 2);
  for (int i = 0; i < D / 2; ++i) inv_freq[static_cast<size_t>(i)] = std::pow(500000.0f, -2.0f * i / D);
  auto q = random_normal(static_cast<size_t>(T) * heads * D, 4);
  Buffer gq = to_backend(*gpu_, q), gf = to_backend(*gpu_, inv_freq);
  gpu_->rope(gq.data(), positions, heads, D, gf.data());
  cpu_->rope(q.data(), positions, heads, D, inv_freq.data());
  expect_near_all(to_host(*gpu_, gq.data(), q.size()), q, 1e-5f, 1e-5f, "rope");

  const auto gate_up = random_normal(static_cast<size_t>(T) * 2 * I, 5, 4.0f);
  Buffer ggu = to_backend(*gpu_, gate_up), gs = gpu_->allocate(static_cast<size_t>(T) * I);
  std::vector<float> swiglu(static_cast<size_t>(T) * I);
  gpu_->swiglu(ggu.data(), T, I, gs.data());
  cpu_->swiglu(gate_up.data(), T, I, swiglu.data());
  expect_near_all(to_host(*gpu_, gs.data(), swiglu.size()), swiglu, 1e-6f, 1e-5f, "swiglu");

  auto sum = x;
  cpu_->add(sum.data(), weight.data(), C);  // the first row only
  gpu_->add(gx.data(), gw.data(), C);
  EXPECT_EQ(to_host(*gpu_, gx.data(), sum.size()), sum);  // one rounding each side: exact
}

TEST_F(ModelOpsTwin, AddRmsnormMatchesTheCpuAlsoWritingOverY) {
  const int T = 7, C = 4096;
  const auto x = random_normal(static_cast<size_t>(T) * C, 6, 3.0f);
  const auto y = random_normal(x.size(), 7, 0.5f);
  const auto weight = random_normal(C, 8);
  auto want_x = x;
  std::vector<float> want(x.size());
  cpu_->add_rmsnorm(want_x.data(), y.data(), weight.data(), T, C, 1e-5f, want.data());

  Buffer gx = to_backend(*gpu_, x), gy = to_backend(*gpu_, y), gw = to_backend(*gpu_, weight);
  gpu_->add_rmsnorm(gx.data(), gy.data(), gw.data(), T, C, 1e-5f, gy.data());  // out = y
  EXPECT_EQ(to_host(*gpu_, gx.data(), want_x.size()), want_x);  // the sums: exact
  // The norm as rmsnorm's tolerance: only the double sum's order differs.
  expect_near_all(to_host(*gpu_, gy.data(), want.size()), want, 1e-6f, 1e-6f, "add_rmsnorm");
}

TEST_F(ModelOpsTwin, KvWriteLandsInTheSlots) {
  const int K = 2, D = 64, blocks = 6, block_size = 4;
  const std::vector<int32_t> slots = {5, 0, 23, 12};
  const auto k = random_normal(slots.size() * K * D, 6), v = random_normal(slots.size() * K * D, 7);
  const size_t cache_floats = static_cast<size_t>(blocks) * block_size * K * D;
  Buffer gk = to_backend(*gpu_, k), gv = to_backend(*gpu_, v);
  Buffer kc = gpu_->allocate(cache_floats), vc = gpu_->allocate(cache_floats);
  std::vector<float> want_k(cache_floats), want_v(cache_floats);
  gpu_->kv_write(gk.data(), gv.data(), slots, {kc.data(), vc.data(), blocks, block_size, K, D});
  cpu_->kv_write(k.data(), v.data(), slots, {want_k.data(), want_v.data(), blocks, block_size, K, D});
  EXPECT_EQ(to_host(*gpu_, kc.data(), cache_floats), want_k);
  EXPECT_EQ(to_host(*gpu_, vc.data(), cache_floats), want_v);
}

// The CPU's y = x · wᵀ (+ bias) on the weights the GPU holds, and the scale
// of each element's terms for the tolerance.
struct Reference {
  std::vector<float> y, magnitude;
};
Reference reference_matmul(const std::vector<float>& x, const std::vector<float>& w,
                           const std::vector<float>& bias, int T, int K, int N) {
  Reference r{std::vector<float>(static_cast<size_t>(T) * N), std::vector<float>(static_cast<size_t>(T) * N)};
  for (int t = 0; t < T; ++t)
    for (int n = 0; n < N; ++n) {
      double sum = bias.empty() ? 0.0 : bias[static_cast<size_t>(n)], mag = std::fabs(sum);
      for (int k = 0; k < K; ++k) {
        const double term = static_cast<double>(x[static_cast<size_t>(t) * K + k]) * w[static_cast<size_t>(n) * K + k];
        sum += term;
        mag += std::fabs(term);
      }
      r.y[static_cast<size_t>(t) * N + n] = static_cast<float>(sum);
      r.magnitude[static_cast<size_t>(t) * N + n] = static_cast<float>(mag);
    }
  return r;
}

TEST_F(ModelOpsTwin, MatmulMatchesForEveryDtypeAndBatchSize) {
  // T = 1 (decode), 5 (a verification block), 64 (the last batch-invariant
  // size), 65 and 300 (cuBLAS, whose narrow-weight path also rounds x);
  // K = 1000 takes the scalar path (not a multiple of 8), 1024 the vector one.
  for (Dtype dtype : {Dtype::bf16, Dtype::f16, Dtype::f32}) {
    auto gpu = testing::cuda_backend(dtype);
    for (int K : {1000, 1024}) {
      for (int T : {1, 5, 64, 65, 300}) {
        const int N = 333;
        const auto x = random_normal(static_cast<size_t>(T) * K, 8 + T);
        const auto w = random_normal(static_cast<size_t>(N) * K, 9, 0.05f);
        const auto bias = random_normal(N, 10);
        const bool x_rounded = T > 64 && dtype != Dtype::f32;
        const Reference want =
            reference_matmul(x_rounded ? rounded(x, dtype) : x, rounded(w, dtype), bias, T, K, N);
        Buffer gx = to_backend(*gpu, x), gw = gpu->upload_weights(w), gb = to_backend(*gpu, bias);
        Buffer gy = gpu->allocate(static_cast<size_t>(T) * N);
        gpu->matmul(gx.data(), gw.view(), gb.data(), T, K, N, gy.data());
        const auto got = to_host(*gpu, gy.data(), want.y.size());
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_NEAR(got[i], want.y[i], 1e-5f * want.magnitude[i])
              << dtype_name(dtype) << " T " << T << " K " << K << " at " << i;
        }
      }
    }
  }
}

TEST_F(ModelOpsTwin, MatmulIsBatchInvariantUpToTheSkinnyLimit) {
  // Each row's result must be bit-identical whether it is computed alone or
  // among up to 64 rows: what makes greedy speculation equal greedy decoding.
  const int K = 2048, N = 512, T = 64;
  const auto x = random_normal(static_cast<size_t>(T) * K, 11);
  const auto w = random_normal(static_cast<size_t>(N) * K, 12, 0.05f);
  Buffer gx = to_backend(*gpu_, x), gw = gpu_->upload_weights(w);
  Buffer all = gpu_->allocate(static_cast<size_t>(T) * N), one = gpu_->allocate(N);
  gpu_->matmul(gx.data(), gw.view(), nullptr, T, K, N, all.data());
  const auto batched = to_host(*gpu_, all.data(), static_cast<size_t>(T) * N);
  for (int t : {0, 1, 15, 16, 17, 63}) {
    gpu_->matmul(gx.data() + static_cast<size_t>(t) * K, gw.view(), nullptr, 1, K, N, one.data());
    const auto alone = to_host(*gpu_, one.data(), N);
    for (int n = 0; n < N; ++n)
      ASSERT_EQ(alone[static_cast<size_t>(n)], batched[static_cast<size_t>(t) * N + n]) << "row " << t;
  }
}

TEST_F(ModelOpsTwin, BatchInvariantMatmulHoldsAtAnyRowCount) {
  // set_batch_invariant(true): 300 rows (a prefill chunk, where cuBLAS would
  // take over) still give each row bit for bit its result alone, and the
  // results stay within the f32 tolerance of the reference.
  auto gpu = testing::cuda_backend(Dtype::bf16);
  gpu->set_batch_invariant(true);
  const int K = 1024, N = 333, T = 300;
  const auto x = random_normal(static_cast<size_t>(T) * K, 13);
  const auto w = random_normal(static_cast<size_t>(N) * K, 14, 0.05f);
  const Reference want = reference_matmul(x, rounded(w, Dtype::bf16), {}, T, K, N);
  Buffer gx = to_backend(*gpu, x), gw = gpu->upload_weights(w);
  Buffer all = gpu->allocate(static_cast<size_t>(T) * N), one = gpu->allocate(N);
  gpu->matmul(gx.data(), gw.view(), nullptr, T, K, N, all.data());
  const auto batched = to_host(*gpu, all.data(), static_cast<size_t>(T) * N);
  for (size_t i = 0; i < batched.size(); ++i)
    ASSERT_NEAR(batched[i], want.y[i], 1e-5f * want.magnitude[i]) << "at " << i;
  for (int t : {0, 64, 65, 200, 299}) {
    gpu->matmul(gx.data() + static_cast<size_t>(t) * K, gw.view(), nullptr, 1, K, N, one.data());
    const auto alone = to_host(*gpu, one.data(), N);
    for (int n = 0; n < N; ++n)
      ASSERT_EQ(alone[static_cast<size_t>(n)], batched[static_cast<size_t>(t) * N + n]) << "row " << t;
  }
}

// skinny_matmul_tiled (Backend::set_tiled_skinny_matmul(true)) against the
// reference in double, and against skinny_matmul bit for bit: it promises
// each element's sum in the same order, so anything but equality is a bug
// in its indexing (a group, a lane, a column or a row out of place).
// Shapes cover its edges: K of one group (8), of a chunk and a bit (264,
// 520: lanes without a second group, a short last chunk), a multiple of 8
// that is not of the chunk (1,544) and a model's width (4,096); N at
// kTiledMinColumns (the backend runs skinny_matmul below it, but for one
// row) and past it by 1 to 3 columns of a warp's 4, and at one row below
// a block's 32 columns; T at 1, at and past the 4-, 8- and 16-row tiles, and
// at 64; blocks of 1 to 8 warps; K = 1,000 (not a multiple of 8) falls
// back to skinny_matmul.
struct SkinnyShape {
  int T, K, N;
};
constexpr SkinnyShape kSkinnyShapes[] = {
    {1, 8, 5},      {1, 264, 33},    {1, 4096, 64},
    {1, 8, 1024},   {1, 264, 1025},  {1, 4096, 1024},  {2, 520, 1031},  {3, 1544, 1024},
    {4, 264, 1026}, {5, 1024, 1101}, {16, 520, 1040},  {17, 1544, 1065}, {33, 4096, 1027},
    {64, 1024, 1057}, {8, 1544, 1030}, {9, 264, 1024}, {5, 1000, 1057},
    // Blocks of 2, 4 and 8 warps (N sets them), the last block partly past N.
    {5, 1024, 2050}, {1, 4096, 4100}, {17, 520, 8200}};

// Every shape reaches the tiled kernel through the backend (but the one
// whose K is not a multiple of 8): one where it does not pay would compare
// skinny_matmul with itself.
constexpr bool every_shape_reaches_the_tiled_kernel() {
  for (const SkinnyShape& s : kSkinnyShapes)
    if (!cuda::skinny_matmul_tiled_pays(s.T, s.N)) return false;
  return true;
}
static_assert(every_shape_reaches_the_tiled_kernel());

// One matmul on `backend`; y as the host sees it.
std::vector<float> run_matmul(Backend& backend, const std::vector<float>& x,
                              const std::vector<float>& w, const SkinnyShape& s) {
  Buffer gx = to_backend(backend, x), gw = backend.upload_weights(w);
  Buffer gy = backend.allocate(static_cast<size_t>(s.T) * s.N);
  backend.matmul(gx.data(), gw.view(), nullptr, s.T, s.K, s.N, gy.data());
  return to_host(backend, gy.data(), static_cast<size_t>(s.T) * s.N);
}

TEST(SkinnyTiledTwin, MatchesTheCpuForEveryDtypeShapeAndRowCount) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  for (Dtype dtype : {Dtype::bf16, Dtype::f16, Dtype::f32}) {
    auto gpu = testing::cuda_backend(dtype);
    gpu->set_tiled_skinny_matmul(true);
    for (const SkinnyShape& s : kSkinnyShapes) {
      const auto x = random_normal(static_cast<size_t>(s.T) * s.K, 20 + s.T);
      const auto w = random_normal(static_cast<size_t>(s.N) * s.K, 21 + s.K, 0.05f);
      const Reference want = reference_matmul(x, rounded(w, dtype), {}, s.T, s.K, s.N);
      const std::vector<float> got = run_matmul(*gpu, x, w, s);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want.y[i], 1e-5f * want.magnitude[i])
            << dtype_name(dtype) << " T " << s.T << " K " << s.K << " N " << s.N << " at " << i;
    }
  }
}

TEST(SkinnyTiledSelfCheck, EqualsTheSkinnyKernelBitForBit) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  for (Dtype dtype : {Dtype::bf16, Dtype::f16, Dtype::f32}) {
    auto plain = testing::cuda_backend(dtype), tiled = testing::cuda_backend(dtype);
    tiled->set_tiled_skinny_matmul(true);
    for (const SkinnyShape& s : kSkinnyShapes) {
      const auto x = random_normal(static_cast<size_t>(s.T) * s.K, 30 + s.T);
      const auto w = random_normal(static_cast<size_t>(s.N) * s.K, 31 + s.K, 0.05f);
      const std::vector<float> a = run_matmul(*plain, x, w, s), b = run_matmul(*tiled, x, w, s);
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_EQ(a[i], b[i]) << dtype_name(dtype) << " T " << s.T << " K " << s.K << " N "
                              << s.N << " at row " << i / s.N << ", column " << i % s.N;
    }
  }
}

TEST(SkinnyTiledSelfCheck, EachRowAloneEqualsItsRowInTheBatch) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  // The batch invariance decoding relies on, directly: 64 rows (four
  // 16-row tiles), 1 row (the T = 1 tile), 3 (the 4-row tile) and 6 (the
  // 8-row tile). Where N is below kTiledMinColumns, the one row runs on
  // the tiled kernel and the others on skinny_matmul, so the two must
  // agree there too.
  auto gpu = testing::cuda_backend(Dtype::bf16);
  gpu->set_tiled_skinny_matmul(true);
  const int K = 1544, T = 64;
  for (int N : {70, cuda::kTiledMinColumns + 6}) {
    const auto x = random_normal(static_cast<size_t>(T) * K, 40);
    const auto w = random_normal(static_cast<size_t>(N) * K, 41, 0.05f);
    Buffer gx = to_backend(*gpu, x), gw = gpu->upload_weights(w);
    Buffer all = gpu->allocate(static_cast<size_t>(T) * N), few = gpu->allocate(6 * N);
    gpu->matmul(gx.data(), gw.view(), nullptr, T, K, N, all.data());
    const auto batched = to_host(*gpu, all.data(), static_cast<size_t>(T) * N);
    for (int t : {0, 15, 16, 17, 58}) {
      for (int rows : {1, 3, 6}) {
        gpu->matmul(gx.data() + static_cast<size_t>(t) * K, gw.view(), nullptr, rows, K, N,
                    few.data());
        const auto alone = to_host(*gpu, few.data(), static_cast<size_t>(rows) * N);
        for (int n = 0; n < rows * N; ++n)
          ASSERT_EQ(alone[static_cast<size_t>(n)], batched[static_cast<size_t>(t) * N + n])
              << "N " << N << ", row " << t << " among " << rows;
      }
    }
  }
}

}  // namespace
}  // namespace tandem
