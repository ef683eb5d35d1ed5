// The CUDA sampling ops against their CPU twins, through the Backend
// interface only: standardize, argmax, find_nonfinite_rows, sample, verify and verify_greedy.
//
// Backend memory: standardize's logits/probs and verify's p and q rows live
// in each backend's own memory (host vectors for the CPU backend, uploaded
// buffers for CUDA); drafted ids, argmax/sample outputs, outcomes and beta are
// host memory for both.
//
// Tolerances, and why they are what they are:
//   - probabilities: within 1e-6 absolute, and zero exactly where the CPU's
//     are zero (and only there). The CUDA weights use a correctly rounded exp
//     where glibc's expf is within 0.502 ulp, and double sums run in another
//     order: entries may differ by an ulp or so, never by 1e-6, and the top-k
//     and top-p cuts are the same unless a cumulative sum lands within ~1e-14
//     of the threshold, which the data below never arranges except where the
//     sums are exact (equal weights of 1).
//   - argmax, verify_greedy, verify's accepted count: exactly equal (no
//     arithmetic to round differently).
//   - sampled tokens: exactly equal. The GPU's cumulative sums are a parallel
//     prefix sum in double, the CPU's a sequential one; they differ by ~1e-16
//     relative, so a token can differ only when u * total lands that close to
//     a CDF boundary. With Philox uniforms that has a chance of ~1e-16 per
//     boundary crossed, far below one in the few thousand draws here: any
//     mismatch is a bug.
//   - beta: within 1e-5 (a double sum in another order, rounded to float).
// Every test first skips on a machine without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <string>
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

SamplingParams params(float temperature, int top_k = 0, float top_p = 1.0f) {
  return test_support::sampling_params(temperature, top_k, top_p);
}

std::vector<float> random_row(int V, std::mt19937& rng, float scale = 3.0f) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> row(V);
  for (float& x : row) x = normal(rng);
  return row;
}

// Logits rounded to multiples of `step`: many exact ties, also at the max.
std::vector<float> tied_row(int V, std::mt19937& rng, float step) {
  std::vector<float> row = random_row(V, rng, 2.0f);
  for (float& x : row) x = std::round(x / step) * step;
  return row;
}

// A batch of logit rows (rows, V), one SamplingParams each.
struct Batch {
  int V = 0;
  std::vector<float> logits;
  std::vector<SamplingParams> params;
  std::vector<std::string> names;

  void add(std::string name, std::vector<float> row, SamplingParams p) {
    logits.insert(logits.end(), row.begin(), row.end());
    params.push_back(p);
    names.push_back(std::move(name));
  }
  int rows() const { return static_cast<int>(params.size()); }
};

