// The many-row path of the batch-invariant matmul: the same operations per
// output element as the streaming path (matmul_stream.h, matmul_lanes.h), in an
// order of evaluation built for the cache and the register file.
//
// The sixteen lane sums of an element are independent chains: lane l sums
// x[t][k] w[n][k] over k = l, l + 16, l + 32, ... by fused multiply-adds,
// and only the final tree joins them. So each lane is a matrix product of
// its own, computed here one lane at a time as a textbook register tile:
// 16 rows of x (two 8-float vectors) times 6 rows of w (one value broadcast
// at a time) in 12 accumulator registers, 8 loads per 12 multiply-adds.
// (Short batches take the streaming path, matmul_stream.h.)
//
// Both operands are packed lane by lane, so that a lane's chain reads two
// contiguous runs from its first k to its last, in one call: x as panels
// of 16 rows (per lane, per step, the 16 rows' values), w as panels of 6
// rows (per lane, per step, a record of the 6 rows' values and 2 zeros, 32
// bytes), each zero-padded past Kin (the same padding as the streaming
// path's last partial step) and past the last row. Packing is 8 x 8
// transposes, 8 floats per instruction. A thread packs each w panel once
// (narrow weights widened exactly on the way) and meets it with every x
// panel of a pass, so w is read from memory once per pass; a pass is as
// many x panels as 4 MiB holds (a 128-token prefill of an 8B model's
// 4096-wide projection is one pass).
// The tile's 16 lane results wait in a small scratch for the tree, which is
// then evaluated 8 elements per instruction. w panels are claimed one at a
// time (parallel_for_each), so the threads finish within a panel of each
// other.
#include <algorithm>
#include <vector>

#include "kernels/cpu/matmul_lanes.h"
#include "kernels/cpu/thread_pool.h"

