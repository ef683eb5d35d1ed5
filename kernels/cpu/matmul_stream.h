// The streaming path of the batch-invariant matmul (matmul.cpp states the
// contract), for decode and short batches (verification of γ + 1 tokens, a
// few sessions decoding together): w is read from memory exactly once, a
// block of its rows at a time, and each block meets every row of x while
// it sits in L1. The sixteen lanes of an element's sum are the sixteen
// floats of two 8-wide registers, as the k index runs through w's row, so
// the loads are contiguous and the bits are those of every other path.
//
// Templated on the weights' storage (f32 here; bf16 and f16 in
// matmul_bf16.cpp): each 8 weights are widened exactly into a Half before
// the same f32 fused multiply-adds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "kernels/backend.h"
#include "kernels/cpu/matmul_lanes.h"
#include "kernels/cpu/thread_pool.h"

namespace tandem::cpu::matmul_stream {

using namespace matmul_lanes;

// f32 weights, loaded as they are.
struct F32Weights {
  using Element = float;
  static Half widen8(const float* p) { return load_half(p); }
};

// The most rows of x this path takes; more go to the packed path
// (matmul_packed.cpp), which broadcasts w and so loads less per
// multiply-add. Measured on 2 cores (AVX2) at the shapes of
// models/tiny/target and configs/shapes/bench-24m.json: this path is
// 1.1-5x faster up to 12 rows, the packed one from 16.
constexpr int kMaxRows = 12;
// Below this many multiply-adds a parallel region costs more than it saves.
constexpr long kParallelWork = 1 << 16;
// One row of x (decode): six w rows walked together, x's 16 lanes held in
// two registers, 12 accumulators.
constexpr int kDecodeBlock = 6;
// Several rows of x: three w rows meet three x rows at a time, one half of
// the lanes at a time (batch_tile), over chunks of k that keep both in L1.
constexpr int kBatchBlock = 3;
constexpr int kBatchGroup = 3;  // matmul_streaming's switch names 1, 2 and 3
constexpr int kBatchChunk = 512;
// How far ahead of its loads a block's bytes are prefetched (a block is 6
// rows for decode, 3 for several rows of x: 3-12 KiB on the benchmark
// models). Measured in one process against 4 KiB (half the
// lead): 1.06x on a tiny-model decode step's matmuls, 1.03x on the 24M
// shape's, 1.12x on a 5-token step of either; 6, 10 and 12 KiB measured
// the same as 8, and 16 and 32 KiB slower (0.92-0.98x).
constexpr int kLeadBytes = 8192;

// y[n] for n < NN from one row of x and NN rows of w (stride Kin): x's 16
// lanes held in two registers, one multiply-add per 8 weights loaded.
template <class W, int NN>
void decode_tile(const float* x, const typename W::Element* w, int Kin, float* y) {
  using Element = typename W::Element;
  // Steps of 16 weights per 64-byte line: a prefetch per line, not per step.
  constexpr int kStepsPerLine = std::max<int>(1, 64 / static_cast<int>(kLanes * sizeof(Element)));
  Half acc[NN][2];
#pragma GCC unroll 8
  for (int n = 0; n < NN; ++n) acc[n][0] = acc[n][1] = Half{};

  // The prefetch walks the block's bytes (its NN rows are contiguous) in
  // one line, kLeadBytes ahead and as fast as the steps consume them,
  // running on into the next block: rows of a few KiB are too short for
  // the hardware prefetcher to lock onto NN streams of each.
  const char* ahead = reinterpret_cast<const char*>(w) + kLeadBytes;
  // One step of 16 k: x's lanes at xs, w's rows at ws (stride w_stride).
  auto step = [&](const float* xs, const Element* ws, size_t w_stride, bool prefetch) {
    if (prefetch) {
#pragma GCC unroll 8
      for (int n = 0; n < NN; ++n) __builtin_prefetch(ahead + 64 * n);
      ahead += 64 * NN;
    }
    const Half low = in_register(load_half(xs)), high = in_register(load_half(xs + 8));
#pragma GCC unroll 8
    for (int n = 0; n < NN; ++n) {
      const Element* row = ws + n * w_stride;
      acc[n][0] = multiply_add(acc[n][0], low, W::widen8(row));
      acc[n][1] = multiply_add(acc[n][1], high, W::widen8(row + 8));
    }
  };

  const size_t stride = static_cast<size_t>(Kin);
  int k = 0;
  for (; k + kLanes <= Kin; k += kLanes) step(x + k, w + k, stride, (k / kLanes) % kStepsPerLine == 0);
  if (k < Kin) {
    // The last Kin % 16, zero-padded on both sides (zero bits are +0 in
    // every weight format): exact zeros added, as on every path.
    float xt[kLanes] = {};
    Element wt[NN][kLanes] = {};
    std::copy(x + k, x + Kin, xt);
    for (int n = 0; n < NN; ++n) std::copy(w + n * stride + k, w + n * stride + Kin, wt[n]);
    step(xt, wt[0], kLanes, false);
  }
#pragma GCC unroll 8
  for (int n = 0; n < NN; ++n) y[n] = reduce(acc[n][0], acc[n][1]);
}

// Prefetches a block's bytes (its rows are contiguous), one 64-byte line at
// a time, kLeadBytes ahead of its start, spread evenly over every step that
// walks the block: with several walks (two halves per group of x's rows),
// memory keeps streaming the next block while the later walks compute from
// L1, where prefetching during the first walk alone would leave it idle.
class SpreadPrefetch {
 public:
  // bytes_per_step: the block's bytes one step of 16 k covers; walks: how
  // many times its k range is walked.
  SpreadPrefetch(const void* block, int bytes_per_step, int walks)
      : next_(static_cast<const char*>(block) + kLeadBytes), bytes_per_step_(bytes_per_step), per_line_(64 * walks) {}
  void step() {
    credit_ += bytes_per_step_;
    for (; credit_ >= per_line_; credit_ -= per_line_, next_ += 64) __builtin_prefetch(next_);
  }