// Every parameter mix and special value standardization has rules for.
Batch mixed_batch(int V, uint32_t seed) {
  std::mt19937 rng(seed);
  const int k = V > 100 ? 40 : V / 3;
  Batch b;
  b.V = V;
  b.add("greedy", random_row(V, rng), params(0.0f));
  b.add("temperature 1", random_row(V, rng), params(1.0f));
  b.add("temperature 0.7", random_row(V, rng), params(0.7f));
  b.add("temperature 3", random_row(V, rng), params(3.0f));
  b.add("top-k 1", random_row(V, rng), params(1.5f, 1));
  b.add("top-k", random_row(V, rng), params(1.0f, k));
  b.add("top-k V-1", random_row(V, rng), params(1.0f, V - 1));
  b.add("top-k V (off)", random_row(V, rng), params(1.0f, V));
  b.add("top-p 0.9", random_row(V, rng), params(0.8f, 0, 0.9f));
  b.add("top-p 0.5", random_row(V, rng), params(1.0f, 0, 0.5f));
  b.add("top-p tiny", random_row(V, rng), params(1.0f, 0, 1e-6f));
  b.add("top-p flat", random_row(V, rng), params(50.0f, 0, 0.95f));
  b.add("top-k and top-p", random_row(V, rng), params(1.2f, k, 0.8f));
  b.add("ties, top-k", tied_row(V, rng, 0.5f), params(1.0f, k));
  b.add("ties, top-p", tied_row(V, rng, 0.5f), params(1.0f, 0, 0.6f));
  b.add("ties, both", tied_row(V, rng, 1.0f), params(0.9f, k, 0.7f));
  b.add("ties, greedy", tied_row(V, rng, 1.0f), params(0.0f));
  const auto with_min_p = [](SamplingParams p, float min_p) {
    p.min_p = min_p;
    return p;
  };
  b.add("min-p", random_row(V, rng), with_min_p(params(1.0f), 0.1f));
  b.add("min-p 1", random_row(V, rng), with_min_p(params(0.8f), 1.0f));
  b.add("min-p after top-k and top-p", random_row(V, rng), with_min_p(params(1.2f, k, 0.8f), 0.3f));
  b.add("min-p, ties", tied_row(V, rng, 0.5f), with_min_p(params(1.0f, 0, 0.9f), 0.5f));
  b.add("all equal, top-p", std::vector<float>(V, 0.25f), params(1.0f, 0, 0.3f));
  b.add("all equal, top-k", std::vector<float>(V, -2.0f), params(1.0f, k));

  std::vector<float> specials = random_row(V, rng);
  for (int i = 0; i < V; i += 7) specials[i] = -kInf;
  for (int i = 3; i < V; i += 11) specials[i] = kNaN;
  b.add("-inf and NaN", specials, params(1.0f));
  b.add("-inf and NaN, top-k", specials, params(1.0f, k));
  b.add("-inf and NaN, top-p", specials, params(1.0f, 0, 0.9f));
  b.add("-inf and NaN, greedy", specials, params(0.0f));

  std::vector<float> infinite = random_row(V, rng);
  infinite[V / 2] = kInf;
  infinite[1] = kInf;
  infinite[V - 1] = kInf;
  infinite[2] = kNaN;
  b.add("+inf", infinite, params(1.0f));
  b.add("+inf, top-k 1", infinite, params(1.0f, 1));
  b.add("+inf, top-p 0.5", infinite, params(1.0f, 0, 0.5f));
  b.add("+inf, greedy", infinite, params(0.0f));

  b.add("all -inf", std::vector<float>(V, -kInf), params(1.0f));
  b.add("all NaN, top-k", std::vector<float>(V, kNaN), params(1.0f, k));
  b.add("all NaN, greedy", std::vector<float>(V, kNaN), params(0.0f));
  return b;
}

// CUDA's probabilities against the CPU's: within 1e-6, zeros exactly where
// the CPU has them.
void expect_probs_match(const Batch& b, const std::vector<float>& cpu,
                        const std::vector<float>& gpu) {
  ASSERT_EQ(cpu.size(), gpu.size());
  for (int r = 0; r < b.rows(); ++r) {
    int reported = 0;
    for (int i = 0; i < b.V && reported < 5; ++i) {
      const size_t at = static_cast<size_t>(r) * b.V + i;
      const bool ok = cpu[at] == 0.0f ? gpu[at] == 0.0f
                                      : gpu[at] != 0.0f && std::fabs(gpu[at] - cpu[at]) <= 1e-6f;
      if (!ok) {
        ++reported;
        ADD_FAILURE() << "V " << b.V << ", row " << r << " (" << b.names[r] << "), token " << i
                      << ": CPU " << cpu[at] << ", CUDA " << gpu[at];
      }
    }
  }
}

std::vector<float> cpu_standardize(const Batch& b) {
  std::vector<float> probs(b.logits.size());
  make_cpu_backend()->standardize(b.logits.data(), b.rows(), b.V, b.params, probs.data());
  return probs;
}

TEST(SamplingTwin, StandardizeMatchesCpuOnMixedRows) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend();
  for (int V : {32000, 37}) {
    const Batch b = mixed_batch(V, 1000u + static_cast<uint32_t>(V));
    const std::vector<float> cpu = cpu_standardize(b);
    Buffer logits = testing::to_backend(*gpu, b.logits);
    Buffer probs = gpu->allocate(b.logits.size());
    gpu->standardize(logits.data(), b.rows(), V, b.params, probs.data());
    expect_probs_match(b, cpu, testing::to_host(*gpu, probs.data(), probs.size()));
  }
}

TEST(SamplingTwin, StandardizeInPlaceAndWithSharedParams) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend();
  Batch b = mixed_batch(32000, 7u);
  // In place (probs == logits): every row kind must read before it writes.
  {
    const std::vector<float> cpu = cpu_standardize(b);
    Buffer rows = testing::to_backend(*gpu, b.logits);
    gpu->standardize(rows.data(), b.rows(), b.V, b.params, rows.data());
    expect_probs_match(b, cpu, testing::to_host(*gpu, rows.data(), rows.size()));
  }
  // One SamplingParams for every row.
  for (SamplingParams shared : {params(0.9f, 50, 0.9f), params(0.0f)}) {
    b.params.assign(b.params.size(), shared);
    const std::vector<float> cpu = cpu_standardize(b);
    Buffer logits = testing::to_backend(*gpu, b.logits);
    Buffer probs = gpu->allocate(b.logits.size());
    gpu->standardize(logits.data(), b.rows(), b.V, std::span(&shared, 1), probs.data());
    expect_probs_match(b, cpu, testing::to_host(*gpu, probs.data(), probs.size()));
  }
}

