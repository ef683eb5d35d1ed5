// Attention of each (token, head) over its sequence's paged KV cache. Each
// pair is computed by the same operations whatever else is in the batch
// (prefill, decode, verification), so results are batch-invariant. The
// query heads that share a KV head (GQA) go together, so that its keys and
// values are read once for all of them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/matmul_lanes.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/vector_exp.h"

namespace tandem::cpu {
namespace {

using matmul_lanes::Half;
using matmul_lanes::load_half;
using matmul_lanes::multiply_add;
using matmul_lanes::transpose8;
using Doubles4 = double __attribute__((vector_size(4 * sizeof(double))));

// Keys go in groups of this many positions: one group's dot products are
// summed lane-wise together (one transpose and 7 adds for 8 keys, not a
// horizontal sum per key).
constexpr int kGroup = 8;
// Chunks of 8 floats of q a group's scores hold in registers at a time.
constexpr int kQueryChunks = 4;

// d values [8 c, 8 c + 8) of a row of D, zero past D. The whole-chunk test
// is spelled on c, not as min(8, D - 8 c) == 8: GCC hoists this one out of
// the loops over keys, and that one not (attention ran 1.7x slower).
inline Half chunk(const float* row, int c, int D) {
  if (8 * c + 8 <= D) return load_half(row + 8 * c);
  return load8_partial(row + 8 * c, D - 8 * c, 0.0f);
}

// The rows of positions [0, last] of one KV head (keys or values), through
// the block table: a row's slot is its block's base plus its offset, with
// no division per position.
void gather_rows(const float* rows, const SequenceSlice& slice, int kv_head, int last, const PagedKvView& cache,
                 const float** out) {
  const int bs = cache.block_size;
  const size_t slot_stride = static_cast<size_t>(cache.kv_heads) * cache.head_dim;  // one slot: (K, D)
  const float* head = rows + static_cast<size_t>(kv_head) * cache.head_dim;
  for (int first = 0, b = 0; first <= last; first += bs, ++b) {
    const float* row = head + static_cast<size_t>(slice.block_table[b]) * bs * slot_stride;
    const int end = std::min(last + 1, first + bs);
    for (int i = first; i < end; ++i, row += slot_stride) out[i] = row;
  }
}

// scores[i] = (q . key i) * scale for the keys of one group (count <= 8):
// each key's 8 lane sums over d (a chain of fused multiply-adds in d
// order), then, for all 8 keys at once, the same fixed tree over the lanes.
// A missing key is a row of zeros, its score dropped: every key's score is
// the same operations wherever its group starts.
// Inlined into both callers: left to GCC, it went out of line once it had
// two, and the call per 8 keys made attention up to 1.3x slower.
[[gnu::always_inline]] inline void group_scores(const float* q, const float* const* keys, int count, int D,
                                                float scale, const float* zeros,
                  float* scores) {
  Half acc[kGroup] = {};
  const float* rows[kGroup];
  for (int j = 0; j < kGroup; ++j) rows[j] = j < count ? keys[j] : zeros;
  int c = 0;
  // kQueryChunks chunks of q held in registers meet each key in turn: a
  // key's row address is loaded once per kQueryChunks chunks, not once per
  // chunk (GCC keeps the eight addresses on the stack). Each key's chain is
  // the same.
  for (; 8 * (c + kQueryChunks) <= D; c += kQueryChunks) {
    Half qs[kQueryChunks];
    for (int i = 0; i < kQueryChunks; ++i) qs[i] = load_half(q + 8 * (c + i));
    for (int j = 0; j < kGroup; ++j) {
      const float* row = rows[j] + 8 * c;
#pragma GCC unroll 4
      for (int i = 0; i < kQueryChunks; ++i) acc[j] = multiply_add(acc[j], qs[i], load_half(row + 8 * i));
    }
  }
  for (; 8 * c < D; ++c) {  // the last chunks (a partial one padded with zeros)
    const Half qc = chunk(q, c, D);
    for (int j = 0; j < kGroup; ++j) acc[j] = multiply_add(acc[j], qc, chunk(rows[j], c, D));
  }
  Half lanes[kGroup];  // lanes[l][j] = acc[j][l]
  transpose8(acc, lanes);
  const Half sums = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  for (int j = 0; j < count; ++j) scores[j] = sums[j] * scale;
}

// out = the sum over positions [0, n) of weight i x value i, each output
// float a chain of fused multiply-adds from 0 in position order (the same
// operations however the positions are grouped), for `Heads` heads that
// share the values (GQA): each value chunk is loaded once for all their
// chains. Four chunks of 8 floats run their chains side by side, in
// registers over all n positions; the last chunks of a head (a partial one
// padded with zeros past D) one at a time. A head's chains are the same
// operations whichever heads go with it.
constexpr int kChains = 4;

template <int Heads>
[[gnu::always_inline]] inline void four_chunks(const float* const* values, const float* const (&weights)[Heads],
                                               int n, int first, float* const (&out)[Heads]) {
  Half sums[Heads][kChains];
  for (int h = 0; h < Heads; ++h)
    for (int c = 0; c < kChains; ++c) sums[h][c] = Half{};
  for (int i = 0; i < n; ++i) {
    Half w[Heads];
    for (int h = 0; h < Heads; ++h) w[h] = splat(weights[h][i]);
    const float* row = values[i] + 8 * first;
#pragma GCC unroll 4
    for (int c = 0; c < kChains; ++c) {
      const Half v = load_half(row + 8 * c);
      for (int h = 0; h < Heads; ++h) sums[h][c] = multiply_add(sums[h][c], w[h], v);
    }
  }
  // One store per chunk: a copy of the whole array went through the stack.
  for (int h = 0; h < Heads; ++h)
    for (int c = 0; c < kChains; ++c) std::memcpy(out[h] + 8 * (first + c), &sums[h][c], sizeof(Half));
}

template <int Heads>
[[gnu::always_inline]] inline void one_chunk(const float* const* values, const float* const (&weights)[Heads], int n,
                                             int c, int D, float* const (&out)[Heads]) {
  Half sums[Heads] = {};
  for (int i = 0; i < n; ++i) {
    const Half v = chunk(values[i], c, D);
    for (int h = 0; h < Heads; ++h) sums[h] = multiply_add(sums[h], splat(weights[h][i]), v);
  }
  for (int h = 0; h < Heads; ++h)
    std::memcpy(out[h] + 8 * c, &sums[h], static_cast<size_t>(std::min(8, D - 8 * c)) * sizeof(float));
}

template <int Heads>
void weighted_values(const float* const* values, const float* const (&weights)[Heads], int n, int D,
                     float* const (&out)[Heads]) {
  int c = 0;
  for (; 8 * (c + kChains) <= D; c += kChains) four_chunks<Heads>(values, weights, n, c, out);
  for (; 8 * c < D; ++c) one_chunk<Heads>(values, weights, n, c, D, out);
}

// The softmax of n scores in place, 8 at a time (exp8): the maximum, the
// exponentials and their sum, in double, lane by lane in position order
// and then over the lanes by a fixed tree. The padding of a last partial
// group is -inf, whose exponential, 0, leaves the sum unchanged.
void softmax(float* scores, int n) {
  Floats8 max8 = splat(-INFINITY);
  for (int i = 0; i < n; i += 8) {
    const Floats8 s = load8_partial(scores + i, std::min(8, n - i), -INFINITY);
    max8 = s > max8 ? s : max8;  // a NaN score is passed over here, and poisons the sum below
  }
  float max_score = -INFINITY;
  for (int l = 0; l < 8; ++l) max_score = std::max(max_score, max8[l]);
  Doubles4 low = {}, high = {};
  for (int i = 0; i < n; i += 8) {
    const int count = std::min(8, n - i);
    const Floats8 e = exp8(load8_partial(scores + i, count, -INFINITY) - splat(max_score));
    low += __builtin_convertvector(__builtin_shufflevector(e, e, 0, 1, 2, 3), Doubles4);
    high += __builtin_convertvector(__builtin_shufflevector(e, e, 4, 5, 6, 7), Doubles4);
    store8_partial(scores + i, e, count);
  }
  const Doubles4 sum = low + high;
  const float inv = static_cast<float>(1.0 / ((sum[0] + sum[2]) + (sum[1] + sum[3])));
  for (int i = 0; i < n; ++i) scores[i] *= inv;
}

// A thread's scratch: the rows' addresses (the longest context plus a
// group), each head's scores (as many floats apart) and a row of zeros
// (head_dim plus 8).
struct Scratch {
  std::vector<float> scores, zeros;
  std::vector<const float*> rows;

