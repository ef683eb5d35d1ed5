// The many-row path of the batch-invariant matmul: the same operations per
// output element as the streaming path (matmul_stream.h, matmul_lanes.h), in an
// order of evaluation built for the cache and the register file.
//
// The sixteen lane sums of an element are independent chains: lane l sums
// x[t][k] w[n][k] over k = l, l + 16, l + 32, ... by fused multiply-adds,
// and only the final tree joins them. So each lane is a matrix product of
// its own, computed here one lane at a time as a textbook register tile:
// 16 rows of x (two 8-float vectors, packed so that a lane's run of k is
// contiguous) times 6 rows of w (one value broadcast at a time) in 12
// accumulator registers, 8 loads per 12 multiply-adds. (Short batches take
// the streaming path, matmul_stream.h.)
// The tile's 16 lane results wait in a small scratch for the tree, which is
// then evaluated 8 elements per instruction. A chain may stop at a chunk
// border and resume (its accumulators parked in the scratch, exactly),
// which keeps the w rows a chunk touches in L1; a pass keeps the packed x
// rows in L2 while every w panel goes by.
#include <algorithm>
#include <vector>

#include "kernels/cpu/matmul_lanes.h"
#include "kernels/cpu/thread_pool.h"

namespace tandem::cpu {
namespace {

using namespace matmul_lanes;

constexpr int kTileCols = 6;  // rows of w per tile, broadcast
// Steps (16 k each) per chunk: the 6 w rows' chunk is 6 x 512 floats,
// 12 KiB, and stays in L1 while the 16 lanes go over it.
constexpr int kChunkSteps = 32;
// Packed x kept for a pass over every w panel: half of a 512 KiB L2.
constexpr size_t kPassBytes = 256 * 1024;
// Below this many multiply-adds a parallel region costs more than it saves.
constexpr long kParallelWork = 1 << 16;

inline Half splat(float v) { return Half{v, v, v, v, v, v, v, v}; }

// The tile for Halves x 8 rows of x.
template <int Halves>
struct Tile {
  static constexpr int kRows = 8 * Halves;

  // One lane's accumulators for a tile: [8 rows of x][w row].
  struct LaneSums {
    Half v[Halves][kTileCols];
  };

  // Rows [0, count) of x (stride Kin) as one panel: for each chunk, for
  // each lane, for each step j of the chunk, the rows' x[r][lane + 16 j];
  // zero past Kin and for rows past count, as load_tail pads.
  static void pack_x(const float* x, int Kin, int count, int steps, float* dst) {
    for (int first = 0; first < steps; first += kChunkSteps) {
      const int last = std::min(steps, first + kChunkSteps);
      for (int lane = 0; lane < kLanes; ++lane)
        for (int j = first; j < last; ++j) {
          const int k = lane + j * kLanes;
          for (int r = 0; r < kRows; ++r)
            *dst++ = r < count && k < Kin ? x[static_cast<size_t>(r) * Kin + k] : 0.0f;
        }
    }
  }

  // Steps [0, count) of one lane's chain: xp holds the lane's rows per
  // step, w + c * stride + 16 j is w row c's element at step j. The rows
  // are addressed from two pointers and one stride, so that the loop needs
  // no more general registers than x86 has.
  // Out of line, with the sums copied into locals: inlined into tile(), or
  // updated through the reference (which may alias xp and w), GCC kept the
  // loop counter and the accumulators in memory.
  __attribute__((noinline)) static void chain(const float* xp, const float* w, size_t stride, int count,
                                              LaneSums& sums) {
    static_assert(kTileCols == 6, "the addressing below names six rows");
    Half acc[Halves][kTileCols];
#pragma GCC unroll 4
    for (int h = 0; h < Halves; ++h)
#pragma GCC unroll 8
      for (int c = 0; c < kTileCols; ++c) acc[h][c] = sums.v[h][c];
    const float* low_rows = w;                // rows 0-2
    const float* high_rows = w + 3 * stride;  // rows 3-5
    const float* const end = xp + static_cast<size_t>(count) * kRows;
    for (; xp != end; xp += kRows, low_rows += kLanes, high_rows += kLanes) {
      Half xv[Halves];
#pragma GCC unroll 4
      for (int h = 0; h < Halves; ++h) xv[h] = in_register(load_half(xp + 8 * h));
      const float values[kTileCols] = {low_rows[0],  low_rows[stride],  low_rows[2 * stride],
                                       high_rows[0], high_rows[stride], high_rows[2 * stride]};
#pragma GCC unroll 8
      for (int c = 0; c < kTileCols; ++c) {
        const Half wv = in_register(splat(values[c]));
#pragma GCC unroll 4
        for (int h = 0; h < Halves; ++h) acc[h][c] = multiply_add(acc[h][c], xv[h], wv);
      }
    }
#pragma GCC unroll 4
    for (int h = 0; h < Halves; ++h)
#pragma GCC unroll 8
      for (int c = 0; c < kTileCols; ++c) sums.v[h][c] = acc[h][c];
  }

