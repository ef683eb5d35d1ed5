// The streaming path of the batch-invariant matmul (matmul.cpp states the
// contract), for decode and short batches (verification of γ + 1 tokens, a
// few sessions decoding together): w is read from memory exactly once, a
// block of its rows at a time, and each block meets every row of x while
// it sits in the cache. The sixteen lanes of an element's sum are the
// sixteen floats of two 8-wide registers, as the k index runs through w's
// row, so the loads are contiguous and the bits are those of every other
// path.
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
// multiply-add, but packs w first. Measured on 2 cores (AVX2) at the
// shapes of models/tiny/target and configs/shapes/bench-24m.json, bf16 and
// f32 weights: this path is 1.1-1.8x faster from 12 to 24 rows, the two
// about even at 32-40, the packed one 1.1-1.3x faster at 48-64.
constexpr int kMaxRows = 24;
// Below this many multiply-adds a parallel region costs more than it saves.
constexpr long kParallelWork = 1 << 16;
// The rows of w a thread takes at a time: six meet one row of x with x's
// 16 lanes held in two registers and 12 accumulators (decode_tile), or
// two at a time meet a group of x's rows (rows_tile).
constexpr int kBlockRows = 6;
// How far ahead of its loads a block's bytes are prefetched (a block is 6
// rows: 3-12 KiB on the benchmark models). Measured in one process
// against 4 KiB (half the lead): 1.06x on a tiny-model decode step's
// matmuls, 1.03x on the 24M shape's; 6, 10 and 12 KiB measured the same
// as 8, and 16 and 32 KiB slower (0.92-0.98x).
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

// y[t * N + n] for t < TT, n < NN, TT > 1 (a group of x's rows): the
// chains of decode_tile(), both halves of the lanes in one walk. (One row
// keeps decode_tile(): this tile at 1 x 6, or decode_tile's step folded in
// here under `if constexpr`, compiled to a larger loop and decoded 1-7%
// slower.) Per step
// and half, TT x vectors and then NN w vectors, one at a time, meet in
// TT x NN multiply-adds: at 3 x 2, 12 accumulators, 3 x registers and one
// w register fill the 16 of AVX2. Measured against the tile it replaced
// (3 x 3, one half of the lanes per walk, chains parked in memory between
// chunks of k, its sums reduced one by one): 1.15-1.3x on the tiny model's
// matmuls at 2-12 rows of x in bf16 and 1.05-1.2x in f32, 1.0-1.15x on the
// 24M shape in bf16, the same bits.
template <class W, int TT, int NN>
void rows_tile(const float* x, const typename W::Element* w, int Kin, int N, float* y) {
  using Element = typename W::Element;
  constexpr int kStepsPerLine = std::max<int>(1, 64 / static_cast<int>(kLanes * sizeof(Element)));
  Half acc[TT][NN][2];
#pragma GCC unroll 4
  for (int t = 0; t < TT; ++t)
#pragma GCC unroll 4
    for (int n = 0; n < NN; ++n) acc[t][n][0] = acc[t][n][1] = Half{};

  // Prefetched as in decode_tile(): later groups of x's rows find the
  // block in the cache, and the prefetch runs on into the next one.
  const char* ahead = reinterpret_cast<const char*>(w) + kLeadBytes;
  auto step = [&](const float* xs, size_t x_stride, const Element* ws, size_t w_stride, bool prefetch) {
    if (prefetch) {
#pragma GCC unroll 4
      for (int n = 0; n < NN; ++n) __builtin_prefetch(ahead + 64 * n);
      ahead += 64 * NN;
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      Half xv[TT];
#pragma GCC unroll 4
      for (int t = 0; t < TT; ++t) xv[t] = in_register(load_half(xs + t * x_stride + 8 * h));
#pragma GCC unroll 4
      for (int n = 0; n < NN; ++n) {
        const Half wv = in_register(W::widen8(ws + n * w_stride + 8 * h));
#pragma GCC unroll 4
        for (int t = 0; t < TT; ++t) acc[t][n][h] = multiply_add(acc[t][n][h], xv[t], wv);
      }
    }
  };

  const size_t stride = static_cast<size_t>(Kin);
  int k = 0;
  for (; k + kLanes <= Kin; k += kLanes) step(x + k, stride, w + k, stride, (k / kLanes) % kStepsPerLine == 0);
  if (k < Kin) {
    // The last Kin % 16, zero-padded as in decode_tile().
    float xt[TT][kLanes] = {};
    Element wt[NN][kLanes] = {};
    for (int t = 0; t < TT; ++t) std::copy(x + t * stride + k, x + t * stride + Kin, xt[t]);
    for (int n = 0; n < NN; ++n) std::copy(w + n * stride + k, w + n * stride + Kin, wt[n]);
    step(xt[0], kLanes, wt[0], kLanes, false);
  }
#pragma GCC unroll 4
  for (int t = 0; t < TT; ++t)
#pragma GCC unroll 4
    for (int n = 0; n < NN; ++n) y[t * N + n] = reduce(acc[t][n][0], acc[t][n][1]);
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

// One w block of nn rows against a group of TT rows of x, two w rows at a
// time.
template <class W, int TT>
void group_block(const float* x, const typename W::Element* w, int Kin, int N, int nn, float* y) {
  const size_t stride = static_cast<size_t>(Kin);
  int r = 0;
  for (; r + 2 <= nn; r += 2) rows_tile<W, TT, 2>(x, w + r * stride, Kin, N, y + r);
  if (r < nn) rows_tile<W, TT, 1>(x, w + r * stride, Kin, N, y + r);
}

// y_i (T, rows_i) = x (T, Kin) · w_iᵀ for the consecutive row ranges w_i
// of w (stride Kin). Each thread takes blocks of w's rows (a block never
// spans two ranges); a block is streamed once and then meets x's rows in
// groups. All ranges' blocks share one parallel section.
template <class W>
void matmul_streaming(const float* x, const typename W::Element* w, int T, int Kin,
                      std::span<const MatmulOutput> outputs) {
  using Element = typename W::Element;
  auto blocks_of = [](const MatmulOutput& out) { return (out.rows + kBlockRows - 1) / kBlockRows; };
  long rows = 0;
  int blocks = 0;
  for (const MatmulOutput& out : outputs) {
    rows += out.rows;
    blocks += blocks_of(out);
  }
  const bool parallel = static_cast<long>(T) * Kin * rows >= kParallelWork;
  const size_t stride = static_cast<size_t>(Kin);
  // x's rows in groups of three, the rest in pairs: T = 4 is two pairs,
  // T = 5 a triple and a pair.
  const int pairs = T % 3 == 0 ? 0 : T % 3 == 2 ? 1 : 2;
  const int triples = (T - 2 * pairs) / 3;
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
    const int n = block * kBlockRows;
    const int nn = std::min(kBlockRows, N - n);
    const Element* wb = w + (first_row + static_cast<size_t>(n)) * stride;
    float* y = outputs[p].y + n;
    if (T == 1) {
      decode_block<W>(x, wb, Kin, nn, y);
      return;
    }
    int t = 0;
    for (int g = 0; g < triples; ++g, t += 3)
      group_block<W, 3>(x + t * stride, wb, Kin, N, nn, y + static_cast<size_t>(t) * N);
    for (int g = 0; g < pairs; ++g, t += 2)
      group_block<W, 2>(x + t * stride, wb, Kin, N, nn, y + static_cast<size_t>(t) * N);
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