TEST(SamplingTwin, ArgmaxMatchesCpu) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend();
  for (int V : {32000, 5}) {
    std::mt19937 rng(42u + static_cast<uint32_t>(V));
    std::vector<std::vector<float>> rows;
    for (int r = 0; r < 8; ++r) rows.push_back(random_row(V, rng));
    std::vector<float> tied = random_row(V, rng);  // the max at several places
    tied[V - 1] = tied[V / 2] = tied[1] = 100.0f;
    rows.push_back(tied);
    std::vector<float> nan_first = random_row(V, rng);
    nan_first[0] = kNaN;  // NaN ranks as -inf: never the argmax here
    rows.push_back(nan_first);
    rows.emplace_back(V, kNaN);   // nothing above -inf: index 0
    rows.emplace_back(V, -kInf);  // likewise
    std::vector<float> infinite = random_row(V, rng);
    infinite[V - 2] = infinite[V - 1] = kInf;
    rows.push_back(infinite);
    std::vector<float> zeros(V, -1.0f);  // -0 and +0 tie: the first wins
    zeros[V - 1] = 0.0f;
    zeros[V / 2] = -0.0f;
    rows.push_back(zeros);
    rows.push_back(tied_row(V, rng, 1.0f));

    std::vector<float> flat;
    for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
    const int n = static_cast<int>(rows.size());
    std::vector<int32_t> cpu(n, -7), cuda(n, -7);
    make_cpu_backend()->argmax(flat.data(), n, V, cpu.data());
    Buffer logits = testing::to_backend(*gpu, flat);
    gpu->argmax(logits.data(), n, V, cuda.data());
    EXPECT_EQ(cuda, cpu) << "V " << V;
  }
}

TEST(SamplingTwin, NonFiniteRowsMatchCpu) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend();
  for (int V : {32000, 5}) {
    std::mt19937 rng(7u + static_cast<uint32_t>(V));
    std::vector<std::vector<float>> rows;
    for (int r = 0; r < 4; ++r) rows.push_back(random_row(V, rng));
    for (float bad : {kNaN, kInf, -kInf}) {
      for (int at : {0, V / 2, V - 1}) {
        std::vector<float> row = random_row(V, rng);
        row[at] = bad;  // first, middle, last entry: every thread's share is read
        rows.push_back(row);
      }
    }
    rows.emplace_back(V, std::numeric_limits<float>::max());  // large, yet finite
    std::vector<float> flat;
    for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
    const int n = static_cast<int>(rows.size());
    std::vector<uint8_t> cpu(n, 7), cuda(n, 7);
    make_cpu_backend()->find_nonfinite_rows(flat.data(), n, V, cpu.data());
    Buffer logits = testing::to_backend(*gpu, flat);
    gpu->find_nonfinite_rows(logits.data(), n, V, cuda.data());
    EXPECT_EQ(cuda, cpu) << "V " << V;
    EXPECT_EQ(std::count(cpu.begin(), cpu.end(), 1), 9) << "V " << V;
  }
}

// Probability rows to sample from: standardized ones of every kind, plus
// unnormalized rows with zeros, negatives and NaN (residual-like) entries.
std::vector<float> sample_rows(int V, int* rows) {
  Batch b = mixed_batch(V, 99u + static_cast<uint32_t>(V));
  std::vector<float> probs = cpu_standardize(b);
  std::mt19937 rng(5u);
  std::uniform_real_distribution<float> unit(0.0f, 2.0f);
  std::vector<float> odd(V);
  for (int i = 0; i < V; ++i) {
    const int kind = i % 5;
    odd[i] = kind == 0 ? 0.0f : kind == 1 ? -unit(rng) : kind == 2 ? kNaN : unit(rng);
  }
  probs.insert(probs.end(), odd.begin(), odd.end());
  *rows = b.rows() + 1;
  return probs;
}

