// `tandem-bench matmul`: our batch-invariant CPU matmul against OpenBLAS's
// sgemm on the same inputs, side by side, at decode, verification and
// prefill shapes. Prints times and the ratio; asserts nothing.
#include <cblas.h>

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

namespace tandem::bench {
namespace {

// Mean seconds per call over at least `min_seconds` of repeated calls.
template <typename F>
double seconds_per_call(F&& call, double min_seconds) {
  call();  // warm caches and the thread pool
  const auto start = std::chrono::steady_clock::now();
  int calls = 0;
  double elapsed = 0;
  do {
    call();
    ++calls;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (elapsed < min_seconds);
  return elapsed / calls;
}

int bench_matmul(double min_seconds, int threads) {
  require(threads >= 0 && threads <= 1024, ErrorKind::invalid_argument,
          "--threads must be in [0, 1024], got " + std::to_string(threads));
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
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::printf("%-28s %5s %6s %6s %12s %12s %9s\n", "shape", "T", "Kin", "N", "ours ms",
              "openblas ms", "speed-up");
  for (const Shape& s : shapes) {
    std::vector<float> x(static_cast<size_t>(s.T) * s.Kin), w(static_cast<size_t>(s.N) * s.Kin);
    std::vector<float> y(static_cast<size_t>(s.T) * s.N);
    for (float& v : x) v = normal(rng);
    for (float& v : w) v = normal(rng);
    const double ours = seconds_per_call(
        [&] { cpu::matmul(x.data(), w.data(), nullptr, s.T, s.Kin, s.N, y.data()); }, min_seconds);
    const double blas = seconds_per_call(
        [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s.T, s.N, s.Kin, 1.0f, x.data(),
                      s.Kin, w.data(), s.Kin, 0.0f, y.data(), s.N);
        },
        min_seconds);
    std::printf("%-28s %5d %6d %6d %12.3f %12.3f %8.2fx\n", s.what, s.T, s.Kin, s.N, ours * 1e3,
                blas * 1e3, blas / ours);
  }
  return 0;
}

}  // namespace

cli::Run define_matmul(cli::Command& command) {
  auto seconds = std::make_shared<double>(0.3);
  auto threads = std::make_shared<int>(0);
  cli::add_value(command, "--seconds", *seconds, "time each side at least this long per shape");
  cli::add_value(command, "--threads", *threads,
                 "threads of each side; 0: one per CPU this process may run on");
  return [seconds, threads] { return bench_matmul(*seconds, *threads); };
}

}  // namespace tandem::bench