  size_t stride() const { return rows.size(); }
};

// One token's query heads that share a KV head (GQA: `heads` of them,
// contiguous in q and out, D apart) against positions [0, last] of a paged
// cache. Every head meets a group of keys while it is in L1, and two heads
// at a time sum the values, so a long context's keys and values are read
// from memory once for the heads, not once per head. Each head's result
// is the same operations as that head computed alone.
void attend_heads(const float* q_heads, int heads, const SequenceSlice& slice, int kv_head, int last,
                  const PagedKvView& cache, float scale, Scratch& scratch, float* out_heads) {
  const int D = cache.head_dim;
  const int n = last + 1;
  auto scores = [&](int g) { return scratch.scores.data() + static_cast<size_t>(g) * scratch.stride(); };
  const float** rows = scratch.rows.data();
  gather_rows(cache.k, slice, kv_head, last, cache, rows);
  for (int i = 0; i < n; i += kGroup)
    for (int g = 0; g < heads; ++g)
      group_scores(q_heads + static_cast<size_t>(g) * D, rows + i, std::min(kGroup, n - i), D, scale,
                   scratch.zeros.data(), scores(g) + i);
  for (int g = 0; g < heads; ++g) softmax(scores(g), n);
  gather_rows(cache.v, slice, kv_head, last, cache, rows);
  auto out = [&](int g) { return out_heads + static_cast<size_t>(g) * D; };
  int g = 0;
  for (; g + 2 <= heads; g += 2) weighted_values<2>(rows, {scores(g), scores(g + 1)}, n, D, {out(g), out(g + 1)});
  if (g < heads) weighted_values<1>(rows, {scores(g)}, n, D, {out(g)});
}

}  // namespace

void attention(const float* q, std::span<const SequenceSlice> slices, int H,
               const PagedKvView& cache, float scale, float* out) {
  const int D = cache.head_dim;
  const int group = H / cache.kv_heads;  // query heads sharing one KV head (GQA)

  // Flatten (token, KV head) pairs so that the threads share the work evenly
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
  const int K = cache.kv_heads;
  const long work = static_cast<long>(items.size()) * K;  // (token, KV head) pairs, each with its query heads
  // Threads pay off only when there is real work: thousands of dot products.
  const bool parallel = work * group * max_context * D >= (1 << 16);

  // Each chunk of items gets its own scratch.
  parallel_ranges(work, parallel, [&](int64_t begin, int64_t end) {
    const size_t stride = static_cast<size_t>(max_context) + kGroup;
    Scratch scratch{std::vector<float>(stride * static_cast<size_t>(group)),
                    std::vector<float>(static_cast<size_t>(D) + 8, 0.0f), std::vector<const float*>(stride)};
    for (int64_t w = begin; w < end; ++w) {
      const Item& item = items[static_cast<size_t>(w / K)];
      const int kv_head = static_cast<int>(w % K);
      const size_t offset = (static_cast<size_t>(item.token) * H + static_cast<size_t>(kv_head) * group) * D;
      attend_heads(q + offset, group, slices[static_cast<size_t>(item.slice)], kv_head, item.last, cache, scale,
                   scratch, out + offset);
    }
  });
}

}  // namespace tandem::cpu