TEST(SamplingTwin, SampleMatchesCpuOnManyUniforms) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend();
  auto cpu = make_cpu_backend();
  for (int V : {32000, 37}) {
    int rows = 0;
    const std::vector<float> probs = sample_rows(V, &rows);
    Buffer device_probs = testing::to_backend(*gpu, probs);
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<double> u(rows);
      for (int r = 0; r < rows; ++r) {
        // trial 0: u = 0, the first positive entry; then Philox uniforms.
        u[r] = trial == 0 ? 0.0
                          : philox_uniform(7u, trial * 1000 + r, RandomPurpose::target_sample);
      }
      std::vector<int32_t> want(rows, -7), got(rows, -7);
      cpu->sample(probs.data(), rows, V, u, want.data());
      gpu->sample(device_probs.data(), rows, V, u, got.data());
      ASSERT_EQ(got, want) << "V " << V << ", trial " << trial;
    }
  }
}

TEST(SamplingTwin, SampleWithoutMassRaises) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend();
  const int V = 64;
  std::vector<float> zeros(V, 0.0f);
  std::vector<float> infinite(V, 0.1f);
  infinite[3] = kInf;
  const std::vector<double> u = {0.5};
  for (const auto& row : {zeros, infinite}) {
    Buffer device = testing::to_backend(*gpu, row);
    int32_t token = -7;
    EXPECT_THROW(make_cpu_backend()->sample(row.data(), 1, V, u, &token), Error);
    EXPECT_THROW(gpu->sample(device.data(), 1, V, u, &token), Error);
  }
}

// ---- verification ------------------------------------------------------------

// One verification block's data in host memory, and where its rows sit on
// the device.
struct HostBlock {
  int gamma = 0;
  std::vector<int32_t> drafted;
  std::vector<float> p;  // (γ+1, V)
  std::vector<float> q;  // (γ, V), or empty: deterministic drafter
  int64_t first_position = 0;
  uint64_t seed = 0;
  float lenience = 1.0f;
  Buffer device_p, device_q;

  VerifyBlock cpu_view() const {
    return {gamma, drafted.data(), p.data(), q.empty() ? nullptr : q.data(), first_position, seed,
            lenience};
  }
  VerifyBlock gpu_view() const {
    return {gamma, drafted.data(), device_p.data(), q.empty() ? nullptr : device_q.data(),
            first_position, seed, lenience};
  }
};

// Target and draft rows from correlated logits, so that tokens are accepted
// and rejected both; drafted ids sampled from q (or, without q, the draft's
// argmax or an arbitrary id).
HostBlock random_block(int V, std::mt19937& rng, Backend& cpu) {
  std::uniform_int_distribution<int> gamma_of(0, 5), mode_of(0, 3), token(0, V - 1);
  std::uniform_int_distribution<int64_t> position(0, 1'000'000);
  const float lenience_of[] = {1.0f, 1.0f, 0.7f, 0.3f};
  HostBlock b;
  b.gamma = gamma_of(rng);
  b.first_position = position(rng);
  b.seed = (static_cast<uint64_t>(rng()) << 32) | rng();
  b.lenience = lenience_of[mode_of(rng)];
  const bool with_q = mode_of(rng) != 0;
  const SamplingParams target = mode_of(rng) == 0 ? params(1.0f, 30, 0.9f) : params(1.0f);
  const SamplingParams draft = mode_of(rng) == 0 ? params(0.8f, 0, 0.8f) : params(1.0f);

  std::vector<float> target_logits, draft_logits;
  for (int j = 0; j <= b.gamma; ++j) {
    const std::vector<float> base = random_row(V, rng, 2.0f);
    const std::vector<float> noise = random_row(V, rng, 0.7f);
    for (int i = 0; i < V; ++i) target_logits.push_back(base[i] + noise[i]);
    if (j < b.gamma) draft_logits.insert(draft_logits.end(), base.begin(), base.end());
  }
  b.p.resize(target_logits.size());
  cpu.standardize(target_logits.data(), b.gamma + 1, V, std::span(&target, 1), b.p.data());
  b.drafted.resize(b.gamma);
  if (with_q && b.gamma > 0) {
    b.q.resize(draft_logits.size());
    cpu.standardize(draft_logits.data(), b.gamma, V, std::span(&draft, 1), b.q.data());
    std::vector<double> u(b.gamma);
    for (int j = 0; j < b.gamma; ++j) {
      u[j] = philox_uniform(b.seed, b.first_position + j, RandomPurpose::draft_sample);
    }
    cpu.sample(b.q.data(), b.gamma, V, u, b.drafted.data());
  } else if (b.gamma > 0) {
    cpu.argmax(draft_logits.data(), b.gamma, V, b.drafted.data());
    if (mode_of(rng) == 0) b.drafted[0] = token(rng);  // maybe p = 0 there: rejected
  }
  return b;
}

