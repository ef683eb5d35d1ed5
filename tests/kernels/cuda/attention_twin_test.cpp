// The CUDA attention op against its CPU twin through the Backend interface:
// ragged batches mixing prefill chunks, verification (γ+1 rows) and decode
// rows over shuffled, non-contiguous block tables, GQA, head dimensions from
// 64 to 256, contexts of over a thousand positions. Both backends get the
// same K/V cache contents by upload (not kv_write), so only attention is
// under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "tests/support/cuda_twin.h"

namespace tandem {
namespace {

std::vector<float> random_normal(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> values(n);
  for (float& x : values) x = normal(rng);
  return values;
}

struct Sequence {
  int new_tokens;      // 1 decode, γ+1 verify, more for a prefill chunk
  int context_length;  // including the new tokens
};

// A paged cache and a ragged batch over it, in host memory.
struct Batch {
  int H = 0, K = 0, D = 0, block_size = 0, num_blocks = 0, tokens = 0;
  std::vector<float> k_cache, v_cache;  // (num_blocks, block_size, K, D)
  std::vector<float> q;                 // (tokens, H * D)
  std::vector<std::vector<int32_t>> block_tables;
  std::vector<SequenceSlice> slices;  // spans into block_tables
};

// Random q and cache (every slot filled, unused blocks too, so that reading a
// wrong slot changes the result); each sequence gets its blocks from one
// shuffled list of all blocks, so tables are neither ordered nor contiguous.
Batch make_batch(int H, int K, int D, int block_size, const std::vector<Sequence>& sequences,
                 uint32_t seed) {
  std::mt19937 rng(seed);
  Batch batch;
  batch.H = H;
  batch.K = K;
  batch.D = D;
  batch.block_size = block_size;
  for (const Sequence& s : sequences)
    batch.num_blocks += (s.context_length + block_size - 1) / block_size;
  batch.num_blocks += 3;  // spare blocks no table names

  std::vector<int32_t> blocks(static_cast<size_t>(batch.num_blocks));
  std::iota(blocks.begin(), blocks.end(), 0);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  size_t next_block = 0;
  for (const Sequence& s : sequences) {
    const size_t count = static_cast<size_t>((s.context_length + block_size - 1) / block_size);
    batch.block_tables.emplace_back(blocks.begin() + static_cast<std::ptrdiff_t>(next_block),
                                    blocks.begin() +
                                        static_cast<std::ptrdiff_t>(next_block + count));
    next_block += count;
  }
  for (size_t b = 0; b < sequences.size(); ++b) {
    batch.slices.push_back({batch.tokens, sequences[b].new_tokens, sequences[b].context_length,
                            batch.block_tables[b]});
    batch.tokens += sequences[b].new_tokens;
  }

  const size_t cache_size = static_cast<size_t>(batch.num_blocks) * block_size * K * D;
  batch.k_cache = random_normal(cache_size, rng);
  batch.v_cache = random_normal(cache_size, rng);
  batch.q = random_normal(static_cast<size_t>(batch.tokens) * H * D, rng);
  return batch;
}

// out (T, H * D) of backend.attention on the batch, uploaded into the
// backend's own memory; copied back to the host.
std::vector<float> run_attention(Backend& backend, const Batch& batch, float scale) {
  Buffer k = testing::to_backend(backend, batch.k_cache);
  Buffer v = testing::to_backend(backend, batch.v_cache);
  Buffer q = testing::to_backend(backend, batch.q);
  Buffer out = backend.allocate(batch.q.size());
  const PagedKvView cache{k.data(), v.data(), batch.num_blocks, batch.block_size, batch.K,
                          batch.D};
  backend.attention(q.data(), batch.slices, batch.H, cache, scale, out.data());
  return testing::to_host(backend, out.data(), batch.q.size());
}

// Both sides compute in f32 but in different orders: warp-tree dot products
// against sequential ones, an online softmax folding tiles of keys against a
// two-pass one with a float64 denominator. With unit-normal inputs and
// scale = 1/sqrt(D) the scores are O(1) with rounding error ~1e-6, and each
// output is a convex combination of v entries (|v| < ~5), so the outputs
// differ by ~1e-6 to 1e-5. A tolerance of 1e-4 absolute plus 1e-4 relative
// keeps a 10x margin, while a wrong slot, position, head or normalization
// moves outputs by ~0.1 or more.
constexpr double kAbsoluteTolerance = 1e-4;
constexpr double kRelativeTolerance = 1e-4;

void expect_close(const std::vector<float>& cuda, const std::vector<float>& cpu, int H, int D) {
  ASSERT_EQ(cuda.size(), cpu.size());
  size_t bad = 0, worst = 0;
  double worst_excess = 0.0;  // |difference| / tolerance
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double difference = std::abs(static_cast<double>(cuda[i]) - cpu[i]);
    const double tolerance = kAbsoluteTolerance + kRelativeTolerance * std::abs(cpu[i]);
    const double excess = std::isfinite(difference) ? difference / tolerance : INFINITY;
    if (!(excess <= 1.0)) ++bad;  // NaN counts as bad
    if (!(excess <= worst_excess)) {
      worst_excess = excess;
      worst = i;
    }
  }
  const size_t row_width = static_cast<size_t>(H) * D;
  EXPECT_EQ(bad, 0u) << "worst at row " << worst / row_width << " head "
                     << worst % row_width / static_cast<size_t>(D) << " d "
                     << worst % static_cast<size_t>(D) << ": cuda " << cuda[worst] << " cpu "
                     << cpu[worst];
}

struct Shape {
  int H, K, D, block_size;
};

class AttentionTwin : public ::testing::TestWithParam<Shape> {};

TEST_P(AttentionTwin, MatchesCpuOnRaggedBatch) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  const auto [H, K, D, block_size] = GetParam();
  // Rows in this order, each sequence's rows contiguous.
  const std::vector<Sequence> sequences = {
      {5, 1203},  // verification (γ = 4) at the end of a long context
      {37, 37},   // a prompt's first prefill chunk: positions 0..36
      {1, 1030},  // decode over a long context
      {64, 300},  // a later prefill chunk: positions 236..299
      {1, 2},     // decode right after a one-token prompt
      {1, 1},     // a one-token prompt: sees only itself
  };
  const Batch batch =
      make_batch(H, K, D, block_size, sequences, /*seed=*/static_cast<uint32_t>(D * 100 + H));
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));

  auto cpu = make_cpu_backend();
  auto cuda = testing::cuda_backend();
  const std::vector<float> expected = run_attention(*cpu, batch, scale);
  const std::vector<float> actual = run_attention(*cuda, batch, scale);
  expect_close(actual, expected, H, D);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionTwin,
    ::testing::Values(Shape{8, 2, 64, 16},    // GQA groups of 4
                      Shape{8, 2, 128, 16},   // the common Llama shape per rank
                      Shape{16, 2, 96, 16},   // groups of 8
                      Shape{12, 1, 128, 32},  // one KV head for 12 query heads
                      Shape{8, 8, 80, 7},     // no GQA; blocks of 7 end mid-tile
                      Shape{4, 2, 256, 16}),  // the largest head dimension
    [](const ::testing::TestParamInfo<Shape>& param_info) {
      const Shape& s = param_info.param;
      return "H" + std::to_string(s.H) + "_K" + std::to_string(s.K) + "_D" +
             std::to_string(s.D) + "_bs" + std::to_string(s.block_size);
    });

