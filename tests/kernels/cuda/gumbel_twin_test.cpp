// The CUDA Gumbel-max ops against their CPU twins, through the Backend
// interface only: sample_gumbel, and verify on gumbel blocks (alone and
// mixed with rejection blocks in one call).
//
// Tolerances: tokens, accepted counts and gumbel betas (0 or 1) exactly.
// Both sides race the same Philox clocks E_v = -log1p(-u) and divide in
// double, correctly rounded; only log1p may differ by an ulp between CUDA
// and glibc (kernels/cuda/gumbel_device.cuh), which can change a token only
// where two tokens' E/p are within ~1e-16 relative of each other: never in
// the few thousand races here, so any mismatch is a bug. Rejection blocks'
// betas as in sampling_twin_test.cpp (1e-5).
// Every test first skips on a machine without a CUDA device.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/error.h"
#include "kernels/backend.h"
#include "kernels/philox.h"
#include "tests/support/cuda_twin.h"
#include "tests/support/test_inputs.h"

namespace tandem {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// `rows` standardized rows over V tokens: temperatures, top-k and top-p
// mixed, so some rows are long and flat, some a few tokens, some one.
std::vector<float> probability_rows(int V, int rows, std::mt19937& rng, Backend& cpu) {
  std::normal_distribution<float> logit(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(rows) * V);
  for (float& x : logits) x = logit(rng);
  std::vector<SamplingParams> params;
  for (int r = 0; r < rows; ++r) {
    const int kind = r % 5;
    params.push_back(test_support::sampling_params(kind == 0 ? 1.0f : 0.7f + 0.2f * kind,
                                                   kind == 1 ? std::min(V, 40) : 0,
                                                   kind == 2 ? 0.9f : 1.0f));
  }
  std::vector<float> probs(logits.size());
  cpu.standardize(logits.data(), rows, V, params, probs.data());
  return probs;
}

TEST(GumbelTwin, SampleGumbelMatchesCpuOnManyRows) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend();
  auto cpu = make_cpu_backend();
  std::mt19937 rng(17u);
  int draws = 0;
  for (auto [V, rows, trials] : {std::tuple{151936, 6, 10}, std::tuple{32000, 24, 20},
                                 std::tuple{37, 64, 50}, std::tuple{1, 3, 2}}) {
    std::vector<float> probs = probability_rows(V, rows, rng, *cpu);
    if (V > 3) {  // entries the race must skip, as raw rows may hold
      probs[1] = kNaN;
      probs[2] = -0.5f;
      probs[3] = kInf;
    }
    Buffer device = testing::to_backend(*gpu, probs);
    for (int trial = 0; trial < trials; ++trial) {
      std::vector<NoiseKey> keys;
      for (int r = 0; r < rows; ++r) {
        keys.push_back({(static_cast<uint64_t>(rng()) << 32) | rng(),
                        trial == 0 ? r : static_cast<int64_t>(rng() % 1'000'000)});
      }
      std::vector<int32_t> want(rows, -7), got(rows, -7);
      cpu->sample_gumbel(probs.data(), rows, V, keys, want.data());
      gpu->sample_gumbel(device.data(), rows, V, keys, got.data());
      ASSERT_EQ(got, want) << "V " << V << ", trial " << trial;
      draws += rows;
    }
  }
  EXPECT_EQ(draws, 6 * 10 + 24 * 20 + 64 * 50 + 3 * 2);
}