 private:
  const char* next_;
  int bytes_per_step_;
  int per_line_;
  int credit_ = 0;
};

// y[t * N + n] for t < TT, n < NN, TT > 1: the same chains as decode_tile(), in
// another order. The low lanes (0-7) and the high lanes (8-15) are
// independent chains, so a chunk of k is walked twice, once per half: each
// step then loads TT x vectors and NN w vectors into registers for TT x NN
// multiply-adds (9 for 6 loads at 3 x 3), where holding both halves would
// leave registers for only one operand and load the other for every
// multiply-add. The chains park in memory between chunks, exactly.
template <class W, int NN, int TT>
void batch_tile(const float* x, const typename W::Element* w, int Kin, int N, SpreadPrefetch& prefetch, float* y) {
  using Element = typename W::Element;
  Half acc[2][TT][NN];
  for (int h = 0; h < 2; ++h)
    for (int t = 0; t < TT; ++t)
      for (int n = 0; n < NN; ++n) acc[h][t][n] = Half{};

  // Steps [first, last) (in floats of k) of one half's chains.
  auto walk = [&](Half (&sums)[TT][NN], const float* xs, size_t x_stride, const Element* ws, size_t w_stride,
                  int first, int last, bool padded) {
    Half a[TT][NN];
#pragma GCC unroll 4
    for (int t = 0; t < TT; ++t)
#pragma GCC unroll 4
      for (int n = 0; n < NN; ++n) a[t][n] = sums[t][n];
    // The prefetch's position in a local for the walk: stepped through the
    // reference, its count went to memory and back on every step, a
    // store-to-load chain that held each step to its latency (batches of
    // 2-5 rows ran 1.1-1.5x slower).
    SpreadPrefetch ahead = prefetch;
    for (int k = first; k < last; k += kLanes) {
      if (!padded) ahead.step();
      Half xv[TT], wv[NN];
#pragma GCC unroll 4
      for (int t = 0; t < TT; ++t) xv[t] = in_register(load_half(xs + t * x_stride + k));
#pragma GCC unroll 4
      for (int n = 0; n < NN; ++n) wv[n] = in_register(W::widen8(ws + n * w_stride + k));
#pragma GCC unroll 4
      for (int t = 0; t < TT; ++t)
#pragma GCC unroll 4
        for (int n = 0; n < NN; ++n) a[t][n] = multiply_add(a[t][n], xv[t], wv[n]);
    }
#pragma GCC unroll 4
    for (int t = 0; t < TT; ++t)
#pragma GCC unroll 4
      for (int n = 0; n < NN; ++n) sums[t][n] = a[t][n];
    prefetch = ahead;
  };

  const size_t stride = static_cast<size_t>(Kin);
  const int full = Kin / kLanes * kLanes;
  for (int first = 0; first < full; first += kBatchChunk) {
    const int last = std::min(full, first + kBatchChunk);
    walk(acc[0], x, stride, w, stride, first, last, false);
    walk(acc[1], x + 8, stride, w + 8, stride, first, last, false);
  }
  if (full < Kin) {
    // The last Kin % 16, zero-padded as in decode_tile().
    float xt[TT][kLanes] = {};
    Element wt[NN][kLanes] = {};
    for (int t = 0; t < TT; ++t) std::copy(x + t * stride + full, x + t * stride + Kin, xt[t]);
    for (int n = 0; n < NN; ++n) std::copy(w + n * stride + full, w + n * stride + Kin, wt[n]);
    walk(acc[0], xt[0], kLanes, wt[0], kLanes, 0, kLanes, true);
    walk(acc[1], xt[0] + 8, kLanes, wt[0] + 8, kLanes, 0, kLanes, true);
  }
  for (int t = 0; t < TT; ++t)
    for (int n = 0; n < NN; ++n) y[t * N + n] = reduce(acc[0][t][n], acc[1][t][n]);
}

// One w block of nn rows against one row of x.
template <class W>
void decode_block(const float* x, const typename W::Element* w, int Kin, int nn, float* y) {
  switch (nn) {
    case 6: decode_tile<W, 6>(x, w, Kin, y); break;
    case 5: decode_tile<W, 5>(x, w, Kin, y); break;
    case 4: decode_tile<W, 4>(x, w, Kin, y); break;
    case 3: decode_tile<W, 3>(x, w, Kin, y); break;
    case 2: decode_tile<W, 2>(x, w, Kin, y); break;
    default: decode_tile<W, 1>(x, w, Kin, y); break;
  }
}

// One w block of nn rows against a group of tt rows of x.
template <class W, int TT>
void batch_block(const float* x, const typename W::Element* w, int Kin, int N, int nn, SpreadPrefetch& prefetch,
                 float* y) {
  switch (nn) {
    case 3: batch_tile<W, 3, TT>(x, w, Kin, N, prefetch, y); break;
    case 2: batch_tile<W, 2, TT>(x, w, Kin, N, prefetch, y); break;
    default: batch_tile<W, 1, TT>(x, w, Kin, N, prefetch, y); break;
  }
}

// y_i (T, rows_i) = x (T, Kin) · w_iᵀ for the consecutive row ranges w_i
// of w (stride Kin). Each thread takes blocks of w's rows (a block never
// spans two ranges); a block is streamed once and then meets x's rows in
// groups. All ranges' blocks share one parallel section.
template <class W>
void matmul_streaming(const float* x, const typename W::Element* w, int T, int Kin,
                      std::span<const MatmulOutput> outputs) {
  using Element = typename W::Element;
  const int per_block = T == 1 ? kDecodeBlock : kBatchBlock;
  auto blocks_of = [per_block](const MatmulOutput& out) { return (out.rows + per_block - 1) / per_block; };
  long rows = 0;
  int blocks = 0;
  for (const MatmulOutput& out : outputs) {
    rows += out.rows;
    blocks += blocks_of(out);
  }
  const bool parallel = static_cast<long>(T) * Kin * rows >= kParallelWork;
  const size_t stride = static_cast<size_t>(Kin);
  const int groups = (T + kBatchGroup - 1) / kBatchGroup;
  parallel_for(blocks, parallel, [&](int64_t b) {
    // Block b's range: the ranges before it own the blocks and rows before.
    size_t p = 0, first_row = 0;
    int block = static_cast<int>(b);
    while (block >= blocks_of(outputs[p])) {
      block -= blocks_of(outputs[p]);
      first_row += static_cast<size_t>(outputs[p].rows);
      ++p;
    }
    const int N = outputs[p].rows;
    const int n = block * per_block;
    const int nn = std::min(per_block, N - n);
    const Element* wb = w + (first_row + static_cast<size_t>(n)) * stride;
    float* y = outputs[p].y;
    if (T == 1) {
      decode_block<W>(x, wb, Kin, nn, y + n);
      return;
    }
    static_assert(kBatchGroup == 3, "the switch below names groups of 1, 2 and 3 rows");
    SpreadPrefetch prefetch(wb, nn * kLanes * static_cast<int>(sizeof(Element)), 2 * groups);
    for (int t = 0; t < T; t += kBatchGroup) {
      const float* xg = x + t * stride;
      float* yg = y + static_cast<size_t>(t) * N + n;
      switch (std::min(kBatchGroup, T - t)) {
        case 3: batch_block<W, 3>(xg, wb, Kin, N, nn, prefetch, yg); break;
        case 2: batch_block<W, 2>(xg, wb, Kin, N, nn, prefetch, yg); break;
        default: batch_block<W, 1>(xg, wb, Kin, N, nn, prefetch, yg); break;
      }
    }
  });
}

// The whole op for weights stored as W: the streaming path up to kMaxRows
// rows of x, else the packed path (x packed once for every range); then
// the bias.
template <class W>
void matmul_rows(const float* x, const typename W::Element* w, const WeightRows& packed, const float* bias,
                 int T, int Kin, std::span<const MatmulOutput> outputs) {
  if (T <= kMaxRows) {
    matmul_streaming<W>(x, w, T, Kin, outputs);
  } else {
    matmul_packed(x, packed, T, Kin, outputs);
  }
  if (!bias) return;
  for (const MatmulOutput& out : outputs) {
    for (int t = 0; t < T; ++t) {
      float* row = out.y + static_cast<size_t>(t) * out.rows;
      for (int n = 0; n < out.rows; ++n) row[n] += bias[n];
    }
    bias += out.rows;
  }
}

}  // namespace tandem::cpu::matmul_stream
