#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"

namespace tandem::cpu {
namespace {

// One query row of one head against positions [0, last] of a paged cache.
// q_head, out_head: (D). scores: scratch of at least last + 1 floats.
void attend_one(const float* q_head, const SequenceSlice& slice, int kv_head, int last,
                const PagedKvView& cache, float scale, float* scores, float* out_head) {
  const int D = cache.head_dim;
  const int bs = cache.block_size;
  const size_t slot_stride = static_cast<size_t>(cache.kv_heads) * D;  // one slot: (K, D)
  auto slot_of = [&](int position) {
    return static_cast<size_t>(slice.block_table[position / bs]) * bs + position % bs;
  };

  float max_score = -INFINITY;
  for (int i = 0; i <= last; ++i) {
    const float* key = cache.k + slot_of(i) * slot_stride + static_cast<size_t>(kv_head) * D;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int d = 0; d < D; ++d) dot += q_head[d] * key[d];
    scores[i] = dot * scale;
    max_score = std::max(max_score, scores[i]);
  }
  double denominator = 0.0;
  for (int i = 0; i <= last; ++i) {
    scores[i] = std::exp(scores[i] - max_score);
    denominator += scores[i];
  }
  const float inv = static_cast<float>(1.0 / denominator);
  std::fill(out_head, out_head + D, 0.0f);
  for (int i = 0; i <= last; ++i) {
    const float weight = scores[i] * inv;
    const float* value = cache.v + slot_of(i) * slot_stride + static_cast<size_t>(kv_head) * D;
    for (int d = 0; d < D; ++d) out_head[d] += weight * value[d];
  }
}

}  // namespace

void attention(const float* q, std::span<const SequenceSlice> slices, int H,
               const PagedKvView& cache, float scale, float* out) {
  const int D = cache.head_dim;
  const int group = H / cache.kv_heads;  // query heads sharing one KV head (GQA)

  // Flatten (token, head) pairs so that the threads share the work evenly
  // whatever the mix of long prefills and single-token decodes.
  struct Item {
    int slice;
    int token;  // row in (T, ...)
    int last;   // last visible absolute position
  };
  std::vector<Item> items;
  int max_context = 0;
  for (size_t s = 0; s < slices.size(); ++s) {
    const SequenceSlice& slice = slices[s];
    const int first_position = slice.context_length - slice.token_count;
    for (int j = 0; j < slice.token_count; ++j)
      items.push_back({static_cast<int>(s), slice.token_offset + j, first_position + j});
    max_context = std::max(max_context, slice.context_length);
  }
  const long work = static_cast<long>(items.size()) * H;
  // Threads pay off only when there is real work: thousands of dot products.
  const bool parallel = work * max_context * D >= (1 << 16);

  // Each chunk of (token, head) items gets its own scores buffer.
  parallel_ranges(work, parallel, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<size_t>(max_context));
    for (int64_t w = begin; w < end; ++w) {
      const Item& item = items[static_cast<size_t>(w / H)];
      const int h = static_cast<int>(w % H);
      const size_t offset = (static_cast<size_t>(item.token) * H + h) * D;
      attend_one(q + offset, slices[static_cast<size_t>(item.slice)], h / group, item.last, cache,
                 scale, scores.data(), out + offset);
    }
  });
}

}  // namespace tandem::cpu