TEST(GumbelTwin, SampleGumbelErrorsMatchCpu) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend();
  auto cpu = make_cpu_backend();
  const int V = 5;
  const std::vector<float> probs = {0.2f, 0.2f, 0.2f, 0.2f, 0.2f, 0.0f, kNaN, -1.0f, kInf, 0.0f};
  Buffer device = testing::to_backend(*gpu, probs);
  const std::vector<NoiseKey> keys = {{1, 0}, {1, 1}};
  for (Backend* backend : {cpu.get(), gpu.get()}) {
    const float* rows = backend == cpu.get() ? probs.data() : device.data();
    std::vector<int32_t> out(2, -7);
    try {
      backend->sample_gumbel(rows, 2, V, keys, out.data());
      ADD_FAILURE() << "no error from " << backend->description();
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("probability row 1 has no positive finite mass"));
    }
    EXPECT_EQ(out, std::vector<int32_t>(2, -7));  // row 0's token is not written either
    EXPECT_THROW(backend->sample_gumbel(rows, 2, V, std::span(keys).first(1), out.data()), Error);
    EXPECT_THROW(backend->sample_gumbel(rows, 2, 0, keys, out.data()), Error);
  }
  std::vector<int32_t> none;
  EXPECT_NO_THROW(gpu->sample_gumbel(nullptr, 0, V, {}, none.data()));
}

// ---- verification ------------------------------------------------------------

struct TwinBlock {
  int gamma = 0;
  std::vector<int32_t> drafted;
  std::vector<float> p, q;  // (γ+1, V), (γ, V) or empty
  int64_t first_position = 0;
  uint64_t seed = 0;
  Coupling coupling = Coupling::gumbel;
  Buffer device_p, device_q;

  VerifyBlock view(bool on_device) const {
    const float* rows_p = on_device ? device_p.data() : p.data();
    const float* rows_q = q.empty() ? nullptr : on_device ? device_q.data() : q.data();
    VerifyBlock b{gamma, drafted.data(), rows_p, rows_q, first_position, seed, 1.0f};
    b.coupling = coupling;
    return b;
  }
};

// A block whose drafts agree with the target's own Gumbel draws for a random
// prefix (so every n from 0 to γ occurs), with q rows or without. Rejection
// blocks get q rows that give every drafted token mass.
TwinBlock random_block(int V, Coupling coupling, std::mt19937& rng, Backend& cpu) {
  TwinBlock b;
  b.gamma = static_cast<int>(rng() % 9);
  b.coupling = coupling;
  b.seed = (static_cast<uint64_t>(rng()) << 32) | rng();
  b.first_position = rng() % 1'000'000;
  b.p = probability_rows(V, b.gamma + 1, rng, cpu);
  const int agree = static_cast<int>(rng() % (b.gamma + 1));
  for (int j = 0; j < b.gamma; ++j) {
    const NoiseKey key{b.seed, b.first_position + j};
    int32_t t = -1;
    cpu.sample_gumbel(b.p.data() + static_cast<size_t>(j) * V, 1, V, std::span(&key, 1), &t);
    b.drafted.push_back(j < agree ? t : static_cast<int32_t>(rng() % V));
  }
  if (b.gamma > 0 && rng() % 2 == 0) {
    b.q.assign(static_cast<size_t>(b.gamma) * V, 0.5f / V);
    for (int j = 0; j < b.gamma; ++j) b.q[static_cast<size_t>(j) * V + b.drafted[j]] += 0.5f;
  }
  return b;
}

// Both backends on `blocks`: outcomes exactly, beta exactly for gumbel blocks.
void expect_verify_matches(std::vector<TwinBlock>& blocks, int V, Backend& gpu, int* kept,
                           int* cut) {
  std::vector<VerifyBlock> on_cpu, on_gpu;
  size_t drafts = 0;
  for (TwinBlock& b : blocks) {
    b.device_p = testing::to_backend(gpu, b.p);
    if (!b.q.empty()) b.device_q = testing::to_backend(gpu, b.q);
    on_cpu.push_back(b.view(false));
    on_gpu.push_back(b.view(true));
    drafts += static_cast<size_t>(b.gamma);
  }
  for (bool with_beta : {true, false}) {
    std::vector<VerifyOutcome> want(blocks.size(), {-7, -7}), got(blocks.size(), {-7, -7});
    std::vector<float> want_beta(with_beta ? drafts : 0, -1.0f), got_beta(want_beta);
    make_cpu_backend()->verify(on_cpu, V, want, want_beta);
    gpu.verify(on_gpu, V, got, got_beta);
    size_t at = 0;
    for (size_t i = 0; i < blocks.size(); ++i) {
      EXPECT_EQ(got[i].accepted, want[i].accepted) << "V " << V << ", block " << i;
      EXPECT_EQ(got[i].token, want[i].token) << "V " << V << ", block " << i;
      for (int j = 0; with_beta && j < blocks[i].gamma; ++j, ++at) {
        if (blocks[i].coupling == Coupling::gumbel) {
          EXPECT_EQ(got_beta[at], want_beta[at]) << "block " << i << ", j " << j;
        } else {
          EXPECT_NEAR(got_beta[at], want_beta[at], 1e-5) << "block " << i << ", j " << j;
        }
      }
      if (with_beta && blocks[i].coupling == Coupling::gumbel && blocks[i].gamma > 0) {
        ++(want[i].accepted == blocks[i].gamma ? *kept : *cut);
      }
    }
  }
}

