// Tests of cpu::verify on gumbel blocks (Coupling::gumbel, kernels/cpu/verify.h):
// whatever the drafts, a block emits exactly what plain decoding with the
// same seed emits, token by token; beta_j is the 0/1 indicator x_j == t_j;
// q is never read; lenience other than 1 and rows without mass are refused,
// named. Blocks of both couplings may share one call.
//
// The expected output is built here from gumbel_row at each position (the
// plain seeded draw), not from the verifier.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/sampling.h"
#include "kernels/cpu/verify.h"
#include "kernels/philox.h"
#include "tests/support/expect_error.h"

namespace tandem::cpu {
namespace {

using test_support::expect_invalid;

// A normalized random row over V tokens, peaked enough that drafts often
// match the target's draw.
std::vector<float> random_row(int V, std::mt19937& rng) {
  std::gamma_distribution<double> weight(0.3);
  std::vector<double> w(V);
  double total = 0.0;
  for (double& x : w) total += (x = weight(rng) + 1e-6);
  std::vector<float> row(V);
  for (int v = 0; v < V; ++v) row[v] = static_cast<float>(w[v] / total);
  return row;
}

struct GumbelBlock {
  int gamma = 0;
  int V = 0;
  std::vector<float> p;  // (γ+1, V)
  std::vector<int32_t> drafted;
  int64_t first_position = 0;
  uint64_t seed = 0;