void upload(Backend& gpu, HostBlock& b) {
  b.device_p = testing::to_backend(gpu, b.p);
  if (!b.q.empty()) b.device_q = testing::to_backend(gpu, b.q);
}

// Runs both backends on `blocks` and compares outcomes (exactly) and beta.
// Returns the CPU's outcomes.
std::vector<VerifyOutcome> expect_verify_matches(std::vector<HostBlock>& blocks, int V,
                                                 Backend& gpu) {
  std::vector<VerifyBlock> cpu_blocks, gpu_blocks;
  size_t drafts = 0;
  for (HostBlock& b : blocks) {
    upload(gpu, b);
    cpu_blocks.push_back(b.cpu_view());
    gpu_blocks.push_back(b.gpu_view());
    drafts += static_cast<size_t>(b.gamma);
  }
  std::vector<VerifyOutcome> want(blocks.size(), {-7, -7}), got(blocks.size(), {-7, -7});
  std::vector<float> want_beta(drafts, -1.0f), got_beta(drafts, -1.0f);
  make_cpu_backend()->verify(cpu_blocks, V, want, want_beta);
  gpu.verify(gpu_blocks, V, got, got_beta);
  for (size_t b = 0; b < blocks.size(); ++b) {
    EXPECT_EQ(got[b].accepted, want[b].accepted) << "V " << V << ", block " << b;
    EXPECT_EQ(got[b].token, want[b].token) << "V " << V << ", block " << b;
  }
  for (size_t j = 0; j < drafts; ++j) {
    EXPECT_NEAR(got_beta[j], want_beta[j], 1e-5) << "V " << V << ", beta " << j;
  }
  // The same call without beta gives the same outcomes.
  std::vector<VerifyOutcome> again(blocks.size(), {-7, -7});
  gpu.verify(gpu_blocks, V, again, {});
  for (size_t b = 0; b < blocks.size(); ++b) {
    EXPECT_EQ(again[b].accepted, want[b].accepted) << "without beta, block " << b;
    EXPECT_EQ(again[b].token, want[b].token) << "without beta, block " << b;
  }
  return want;
}

TEST(SamplingTwin, VerifyMatchesCpuOnRandomBlocks) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend();
  auto cpu = make_cpu_backend();
  int rejected = 0, all_kept = 0, plain = 0;
  for (auto [V, count] : {std::pair{32000, 12}, std::pair{300, 300}}) {
    std::mt19937 rng(2024u + static_cast<uint32_t>(V));
    std::vector<HostBlock> blocks;
    for (int b = 0; b < count; ++b) blocks.push_back(random_block(V, rng, *cpu));
    const std::vector<VerifyOutcome> outcomes = expect_verify_matches(blocks, V, *gpu);
    for (size_t b = 0; b < blocks.size(); ++b) {
      if (blocks[b].gamma == 0) ++plain;
      else if (outcomes[b].accepted < blocks[b].gamma) ++rejected;
      else ++all_kept;
    }
  }
  // The blocks must have exercised every path: residual draws, bonus tokens
  // and plain decoding.
  EXPECT_GT(rejected, 20);
  EXPECT_GT(all_kept, 20);
  EXPECT_GT(plain, 10);
}

// p <= l q everywhere (rows that do not sum to 1): a rejection leaves an
// all-zero residual, and the token comes from p with the same uniform.
TEST(SamplingTwin, VerifyZeroResidualFallsBackToP) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend();
  const int V = 50;
  std::vector<HostBlock> blocks;
  for (int s = 0; s < 40; ++s) {
    HostBlock b;
    b.gamma = 2;
    b.seed = 1000u + static_cast<uint64_t>(s);
    b.first_position = s;
    b.p.assign(3 * V, 0.0f);
    b.q.assign(2 * V, 0.0f);
    for (int j = 0; j < 3; ++j) {
      for (int i = 0; i < 10; ++i) b.p[j * V + 3 * i] = 0.01f;  // every third token
    }
    for (int j = 0; j < 2; ++j) {
      for (int i = 0; i < 30; ++i) b.q[j * V + i] = 0.5f / 30.0f * (i % 3 == 0 ? 1.5f : 0.75f);
    }
    b.drafted = {3, 6};
    blocks.push_back(std::move(b));
  }
  const std::vector<VerifyOutcome> outcomes = expect_verify_matches(blocks, V, *gpu);
  int fallbacks = 0;
  for (const VerifyOutcome& o : outcomes) fallbacks += o.accepted < 2 ? 1 : 0;
  EXPECT_GT(fallbacks, 10);  // p/q = 0.4 at the drafted tokens: most blocks reject
}