  // The tree of matmul_lanes::reduce over the 16 lanes' sums, 8 elements
  // at a time: h[i] = v[i] + v[i + 8]; q[i] = h[i] + h[i + 4];
  // (q0 + q2) + (q1 + q3).
  static Half reduce_lanes(const LaneSums (&lanes)[kLanes], int half, int col) {
    Half h[8], q[4];
    for (int i = 0; i < 8; ++i) h[i] = lanes[i].v[half][col] + lanes[i + 8].v[half][col];
    for (int i = 0; i < 4; ++i) q[i] = h[i] + h[i + 4];
    return (q[0] + q[2]) + (q[1] + q[3]);
  }
};

// The w side of a tile: six rows at a fixed stride (the last panel's
// missing rows are zeros in a copy, their results dropped) and their last
// partial step, zero-padded. Narrow weights are widened into the copy, six
// rows at a time, so they stay two bytes a weight in memory.
struct WPanel {
  const float* rows;
  size_t stride;
  float tail[kTileCols][kLanes];
  int cols;
};

void prepare_w_panel(const WeightRows& w, int Kin, int N, int n, std::vector<float>& copy, WPanel& panel) {
  panel.cols = std::min(kTileCols, N - n);
  panel.stride = static_cast<size_t>(Kin);
  if (w.f32 && panel.cols == kTileCols) {
    panel.rows = w.f32 + static_cast<size_t>(n) * Kin;
  } else {
    copy.resize(static_cast<size_t>(kTileCols) * Kin);
    std::fill(copy.begin() + static_cast<ptrdiff_t>(panel.cols) * Kin, copy.end(), 0.0f);
    for (int c = 0; c < panel.cols; ++c) {
      const size_t row = static_cast<size_t>(n + c) * Kin;
      float* dst = copy.data() + static_cast<size_t>(c) * Kin;
      if (w.f32) {
        std::copy(w.f32 + row, w.f32 + row + Kin, dst);
      } else {
        w.widen(w.narrow + row, Kin, dst);
      }
    }
    panel.rows = copy.data();
  }
  const int full = Kin / kLanes * kLanes;
  for (int c = 0; c < kTileCols; ++c) {
    const float* row = panel.rows + static_cast<size_t>(c) * Kin;
    std::fill(panel.tail[c], panel.tail[c] + kLanes, 0.0f);
    std::copy(row + full, row + Kin, panel.tail[c]);
  }
}

// y's rows [0, rows) x columns [0, panel.cols) from one packed x panel.
template <int Halves>
void tile(const float* xp, const WPanel& panel, int Kin, int steps, int rows, int N, float* y,
          typename Tile<Halves>::LaneSums (&lanes)[kLanes]) {
  using T = Tile<Halves>;
  const int full_steps = Kin / kLanes;
  for (int first = 0; first < steps; first += kChunkSteps) {
    const int last = std::min(steps, first + kChunkSteps);
    const int in_w = std::max(0, std::min(last, full_steps) - first);  // steps read from w itself
    const float* chunk = xp + static_cast<size_t>(first) * kLanes * T::kRows;
    for (int lane = 0; lane < kLanes; ++lane) {
      typename T::LaneSums sums = {};
      if (first > 0) sums = lanes[lane];
      const float* lane_x = chunk + static_cast<size_t>(lane) * (last - first) * T::kRows;
      T::chain(lane_x, panel.rows + static_cast<size_t>(first) * kLanes + lane, panel.stride, in_w, sums);
      if (last > full_steps)  // the zero-padded step past Kin / 16 * 16
        T::chain(lane_x + static_cast<size_t>(in_w) * T::kRows, &panel.tail[0][lane], kLanes, 1, sums);
      lanes[lane] = sums;
    }
  }
  for (int h = 0; h < Halves; ++h)
    for (int c = 0; c < panel.cols; ++c) {
      float column[8];
      const Half sum = T::reduce_lanes(lanes, h, c);
      std::memcpy(column, &sum, sizeof(column));
      for (int i = 0; i < 8 && 8 * h + i < rows; ++i) y[static_cast<size_t>(8 * h + i) * N + c] = column[i];
    }
}

template <int Halves>
void run(const float* x, const WeightRows& w, int T, int Kin, int N, float* y) {
  constexpr int kRows = Tile<Halves>::kRows;
  const int steps = (Kin + kLanes - 1) / kLanes;
  const int x_panels = (T + kRows - 1) / kRows;
  const int w_panels = (N + kTileCols - 1) / kTileCols;
  const size_t panel_floats = static_cast<size_t>(steps) * kLanes * kRows;
  const bool parallel = static_cast<long>(T) * Kin * N >= kParallelWork;

  static thread_local std::vector<float> packed_x;
  packed_x.resize(static_cast<size_t>(x_panels) * panel_floats);
  float* const px = packed_x.data();
  parallel_for(x_panels, parallel, [&](int64_t panel) {
    const int p = static_cast<int>(panel);
    Tile<Halves>::pack_x(x + static_cast<size_t>(p) * kRows * Kin, Kin, std::min(kRows, T - p * kRows), steps,
                         px + static_cast<size_t>(p) * panel_floats);
  });

  const int pass_panels = std::max<int>(1, static_cast<int>(kPassBytes / (panel_floats * sizeof(float))));
  for (int first = 0; first < x_panels; first += pass_panels) {
    const int last = std::min(x_panels, first + pass_panels);
    parallel_for(w_panels, parallel, [&](int64_t b) {
      static thread_local std::vector<float> copy;
      const int n = static_cast<int>(b) * kTileCols;
      WPanel panel;
      prepare_w_panel(w, Kin, N, n, copy, panel);
      typename Tile<Halves>::LaneSums lanes[kLanes];
      for (int p = first; p < last; ++p) {
        const int t = p * kRows;
        tile<Halves>(px + static_cast<size_t>(p) * panel_floats, panel, Kin, steps, std::min(kRows, T - t), N,
                     y + static_cast<size_t>(t) * N + n, lanes);
      }
    });
  }
}

}  // namespace

void matmul_packed(const float* x, const WeightRows& w, int T, int Kin, int N, float* y) {
  run<2>(x, w, T, Kin, N, y);
}

void matmul_packed(const float* x, const float* w, int T, int Kin, int N, float* y) {
  matmul_packed(x, WeightRows{w, nullptr, nullptr}, T, Kin, N, y);
}

}  // namespace tandem::cpu
