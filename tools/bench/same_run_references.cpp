#include "tools/bench/same_run_references.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <random>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"

namespace tandem::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Lanes = float __attribute__((vector_size(8 * sizeof(float))));

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Sum of [begin, end) with four independent vector accumulators, so that
// the adds never wait on each other and the loads alone set the pace.
float sum_range(const float* begin, const float* end) {
  Lanes acc[4] = {};
  const float* p = begin;
  for (; p + 32 <= end; p += 32) {
    for (int a = 0; a < 4; ++a) {
      Lanes v;
      std::memcpy(&v, p + 8 * a, sizeof(v));
      acc[a] += v;
    }
  }
  float total = 0;
  for (; p < end; ++p) total += *p;
  for (const Lanes& a : acc)
    for (int i = 0; i < 8; ++i) total += a[i];
  return total;
}

}  // namespace

size_t last_level_cache_bytes() {
  // The kernel's description of cpu0's caches, highest level last; the C
  // library's sysconf reports 256 MiB of L3 on some virtual machines whose
  // sysfs says 32 MiB.
  size_t bytes = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream file("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string text;
    if (!(file >> text) || text.empty()) continue;
    const size_t scale = text.back() == 'K' ? 1024 : text.back() == 'M' ? 1024 * 1024 : 1;
    bytes = std::max(bytes, std::stoul(text) * scale);
  }
  if (bytes > 0) return bytes;
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return l3 > 0 ? static_cast<size_t>(l3) : size_t{32} << 20;
}

StreamRead::StreamRead(size_t bytes) : buffer_(bytes / sizeof(float), 1.0f) {}

double StreamRead::gigabytes_per_second(int rounds) {
  // Each thread reads its own contiguous slice, as each matmul thread
  // streams its own rows of w.
  constexpr int kSlices = 64;
  const size_t n = buffer_.size();
  const float* data = buffer_.data();
  double best = 1e30;
  float sink = 0;
  for (int r = 0; r < rounds; ++r) {
    float partial[kSlices] = {};
    const auto start = Clock::now();
    // On the kernels' own thread pool, so that it reads with the threads
    // (and the placement) the matmuls have.
    cpu::parallel_for(kSlices, true, [&](int64_t s) {
      partial[s] = sum_range(data + n * s / kSlices, data + n * (s + 1) / kSlices);
    });
    best = std::min(best, seconds_since(start));
    for (float p : partial) sink += p;
  }
  checksum_ = sink;  // kept, so that the reads cannot be optimised away
  return static_cast<double>(n * sizeof(float)) / best / 1e9;
}

std::vector<ProjectionShape> prefill_projections(const ModelConfig& c) {
  const int C = c.hidden_size;
  return {{"qkv", {{C, c.q_dim()}, {C, c.kv_dim()}, {C, c.kv_dim()}}, true},
          {"o", {{c.q_dim(), C}}},
          {"gate_up", {{C, 2 * c.intermediate_size}}},
          {"down", {{c.intermediate_size, C}}},
          {"lm_head", {{C, c.vocab_size}}}};
}

MatmulPair time_projection(const ProjectionShape& shape, int T, int repeats) {
  struct Call {
    int Kin, N;
    std::vector<float> x, w, y;
  };
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<Call> calls;
  for (const auto& [Kin, N] : shape.calls) {
    Call call{Kin, N, std::vector<float>(static_cast<size_t>(T) * Kin),
              std::vector<float>(static_cast<size_t>(N) * Kin), std::vector<float>(static_cast<size_t>(T) * N)};
    for (float& v : call.x) v = normal(rng);
    for (float& v : call.w) v = normal(rng);
    calls.push_back(std::move(call));
  }
  // One op over stacked weights (the fused qkv): ours as the forward pass
  // issues it, every range into its own output from one x; OpenBLAS as one
  // sgemm over the stacked rows (its best case).
  std::vector<float> stacked_w, stacked_y;
  std::vector<MatmulOutput> outputs;
  if (shape.one_op) {
    for (Call& c : calls) {
      stacked_w.insert(stacked_w.end(), c.w.begin(), c.w.end());
      outputs.push_back({c.N, c.y.data()});
    }
    stacked_y.resize(static_cast<size_t>(T) * (stacked_w.size() / static_cast<size_t>(calls[0].Kin)));
  }
  auto ours = [&] {
    if (shape.one_op) {
      cpu::matmul(calls[0].x.data(), stacked_w.data(), nullptr, T, calls[0].Kin, outputs);
      return;
    }
    for (Call& c : calls) cpu::matmul(c.x.data(), c.w.data(), nullptr, T, c.Kin, c.N, c.y.data());
  };
  auto blas = [&] {
    if (shape.one_op) {
      const int Kin = calls[0].Kin, N = static_cast<int>(stacked_w.size() / static_cast<size_t>(Kin));
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, N, Kin, 1.0f, calls[0].x.data(), Kin,
                  stacked_w.data(), Kin, 0.0f, stacked_y.data(), N);
      return;
    }
    for (Call& c : calls)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, c.N, c.Kin, 1.0f, c.x.data(), c.Kin,
                  c.w.data(), c.Kin, 0.0f, c.y.data(), c.N);
  };
  // Enough calls per sample that a sample lasts about 5 ms.
  ours();
  blas();
  auto start = Clock::now();
  ours();
  const int calls_per_sample = std::clamp(static_cast<int>(0.005 / seconds_since(start)), 1, 1000);
  // Each sample: a pause, then 20 ms of untimed calls, then the timed ones.
  // The pause lets the other side's threads go to sleep: OpenBLAS's OpenMP
  // workers keep spinning after a call (libgomp spins GOMP_SPINCOUNT
  // rounds, milliseconds), which would take the cores from our sample;
  // ours park after 50 µs. The untimed calls bring the cores back to
  // speed after the pause: on our 2-CPU virtual machines the first ~10 ms
  // of work after an idle pause ran up to 2x slower, so whichever side ran
  // first after it paid for that alone (and OpenBLAS, timed second, never
  // did).
  const auto sample = [&](auto& side, std::vector<double>& seconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (const auto warm = Clock::now(); seconds_since(warm) < 0.02;) side();
    const auto begin = Clock::now();
    for (int i = 0; i < calls_per_sample; ++i) side();
    seconds.push_back(seconds_since(begin) / calls_per_sample);
  };
  std::vector<double> ours_s, blas_s;
  for (int r = 0; r < repeats; ++r) {
    sample(ours, ours_s);
    sample(blas, blas_s);
  }
  return {median(ours_s), median(blas_s)};
}

}  // namespace tandem::bench