namespace tandem::cpu {
namespace {

using namespace matmul_lanes;

constexpr int kTileRows = 16;  // rows of x per tile: two Halves
constexpr int kTileCols = 6;   // rows of w per tile, broadcast
constexpr int kRecord = 8;     // floats per packed w step: the 6 rows, 2 zeros
// Packed x kept for a pass over every w panel: a share of the last-level
// cache, which streams a chain's x at the tile's pace.
constexpr size_t kPassBytes = size_t{4} << 20;
// Below this many multiply-adds a parallel region costs more than it saves.
constexpr long kParallelWork = 1 << 16;

// One lane's accumulators for a tile: [rows 0-7, rows 8-15][w row].
struct LaneSums {
  Half v[2][kTileCols];
};

inline void store_half(float* p, Half v) { std::memcpy(p, &v, sizeof(v)); }

// Rows [0, count) of x (stride Kin) as one panel: for each lane, for each
// step j, the 16 rows' x[r][lane + 16 j]; zero past Kin and for rows past
// count. Each step is four 8 x 8 transposes (rows by lanes, halves of each).
void pack_x(const float* x, int Kin, int count, int steps, float* dst) {
  const size_t lane_floats = static_cast<size_t>(steps) * kTileRows;
  const int full_steps = Kin / kLanes;
  for (int j = 0; j < full_steps; ++j)
    for (int rows = 0; rows < 2; ++rows)
      for (int lanes = 0; lanes < 2; ++lanes) {
        Half in[8], out[8];
        for (int r = 0; r < 8; ++r) {
          const int row = 8 * rows + r;
          in[r] = row < count ? load_half(x + static_cast<size_t>(row) * Kin + j * kLanes + 8 * lanes) : Half{};
        }
        transpose8(in, out);
        float* first = dst + 8 * lanes * lane_floats + static_cast<size_t>(j) * kTileRows + 8 * rows;
        for (int l = 0; l < 8; ++l) store_half(first + l * lane_floats, out[l]);
      }
  if (full_steps < steps)  // the last, partial step
    for (int lane = 0; lane < kLanes; ++lane) {
      const int k = lane + full_steps * kLanes;
      float* record = dst + lane * lane_floats + static_cast<size_t>(full_steps) * kTileRows;
      for (int r = 0; r < kTileRows; ++r) record[r] = r < count && k < Kin ? x[static_cast<size_t>(r) * Kin + k] : 0.0f;
    }
}

// w's rows [n, n + 6) as one panel: for each lane, for each step j, the
// record of the six rows' w[n + c][lane + 16 j] (padded to 8 floats);
// zero past Kin and past N. Narrow rows are widened into `wide` first.
void pack_w(const WeightRows& w, int Kin, int N, int n, int steps, std::vector<float>& wide, float* dst) {
  const int cols = std::min(kTileCols, N - n);
  const size_t lane_floats = static_cast<size_t>(steps) * kRecord;
  const float* rows[kTileCols];
  if (w.f32 && cols == kTileCols) {
    for (int c = 0; c < cols; ++c) rows[c] = w.f32 + static_cast<size_t>(n + c) * Kin;
  } else {
    wide.resize(static_cast<size_t>(kTileCols) * Kin);
    // Rows past N are zero; the others are written whole below.
    std::fill(wide.begin() + static_cast<std::ptrdiff_t>(cols) * Kin, wide.end(), 0.0f);
    for (int c = 0; c < kTileCols; ++c) rows[c] = wide.data() + static_cast<size_t>(c) * Kin;
    for (int c = 0; c < cols; ++c) {
      const size_t offset = static_cast<size_t>(n + c) * Kin;
      if (w.f32) {
        std::copy(w.f32 + offset, w.f32 + offset + Kin, wide.data() + static_cast<size_t>(c) * Kin);
      } else {
        w.widen(w.narrow + offset, Kin, wide.data() + static_cast<size_t>(c) * Kin);
      }
    }
  }
  const int full_steps = Kin / kLanes;  // steps with all 16 lanes inside Kin
  for (int j = 0; j < full_steps; ++j) {
    for (int half = 0; half < 2; ++half) {
      Half in[8] = {}, out[8];  // rows 6 and 7 zero: the records' padding
      for (int c = 0; c < kTileCols; ++c) in[c] = load_half(rows[c] + j * kLanes + 8 * half);
      transpose8(in, out);
      float* first = dst + 8 * half * lane_floats + static_cast<size_t>(j) * kRecord;
      for (int l = 0; l < 8; ++l) store_half(first + l * lane_floats, out[l]);
    }
  }
  if (full_steps < steps) {  // the last, partial step
    for (int lane = 0; lane < kLanes; ++lane) {
      const int k = lane + full_steps * kLanes;
      float* record = dst + lane * lane_floats + static_cast<size_t>(full_steps) * kRecord;
      for (int c = 0; c < kRecord; ++c) record[c] = c < kTileCols && k < Kin ? rows[c][k] : 0.0f;
    }
  }
}

// Asks for `count` floats from `p` on in the L2, a line at a time.
inline void prefetch_rows(const float* p, size_t count) {
  const char* bytes = reinterpret_cast<const char*>(p);
  for (size_t offset = 0; offset < count * sizeof(float); offset += 64) __builtin_prefetch(bytes + offset, 0, 2);
}

// One lane's chain over all its steps: xp holds the lane's 16 rows per
// step, wp its record (6 weights, 2 zeros) per step.
// Out of line, with the sums in locals: inlined into tile(), or updated
// through a reference (which may alias xp and wp), GCC kept the loop
// counter and the accumulators in memory.
__attribute__((noinline)) void chain(const float* xp, const float* wp, int steps, LaneSums& sums) {
  Half acc[2][kTileCols];
#pragma GCC unroll 8
  for (int c = 0; c < kTileCols; ++c) acc[0][c] = acc[1][c] = Half{};
  const float* const end = xp + static_cast<size_t>(steps) * kTileRows;
#pragma GCC unroll 2  // half the loop branches; 2 steps of 12 multiply-adds each
  for (; xp != end; xp += kTileRows, wp += kRecord) {
    const Half low = in_register(load_half(xp));
    const Half high = in_register(load_half(xp + 8));
#pragma GCC unroll 8
    for (int c = 0; c < kTileCols; ++c) {
      const Half wv = in_register(splat(wp[c]));
      acc[0][c] = multiply_add(acc[0][c], low, wv);
      acc[1][c] = multiply_add(acc[1][c], high, wv);
    }
  }
#pragma GCC unroll 8
  for (int c = 0; c < kTileCols; ++c) {
    sums.v[0][c] = acc[0][c];
    sums.v[1][c] = acc[1][c];
  }
}

// The tree of matmul_lanes::reduce over the 16 lanes' sums, 8 elements
// at a time: h[i] = v[i] + v[i + 8]; q[i] = h[i] + h[i + 4];
// (q0 + q2) + (q1 + q3).
Half reduce_lanes(const LaneSums (&lanes)[kLanes], int half, int col) {
  Half h[8], q[4];
  for (int i = 0; i < 8; ++i) h[i] = lanes[i].v[half][col] + lanes[i + 8].v[half][col];
  for (int i = 0; i < 4; ++i) q[i] = h[i] + h[i + 4];
  return (q[0] + q[2]) + (q[1] + q[3]);
}

// y's rows [0, rows) x columns [0, cols) from one x panel and one w panel.
void tile(const float* xp, const float* wp, int steps, int rows, int cols, int N, float* y,
          LaneSums (&lanes)[kLanes]) {
  const size_t x_lane = static_cast<size_t>(steps) * kTileRows;
  const size_t w_lane = static_cast<size_t>(steps) * kRecord;
  for (int lane = 0; lane < kLanes; ++lane) chain(xp + lane * x_lane, wp + lane * w_lane, steps, lanes[lane]);
  // The tree gives columns of 8 rows; transposed, each row's (up to) 6
  // results are one store (of a constant size where the panel is full).
  for (int h = 0; h < 2; ++h) {
    Half columns[8] = {}, row_major[8];
    for (int c = 0; c < kTileCols; ++c) columns[c] = reduce_lanes(lanes, h, c);
    transpose8(columns, row_major);
    const int count = std::min(8, rows - 8 * h);
    float* first = y + static_cast<size_t>(8 * h) * N;
    if (cols == kTileCols) {
      for (int i = 0; i < count; ++i) std::memcpy(first + static_cast<size_t>(i) * N, &row_major[i], kTileCols * sizeof(float));
    } else {
      const size_t bytes = static_cast<size_t>(cols) * sizeof(float);
      for (int i = 0; i < count; ++i) std::memcpy(first + static_cast<size_t>(i) * N, &row_major[i], bytes);
    }
  }
}

}  // namespace

void matmul_packed(const float* x, const WeightRows& w, int T, int Kin, std::span<const MatmulOutput> outputs) {
  const int steps = (Kin + kLanes - 1) / kLanes;
  const int x_panels = (T + kTileRows - 1) / kTileRows;
  const size_t x_panel_floats = static_cast<size_t>(steps) * kLanes * kTileRows;
  const size_t w_panel_floats = static_cast<size_t>(steps) * kLanes * kRecord;
  // Each output's w panels, numbered across the outputs: output o's start
  // at first_panel[o], its w rows at first_row[o].
  struct Range {
    int first_panel;
    size_t first_row;
  };
  std::vector<Range> ranges;
  int w_panels = 0;
  long total_rows = 0;
  for (const MatmulOutput& out : outputs) {
    ranges.push_back({w_panels, static_cast<size_t>(total_rows)});
    w_panels += (out.rows + kTileCols - 1) / kTileCols;
    total_rows += out.rows;
  }
  const bool parallel = static_cast<long>(T) * Kin * total_rows >= kParallelWork;

  static thread_local std::vector<float> packed_x;
  packed_x.resize(static_cast<size_t>(x_panels) * x_panel_floats);
  float* const px = packed_x.data();
  parallel_for(x_panels, parallel, [&](int64_t panel) {
    const int p = static_cast<int>(panel);
    pack_x(x + static_cast<size_t>(p) * kTileRows * Kin, Kin, std::min(kTileRows, T - p * kTileRows), steps,
           px + static_cast<size_t>(p) * x_panel_floats);
  });

  const int pass_panels = std::max<int>(1, static_cast<int>(kPassBytes / (x_panel_floats * sizeof(float))));
  for (int first = 0; first < x_panels; first += pass_panels) {
    const int last = std::min(x_panels, first + pass_panels);
    parallel_for_each(w_panels, parallel, [&](int64_t b) {
      static thread_local std::vector<float> packed_w, wide_row;
      size_t o = 0;
      while (o + 1 < ranges.size() && ranges[o + 1].first_panel <= b) ++o;
      const int N = outputs[o].rows;
      const int n = (static_cast<int>(b) - ranges[o].first_panel) * kTileCols;
      const size_t row = ranges[o].first_row + static_cast<size_t>(n);  // the panel's first row of w
      packed_w.resize(w_panel_floats);
      pack_w(w.rows_from(ranges[o].first_row * static_cast<size_t>(Kin)), Kin, N, n, steps, wide_row,
             packed_w.data());
      // The rows after this panel's (the next panel's, whichever thread
      // takes it) on their way to the cache while these tiles run.
      const size_t next = row + static_cast<size_t>(std::min(kTileCols, N - n));
      if (w.f32 && next < static_cast<size_t>(total_rows))
        prefetch_rows(w.f32 + next * Kin, std::min<size_t>(kTileCols, static_cast<size_t>(total_rows) - next) * Kin);
      LaneSums lanes[kLanes];
      for (int p = first; p < last; ++p) {
        const int t = p * kTileRows;
        tile(px + static_cast<size_t>(p) * x_panel_floats, packed_w.data(), steps, std::min(kTileRows, T - t),
             std::min(kTileCols, N - n), N, outputs[o].y + static_cast<size_t>(t) * N + n, lanes);
      }
    });
  }
}

void matmul_packed(const float* x, const WeightRows& w, int T, int Kin, int N, float* y) {
  const MatmulOutput output{N, y};
  matmul_packed(x, w, T, Kin, std::span<const MatmulOutput>(&output, 1));
}

void matmul_packed(const float* x, const float* w, int T, int Kin, int N, float* y) {
  matmul_packed(x, WeightRows{w, nullptr, nullptr}, T, Kin, N, y);
}

}  // namespace tandem::cpu