TEST(SamplingTwin, VerifyContractViolationsRaise) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend();
  auto cpu = make_cpu_backend();
  const int V = 40;
  std::mt19937 rng(3u);
  auto expect_both_raise = [&](HostBlock& bad) {
    // A good block beside the bad one: the error is the bad block's.
    std::vector<HostBlock> blocks;
    blocks.push_back(random_block(V, rng, *cpu));
    blocks.push_back(std::move(bad));
    std::vector<VerifyBlock> cpu_blocks, gpu_blocks;
    size_t drafts = 0;
    for (HostBlock& b : blocks) {
      upload(*gpu, b);
      cpu_blocks.push_back(b.cpu_view());
      gpu_blocks.push_back(b.gpu_view());
      drafts += static_cast<size_t>(b.gamma);
    }
    std::vector<VerifyOutcome> out(blocks.size());
    std::vector<float> beta(drafts);
    EXPECT_THROW(cpu->verify(cpu_blocks, V, out, beta), Error);
    EXPECT_THROW(gpu->verify(gpu_blocks, V, out, beta), Error);
  };
  // q_j(x_j) = 0: x_j could not have come from q_j (checked for every j,
  // also past where the accept loop would stop).
  HostBlock zero_q = random_block(V, rng, *cpu);
  while (zero_q.gamma < 2 || zero_q.q.empty()) zero_q = random_block(V, rng, *cpu);
  zero_q.q[static_cast<size_t>(zero_q.gamma - 1) * V + zero_q.drafted[zero_q.gamma - 1]] = 0.0f;
  expect_both_raise(zero_q);
  // Plain decoding (γ = 0) from a row without mass.
  HostBlock empty;
  empty.p.assign(V, 0.0f);
  expect_both_raise(empty);
  // A p row holding +inf: nothing to draw from.
  HostBlock infinite;
  infinite.p.assign(V, 0.01f);
  infinite.p[5] = kInf;
  expect_both_raise(infinite);
}

TEST(SamplingTwin, VerifyGreedyMatchesCpu) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend();
  std::mt19937 rng(11u);
  std::uniform_int_distribution<int> gamma_of(0, 6), token(0, 3);
  std::vector<std::vector<int32_t>> drafted(200), target(200);
  std::vector<GreedyBlock> blocks;
  for (size_t b = 0; b < drafted.size(); ++b) {
    const int gamma = gamma_of(rng);
    for (int j = 0; j <= gamma; ++j) target[b].push_back(token(rng));
    for (int j = 0; j < gamma; ++j) {  // mostly agreeing with the target
      drafted[b].push_back(token(rng) == 0 ? token(rng) : target[b][j]);
    }
    blocks.push_back({gamma, drafted[b].data(), target[b].data()});
  }
  std::vector<VerifyOutcome> want(blocks.size(), {-7, -7}), got(blocks.size(), {-7, -7});
  make_cpu_backend()->verify_greedy(blocks, want);
  gpu->verify_greedy(blocks, got);
  for (size_t b = 0; b < blocks.size(); ++b) {
    EXPECT_EQ(got[b].accepted, want[b].accepted) << "block " << b;
    EXPECT_EQ(got[b].token, want[b].token) << "block " << b;
  }
}

TEST(SamplingTwin, EmptyBatchesAreNoOps) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend();
  const int V = 16;
  EXPECT_NO_THROW(gpu->standardize(nullptr, 0, V, {}, nullptr));
  EXPECT_NO_THROW(gpu->argmax(nullptr, 0, V, nullptr));
  EXPECT_NO_THROW(gpu->sample(nullptr, 0, V, {}, nullptr));
  EXPECT_NO_THROW(gpu->verify({}, V, {}, {}));
  EXPECT_NO_THROW(gpu->verify_greedy({}, {}));
}

}  // namespace
}  // namespace tandem