// Scores in the hundreds: exp without subtracting the max would overflow f32
// (exp(89) = inf) and give inf / inf = NaN.
TEST(AttentionTwin, LargeScoresStayFinite) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  const int H = 4, K = 1, D = 64;
  const Batch batch = make_batch(H, K, D, /*block_size=*/16, {{3, 500}, {1, 1100}}, /*seed=*/7);
  const float scale = 8.0f;  // scores ~ N(0, 64²)

  auto cpu = make_cpu_backend();
  auto cuda = testing::cuda_backend();
  const std::vector<float> expected = run_attention(*cpu, batch, scale);
  const std::vector<float> actual = run_attention(*cuda, batch, scale);
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_TRUE(std::isfinite(actual[i])) << "element " << i << " is " << actual[i];
  expect_close(actual, expected, H, D);
}

// A sequence of one token at position 0 attends to itself alone: softmax of
// one score is exactly 1, so each head's output is its KV head's v row, read
// from whichever physical block the table names.
TEST(AttentionTwin, SingleTokenAttendsOnlyToItself) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  const int H = 8, K = 2, D = 64, block_size = 16;
  // Three one-token sequences; make_batch puts them in shuffled blocks.
  const Batch batch = make_batch(H, K, D, block_size, {{1, 1}, {1, 1}, {1, 1}}, /*seed=*/11);

  auto cpu = make_cpu_backend();
  auto cuda = testing::cuda_backend();
  const std::vector<float> from_cpu = run_attention(*cpu, batch, 0.125f);
  const std::vector<float> from_cuda = run_attention(*cuda, batch, 0.125f);
  for (int row = 0; row < batch.tokens; ++row) {
    const size_t slot = static_cast<size_t>(batch.block_tables[static_cast<size_t>(row)][0]) *
                        block_size;  // position 0: offset 0 of the first block
    for (int h = 0; h < H; ++h) {
      const size_t kv_head = static_cast<size_t>(h / (H / K));
      for (int d = 0; d < D; ++d) {
        const float v = batch.v_cache[(slot * K + kv_head) * D + static_cast<size_t>(d)];
        const size_t i = (static_cast<size_t>(row) * H + static_cast<size_t>(h)) * D +
                         static_cast<size_t>(d);
        EXPECT_FLOAT_EQ(from_cpu[i], v) << "cpu row " << row << " head " << h << " d " << d;
        EXPECT_FLOAT_EQ(from_cuda[i], v) << "cuda row " << row << " head " << h << " d " << d;
      }
    }
  }
}

// No slices, no rows: the op must neither fail nor write anything.
TEST(AttentionTwin, EmptyBatchWritesNothing) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto cuda = testing::cuda_backend();
  const std::vector<float> sentinel(64, 42.0f);
  Buffer cache_k = cuda->allocate(2 * 16 * 1 * 64);
  Buffer cache_v = cuda->allocate(2 * 16 * 1 * 64);
  Buffer q = testing::to_backend(*cuda, sentinel);
  Buffer out = testing::to_backend(*cuda, sentinel);
  const PagedKvView cache{cache_k.data(), cache_v.data(), 2, 16, 1, 64};
  cuda->attention(q.data(), {}, /*H=*/1, cache, 0.125f, out.data());
  EXPECT_EQ(testing::to_host(*cuda, out.data(), sentinel.size()), sentinel);
}

}  // namespace
}  // namespace tandem