  VerifyBlock view() const {
    VerifyBlock b{gamma, drafted.data(), p.data(), nullptr, first_position, seed, 1.0f};
    b.coupling = Coupling::gumbel;
    return b;
  }
  // The plain seeded draw at the block's j-th position (0-based).
  int32_t plain(int j) const {
    return gumbel_row(p.data() + static_cast<size_t>(j) * V, V, seed, first_position + j);
  }
};

enum class Drafts { random, target, target_then_random };

GumbelBlock make_block(int gamma, int V, Drafts drafts, std::mt19937& rng) {
  GumbelBlock b;
  b.gamma = gamma;
  b.V = V;
  b.seed = (static_cast<uint64_t>(rng()) << 32) | rng();
  b.first_position = rng() % 100000;
  for (int j = 0; j <= gamma; ++j) {
    const std::vector<float> row = random_row(V, rng);
    b.p.insert(b.p.end(), row.begin(), row.end());
  }
  const int agree = drafts == Drafts::target               ? gamma
                    : drafts == Drafts::target_then_random ? static_cast<int>(rng() % (gamma + 1))
                                                           : 0;
  for (int j = 0; j < gamma; ++j) {
    b.drafted.push_back(j < agree ? b.plain(j) : static_cast<int32_t>(rng() % V));
  }
  return b;
}

TEST(GumbelVerify, EmitsThePlainSeededTokensWhateverTheDrafts) {
  std::mt19937 rng(2024u);
  const int V = 12;
  int all_kept = 0, cut_short = 0;
  for (int gamma = 0; gamma <= 8; ++gamma) {
    for (Drafts drafts : {Drafts::random, Drafts::target, Drafts::target_then_random}) {
      std::vector<GumbelBlock> blocks;
      std::vector<VerifyBlock> views;
      for (int i = 0; i < 30; ++i) blocks.push_back(make_block(gamma, V, drafts, rng));
      for (const GumbelBlock& b : blocks) views.push_back(b.view());
      std::vector<VerifyOutcome> out(blocks.size(), {-7, -7});
      std::vector<float> beta(blocks.size() * gamma, -1.0f);
      verify(views, V, out, beta);
      for (size_t i = 0; i < blocks.size(); ++i) {
        const GumbelBlock& b = blocks[i];
        // What the block emits: x_1..x_n, then t. Token by token the plain draws.
        std::vector<int32_t> emitted(b.drafted.begin(), b.drafted.begin() + out[i].accepted);
        emitted.push_back(out[i].token);
        std::vector<int32_t> plain;
        for (int j = 0; j <= out[i].accepted; ++j) plain.push_back(b.plain(j));
        ASSERT_EQ(emitted, plain) << "gamma " << gamma << ", block " << i;
        // n is the first disagreement (or γ).
        int n = 0;
        while (n < gamma && b.drafted[n] == b.plain(n)) ++n;
        EXPECT_EQ(out[i].accepted, n);
        for (int j = 0; j < gamma; ++j) {
          EXPECT_EQ(beta[i * gamma + j], b.drafted[j] == b.plain(j) ? 1.0f : 0.0f)
              << "gamma " << gamma << ", block " << i << ", j " << j;
        }
        if (drafts == Drafts::target) {
          EXPECT_EQ(out[i].accepted, gamma);
        }
        if (gamma > 0) ++(n == gamma ? all_kept : cut_short);
      }
      // Without beta the outcomes are the same.
      std::vector<VerifyOutcome> again(blocks.size(), {-7, -7});
      verify(views, V, again);
      for (size_t i = 0; i < blocks.size(); ++i) {
        EXPECT_EQ(again[i].accepted, out[i].accepted);
        EXPECT_EQ(again[i].token, out[i].token);
      }
    }
  }
  EXPECT_GT(all_kept, 100);
  EXPECT_GT(cut_short, 100);
}

// q is not read: a null q, or q rows that give the drafted token 0 (which a
// rejection block refuses), verify alike.
TEST(GumbelVerify, DoesNotReadQ) {
  std::mt19937 rng(3u);
  const int V = 10;
  GumbelBlock b = make_block(4, V, Drafts::target_then_random, rng);
  std::vector<float> q(static_cast<size_t>(4) * V, 0.0f);
  VerifyBlock with_q = b.view();
  with_q.q = q.data();
  std::vector<VerifyOutcome> a(1), c(1);
  std::vector<float> beta_a(4), beta_c(4);
  const VerifyBlock plain = b.view();
  verify(std::span(&plain, 1), V, a, beta_a);
  verify(std::span(&with_q, 1), V, c, beta_c);
  EXPECT_EQ(a[0].accepted, c[0].accepted);
  EXPECT_EQ(a[0].token, c[0].token);
  EXPECT_EQ(beta_a, beta_c);
}

// Rejection and gumbel blocks in one call: each gives what it gives alone.
TEST(GumbelVerify, MixesWithRejectionBlocksInOneCall) {
  std::mt19937 rng(8u);
  const int V = 16;
  std::vector<GumbelBlock> blocks;
  std::vector<VerifyBlock> views;
  for (int i = 0; i < 12; ++i) blocks.push_back(make_block(i % 5, V, Drafts::random, rng));
  for (size_t i = 0; i < blocks.size(); ++i) {
    views.push_back(blocks[i].view());
    if (i % 2 == 0) views.back().coupling = Coupling::rejection;  // q null: one-hot drafts
  }
  size_t drafts = 0;
  for (const VerifyBlock& v : views) drafts += static_cast<size_t>(v.gamma);
  std::vector<VerifyOutcome> together(views.size());
  std::vector<float> beta(drafts);
  verify(views, V, together, beta);
  size_t at = 0;
  for (size_t i = 0; i < views.size(); ++i) {
    std::vector<VerifyOutcome> alone(1);
    std::vector<float> alone_beta(static_cast<size_t>(views[i].gamma));
    verify(std::span(&views[i], 1), V, alone, alone_beta);
    EXPECT_EQ(together[i].accepted, alone[0].accepted) << "block " << i;
    EXPECT_EQ(together[i].token, alone[0].token) << "block " << i;
    for (float x : alone_beta) EXPECT_EQ(beta[at++], x) << "block " << i;
  }
}

TEST(GumbelVerify, LenienceOtherThanOneIsRefused) {
  std::mt19937 rng(4u);
  const int V = 6;
  const GumbelBlock good = make_block(2, V, Drafts::random, rng);
  const GumbelBlock bad = make_block(2, V, Drafts::random, rng);
  std::vector<VerifyBlock> views = {good.view(), bad.view()};
  views[1].lenience = 0.5f;
  std::vector<VerifyOutcome> out(2, {-7, -7});
  std::vector<float> beta(4, -1.0f);
  expect_invalid([&] { verify(views, V, out, beta); }, "blocks[1].lenience");
  EXPECT_EQ(out[0].accepted, -7);  // nothing written
  EXPECT_EQ(beta[0], -1.0f);
  views[1].lenience = 1.0f;
  EXPECT_NO_THROW(verify(views, V, out, beta));
}

// A row that must be drawn from and has no positive finite entry is named
// with its index; a row past the first disagreement is only raced for beta,
// and without mass gives beta 0 there.
TEST(GumbelVerify, RowsWithoutMassAreNamedWhereTheyAreDrawnFrom) {
  std::mt19937 rng(6u);
  const int V = 8;
  GumbelBlock b = make_block(3, V, Drafts::target, rng);  // every draft kept
  std::fill(b.p.begin() + 2 * V, b.p.begin() + 3 * V, 0.0f);  // row 2: no mass
  const VerifyBlock view = b.view();
  std::vector<VerifyOutcome> out(1, {-7, -7});
  std::vector<float> beta(3, -1.0f);
  expect_invalid([&] { verify(std::span(&view, 1), V, out, beta); },
                 "blocks[0].p row 2 has no positive finite mass");
  EXPECT_EQ(out[0].accepted, -7);
  // The same row after a disagreement at row 0: fine, beta 0 at row 2.
  b.drafted[0] = (b.plain(0) + 1) % V;
  const VerifyBlock cut = b.view();
  verify(std::span(&cut, 1), V, out, beta);
  EXPECT_EQ(out[0].accepted, 0);
  EXPECT_EQ(out[0].token, b.plain(0));
  EXPECT_EQ(beta, (std::vector<float>{0.0f, 1.0f, 0.0f}));
}

}  // namespace
}  // namespace tandem::cpu
