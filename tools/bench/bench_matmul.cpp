// `tandem-bench matmul`: our batch-invariant CPU matmul against OpenBLAS's
// sgemm on the same inputs, side by side, at decode, verification and
// prefill shapes; then the fused qkv as one op against three. Prints times
// and the ratios; asserts nothing.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"
#include "tools/bench/bench_suites.h"
#include "tools/bench/same_run_references.h"

namespace tandem::bench {
namespace {

// The fused qkv projection as three matmuls (one per row range) against
// one cpu::matmul over the three outputs (Backend::matmul_parts), rounds
// alternated. The weights rotate through copies filling 64 MiB, more than
// the last-level cache, as a decode step's layers do.
void bench_qkv_parts(int rounds) {
  struct Shape {
    int C, q, kv;
    const char* model;
  };
  const Shape shapes[] = {{256, 256, 128, "models/tiny/target"}, {512, 512, 256, "bench-24m"}};
  std::mt19937 rng(2);
  std::normal_distribution<float> normal;
  std::printf("\nthe fused qkv: three matmuls against one op over the three outputs (median us per qkv)\n");
  std::printf("%-20s %5s %12s %12s %9s\n", "model", "T", "three", "one op", "speed-up");
  for (const Shape& s : shapes) {
    const size_t floats = static_cast<size_t>(s.q + 2 * s.kv) * s.C;
    const size_t copies = std::max<size_t>(2, (size_t{64} << 20) / (floats * sizeof(float)));
    std::vector<float> w(floats * copies);
    for (float& v : w) v = normal(rng);
    for (int T : {1, 5}) {
      std::vector<float> x(static_cast<size_t>(T) * s.C), q(static_cast<size_t>(T) * s.q),
          k(static_cast<size_t>(T) * s.kv), v(static_cast<size_t>(T) * s.kv);
      for (float& value : x) value = normal(rng);
      const MatmulOutput outputs[] = {{s.q, q.data()}, {s.kv, k.data()}, {s.kv, v.data()}};
      std::vector<double> three, one;
      for (int round = 0; round < rounds; ++round) {
        for (bool fused : {false, true}) {
          const auto start = std::chrono::steady_clock::now();
          for (size_t c = 0; c < copies; ++c) {
            const float* wc = w.data() + c * floats;
            if (fused) {
              cpu::matmul(x.data(), wc, nullptr, T, s.C, outputs);
            } else {
              for (size_t first = 0; const MatmulOutput& out : outputs) {
                cpu::matmul(x.data(), wc + first * s.C, nullptr, T, s.C, out.rows, out.y);
                first += static_cast<size_t>(out.rows);
              }
            }
          }
          const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                                .count() / static_cast<double>(copies);
          (fused ? one : three).push_back(us);
        }
      }
      std::sort(three.begin(), three.end());
      std::sort(one.begin(), one.end());
      const double a = three[three.size() / 2], b = one[one.size() / 2];
      std::printf("%-20s %5d %12.2f %12.2f %8.2fx\n", s.model, T, a, b, a / b);
    }
  }
}

int bench_matmul(int rounds, int threads) {
  require(threads >= 0 && threads <= 1024, ErrorKind::invalid_argument,
          "--threads must be in [0, 1024], got " + std::to_string(threads));
  require(rounds >= 1 && rounds <= 10000, ErrorKind::invalid_argument,
          "--rounds must be in [1, 10000], got " + std::to_string(rounds));
  // Both sides get the same number of threads.
  cpu::configure_threads(threads, cpu::Pinning::none);
  openblas_set_num_threads(cpu::default_pool().threads());
  struct Shape {
    int T, Kin, N;
    const char* what;
  };
  const Shape shapes[] = {{1, 512, 2752, "decode, gate+up of bench-24m"},
                          {5, 512, 2752, "verify, gamma 4"},
                          {128, 512, 512, "prefill, o_proj"},
                          {128, 512, 2752, "prefill, gate+up"},
                          {128, 1376, 512, "prefill, down"},
                          {128, 4096, 4096, "prefill, 8B-sized square"}};
  std::printf("median of %d rounds, the two sides alternating\n", rounds);
  std::printf("%-28s %5s %6s %6s %12s %12s %9s\n", "shape", "T", "Kin", "N", "ours ms",
              "openblas ms", "speed-up");
  for (const Shape& s : shapes) {
    const MatmulPair pair = time_projection({s.what, {{s.Kin, s.N}}}, s.T, rounds);
    std::printf("%-28s %5d %6d %6d %12.3f %12.3f %8.2fx\n", s.what, s.T, s.Kin, s.N, pair.ours_seconds * 1e3,
                pair.blas_seconds * 1e3, pair.blas_seconds / pair.ours_seconds);
  }
  bench_qkv_parts(200);
  return 0;
}

}  // namespace

cli::Run define_matmul(cli::Command& command) {
  auto rounds = std::make_shared<int>(21);
  auto threads = std::make_shared<int>(0);
  cli::add_value(command, "--rounds", *rounds, "alternating rounds per shape (each side ~5 ms a round); medians");
  cli::add_value(command, "--threads", *threads,
                 "threads of each side; 0: one per CPU this process may run on");
  return [rounds, threads] { return bench_matmul(*rounds, *threads); };
}

}  // namespace tandem::bench