TEST(GumbelTwin, VerifyGumbelBlocksMatchCpuMixedWithRejection) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend();
  auto cpu = make_cpu_backend();
  int kept = 0, cut = 0;
  for (auto [V, count] : {std::pair{32000, 16}, std::pair{300, 200}}) {
    std::mt19937 rng(99u + static_cast<uint32_t>(V));
    std::vector<TwinBlock> blocks;
    for (int i = 0; i < count; ++i) {
      const Coupling coupling = i % 3 == 2 ? Coupling::rejection : Coupling::gumbel;
      blocks.push_back(random_block(V, coupling, rng, *cpu));
    }
    expect_verify_matches(blocks, V, *gpu, &kept, &cut);
  }
  EXPECT_GT(kept, 10);  // every draft kept (the bonus token) and cut short both ran
  EXPECT_GT(cut, 40);
}

TEST(GumbelTwin, VerifyGumbelContractViolationsMatchCpu) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend();
  auto cpu = make_cpu_backend();
  const int V = 40;
  std::mt19937 rng(5u);
  // blocks[1] is the bad one; `message` must be in both backends' errors.
  auto expect_both_raise = [&](TwinBlock bad, float lenience, const std::string& message) {
    std::vector<TwinBlock> blocks;
    blocks.push_back(random_block(V, Coupling::gumbel, rng, *cpu));
    blocks.push_back(std::move(bad));
    std::vector<VerifyBlock> on_cpu, on_gpu;
    for (TwinBlock& b : blocks) {
      b.device_p = testing::to_backend(*gpu, b.p);
      if (!b.q.empty()) b.device_q = testing::to_backend(*gpu, b.q);
      on_cpu.push_back(b.view(false));
      on_gpu.push_back(b.view(true));
    }
    on_cpu[1].lenience = on_gpu[1].lenience = lenience;
    for (auto* views : {&on_cpu, &on_gpu}) {
      std::vector<VerifyOutcome> out(2, {-7, -7});
      try {
        (views == &on_cpu ? *cpu : *gpu).verify(*views, V, out, {});
        ADD_FAILURE() << "no error: " << message;
      } catch (const Error& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr(message));
      }
      EXPECT_EQ(out[0].accepted, -7);  // nothing written
    }
  };
  TwinBlock lenient = random_block(V, Coupling::gumbel, rng, *cpu);
  expect_both_raise(std::move(lenient), 0.5f, "blocks[1].lenience");
  // Row 0 without mass: it is always drawn from.
  TwinBlock empty = random_block(V, Coupling::gumbel, rng, *cpu);
  std::fill(empty.p.begin(), empty.p.begin() + V, 0.0f);
  expect_both_raise(std::move(empty), 1.0f, "blocks[1].p row 0 has no positive finite mass");
  // A rejection block's empty row is named with its index on both too.
  TwinBlock plain = random_block(V, Coupling::rejection, rng, *cpu);
  plain.gamma = 0;
  plain.drafted.clear();
  plain.q.clear();
  plain.p.assign(V, 0.0f);
  expect_both_raise(std::move(plain), 1.0f, "blocks[1].p row 0 has no positive finite mass");
}

}  // namespace
}  // namespace tandem
