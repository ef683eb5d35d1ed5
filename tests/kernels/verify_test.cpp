// Tests of kernels/cpu/verify.h: speculative verification (Algorithm 1 of
// Leviathan et al. 2023, lenience of Appendix A.5), statistical and exact.
//
// The statistical tests simulate whole generations: a target whose row at
// absolute position k is a fixed p_k whatever the prefix, a draft with fixed
// rows q_k (or a deterministic drafter's fixed guess), and many independent
// seeded trials that decode the first two output positions through as many
// verify() steps as that takes. Appendix A.1 says the emitted tokens are then
// independent with marginals p_1, p_2: chi-square goodness of fit checks the
// first token against p_1 and the pair against p_1 ⊗ p_2.
//
// False alarms: each statistical assertion has rate 1e-4 on its own; there are
// ~70, so a correct verifier fails a run with probability < 1e-2 (union
// bound). Inputs and seeds are fixed, so a build passes or fails every time.
//
// V is the vocabulary size throughout.
#include "kernels/cpu/verify.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/sampling.h"
#include "tests/support/expect_error.h"
#include "kernels/philox.h"
#include "tests/support/statistics.h"

namespace tandem::cpu {
namespace {

constexpr double kFalseAlarm = 1e-4;  // false-alarm rate of each statistical check

using namespace test_stats;
Fit chi_square_fit(const std::vector<long>& counts, const std::vector<double>& probs) {
  return test_stats::chi_square_fit(counts, probs, kFalseAlarm);
}

std::vector<double> normalized(const float* row, int V) {
  std::vector<double> out(row, row + V);
  const double total = std::accumulate(out.begin(), out.end(), 0.0);
  for (double& x : out) x /= total;
  return out;
}

TEST(CriticalValues, MatchClosedFormsAndTables) {
  EXPECT_NEAR(chi_square_critical(2, 1e-4), -2.0 * std::log(1e-4), 1e-9);  // Q(1, x/2) = e^-x/2
  const double z = normal_upper_quantile(0.5e-4);  // chi2(1) is Z^2: two-sided
  EXPECT_NEAR(z, 3.8906, 1e-4);
  EXPECT_NEAR(chi_square_critical(1, 1e-4), z * z, 1e-7);
  EXPECT_NEAR(chi_square_critical(10, 1e-4), 35.564, 1e-3);  // printed tables
}

// ---- test models ----------------------------------------------------------------

constexpr int kPrompt = 7;          // outputs start at this absolute position
constexpr int kRows = kPrompt + 8;  // positions for 2 outputs and γ <= 4 beyond

// p and q rows per absolute position, the same whatever the prefix.
struct Model {
  int V = 0;
  std::vector<float> p;        // (kRows, V): row k is p at position k
  std::vector<float> q;        // (kRows, V); empty for a deterministic drafter
  std::vector<int32_t> guess;  // (kRows) a deterministic drafter's token per position
  const float* p_at(int64_t k) const { return p.data() + k * V; }
  const float* q_at(int64_t k) const { return q.empty() ? nullptr : q.data() + k * V; }
};

enum class Case { equal, disjoint, draft_on_rare, random, deterministic };

// Weights ~ Gamma(shape) (+1e-3) on the tokens `keep` admits, normalized:
// shape 1 is close to a uniform (Dirichlet) draw from the simplex.
void fill_row(
    float* row, int V, std::mt19937& rng, double shape,
    const std::function<bool(int)>& keep = [](int) { return true; }) {
  std::gamma_distribution<double> weight(shape);
  std::vector<double> w(V, 0.0);
  for (int i = 0; i < V; ++i) w[i] = keep(i) ? weight(rng) + 1e-3 : 0.0;
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  for (int i = 0; i < V; ++i) row[i] = static_cast<float>(w[i] / total);
}

Model make_model(Case c) {
  static constexpr int kV[] = {8, 10, 12, 16, 12};
  Model m;
  const int V = m.V = kV[static_cast<int>(c)];
  std::mt19937 rng(100 + static_cast<uint32_t>(c));
  m.p.resize(static_cast<size_t>(kRows) * V);
  if (c != Case::deterministic) m.q.resize(m.p.size());
  for (int k = 0; k < kRows; ++k) {
    float* p = m.p.data() + k * V;
    float* q = c == Case::deterministic ? nullptr : m.q.data() + k * V;
    switch (c) {
      case Case::equal:  // bitwise p == q: nothing is ever rejected
        fill_row(p, V, rng, 2.0);
        std::copy(p, p + V, q);
        break;
      case Case::disjoint:  // p on even tokens, q on odd: every x_1 is rejected
        fill_row(p, V, rng, 2.0, [](int i) { return i % 2 == 0; });
        fill_row(q, V, rng, 2.0, [](int i) { return i % 2 == 1; });
        break;
      case Case::draft_on_rare: {  // q puts 0.9 on two tokens p gives 0.01 each
        const int a = k % V, b = (k + 3) % V;
        fill_row(p, V, rng, 2.0, [&](int i) { return i != a && i != b; });
        for (int i = 0; i < V; ++i) p[i] *= 0.98f;
        p[a] = p[b] = 0.01f;
        std::fill(q, q + V, 0.1f / (V - 2));
        q[a] = q[b] = 0.45f;
        break;
      }
      case Case::random:
      case Case::deterministic:  // (no q rows: the drafter guesses m.guess)
        fill_row(p, V, rng, 1.0);
        if (q != nullptr) fill_row(q, V, rng, 1.0);
        break;
    }
    m.guess.push_back(static_cast<int32_t>(rng() % V));
  }
  return m;
}

// ---- a test-local verifier, with deliberate bugs ------------------------------------

enum class Bug {
  none,
  correction_from_p,            // t ~ p_{n+1} after a rejection, not the residual
  accept_reuses_draft_uniform,  // r_j = the uniform that drew x_j (wrong purpose)
};

// Algorithm 1 for one block, written straight from the contract in verify.h.
VerifyOutcome reference_verify(const VerifyBlock& b, int V, Bug bug) {
  const auto p_row = [&](int j) { return b.p + static_cast<size_t>(j) * V; };
  const auto q_at = [&](int j, int i) {
    return b.q != nullptr ? static_cast<double>(b.q[static_cast<size_t>(j) * V + i])
                          : (i == b.drafted[j] ? 1.0 : 0.0);
  };
  const double l = b.lenience;
  const RandomPurpose purpose =
      bug == Bug::accept_reuses_draft_uniform ? RandomPurpose::draft_sample : RandomPurpose::accept;
  int n = 0;
  for (; n < b.gamma; ++n) {
    const double r = philox_uniform(b.seed, b.first_position + n, purpose);
    if (!(r < p_row(n)[b.drafted[n]] / (l * q_at(n, b.drafted[n])))) break;
  }
  const double u = philox_uniform(b.seed, b.first_position + n, RandomPurpose::target_sample);
  if (n == b.gamma || bug == Bug::correction_from_p) return {n, sample_row(p_row(n), V, u)};
  std::vector<float> residual(V);
  for (int i = 0; i < V; ++i) {
    const double d = p_row(n)[i] - l * q_at(n, i);
    residual[i] = d > 0.0 ? static_cast<float>(d) : 0.0f;
  }
  const bool zero = std::all_of(residual.begin(), residual.end(), [](float x) { return x == 0; });
  return {n, sample_row(zero ? p_row(n) : residual.data(), V, u)};
}

// ---- simulated generation ------------------------------------------------------------

struct Generation {
  std::vector<int32_t> first, second;    // (trials) tokens at output positions 1 and 2
  std::vector<int> first_step_accepted;  // (trials) n of each trial's first step
};

// `trials` independent generations (trial t has its own seed), each decoding
// until output positions kPrompt and kPrompt+1 are filled, γ drafts a step.
// The draft samples x_j ~ q at x_j's position with the draft_sample uniform,
// as the draft worker does. All unfinished trials share each verify call.
// Bug::none runs the production verify(); any other bug, reference_verify.
Generation generate(const Model& m, int gamma, int trials, float lenience, uint64_t seed_base,
                    Bug bug = Bug::none) {
  const int V = m.V;
  Generation g{std::vector<int32_t>(trials), std::vector<int32_t>(trials),
               std::vector<int>(trials)};
  std::vector<int64_t> next(trials, kPrompt);  // the next position each trial fills
  std::vector<int32_t> drafted(static_cast<size_t>(trials) * gamma);
  for (int step = 0;; ++step) {
    std::vector<VerifyBlock> blocks;
    std::vector<int> owner;
    for (int t = 0; t < trials; ++t) {
      if (next[t] >= kPrompt + 2) continue;
      const uint64_t seed = seed_base ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(t + 1));
      int32_t* x = drafted.data() + static_cast<size_t>(t) * gamma;
      for (int64_t pos = next[t]; pos < next[t] + gamma; ++pos) {
        x[pos - next[t]] = m.q.empty()
                               ? m.guess[pos]
                               : sample_row(m.q_at(pos), V,
                                            philox_uniform(seed, pos, RandomPurpose::draft_sample));
      }
      blocks.push_back({gamma, x, m.p_at(next[t]), m.q_at(next[t]), next[t], seed, lenience});
      owner.push_back(t);
    }
    if (blocks.empty()) return g;
    std::vector<VerifyOutcome> out(blocks.size());
    if (bug == Bug::none) verify(blocks, V, out);
    for (size_t i = 0; i < blocks.size() && bug != Bug::none; ++i) {
      out[i] = reference_verify(blocks[i], V, bug);
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
      const int t = owner[i];
      if (step == 0) g.first_step_accepted[t] = out[i].accepted;
      // x_1..x_n then t, until both output positions are filled.
      for (int j = 0; j <= out[i].accepted && next[t] < kPrompt + 2; ++j, ++next[t]) {
        const int32_t token = j < out[i].accepted ? blocks[i].drafted[j] : out[i].token;
        (next[t] == kPrompt ? g.first[t] : g.second[t]) = token;
      }
    }
  }
}

Fit first_token_fit(const Model& m, const Generation& g) {
  std::vector<long> counts(m.V, 0);
  for (int32_t x : g.first) ++counts[x];
  return chi_square_fit(counts, normalized(m.p_at(kPrompt), m.V));
}

Fit pair_fit(const Model& m, const Generation& g) {
  const int V = m.V;
  std::vector<long> counts(static_cast<size_t>(V) * V, 0);
  for (size_t t = 0; t < g.first.size(); ++t) ++counts[g.first[t] * V + g.second[t]];
  const std::vector<double> p1 = normalized(m.p_at(kPrompt), V);
  const std::vector<double> p2 = normalized(m.p_at(kPrompt + 1), V);
  std::vector<double> joint(counts.size());
  for (size_t c = 0; c < joint.size(); ++c) joint[c] = p1[c / V] * p2[c % V];
  return chi_square_fit(counts, joint);
}

// Binomial z-test (two-sided, at kFalseAlarm) that x_1 was kept as often as
// β_1 = sum_x min(p(x)/l, q(x)) says (Theorem 3.5; Appendix A.5 for l < 1). The β
// that verify() reports is checked against this sum in MatchesTheReference.
double check_acceptance(const Model& m, const Generation& g, float lenience) {
  const double inv_l = 1.0 / lenience;
  const float* p = m.p_at(kPrompt);
  double beta = m.q.empty() ? std::min(1.0, p[m.guess[kPrompt]] * inv_l) : 0.0;
  for (int i = 0; i < m.V && !m.q.empty(); ++i) {
    beta += std::min(p[i] * inv_l, 1.0 * m.q_at(kPrompt)[i]);
  }
  long kept = 0;
  for (int n : g.first_step_accepted) kept += n >= 1;
  const double z = binomial_z(kept, static_cast<long>(g.first.size()), beta);
  EXPECT_LT(std::abs(z), normal_upper_quantile(kFalseAlarm / 2)) << kept << " kept, β_1 = " << beta;
  return z;
}

// ---- distribution: the output is p at every position (Appendix A.1) ------------------

constexpr int kTrials = 20000;

class VerifyDistribution : public ::testing::TestWithParam<std::tuple<Case, int>> {};

TEST_P(VerifyDistribution, TokensFollowTargetAndAcceptanceFollowsBeta) {
  const auto [c, gamma] = GetParam();
  const Model m = make_model(c);
  const Generation g = generate(m, gamma, kTrials, 1.0f, 0xC0FFEEull * (gamma + 1));
  const Fit first = first_token_fit(m, g), pair = pair_fit(m, g);
  EXPECT_LT(first.statistic, first.critical) << "dof " << first.dof;
  EXPECT_LT(pair.statistic, pair.critical) << "dof " << pair.dof;
  const double z = check_acceptance(m, g, 1.0f);
  std::printf(
      "  first chi2 %.1f (dof %d, critical %.1f), pair chi2 %.1f (dof %d, critical %.1f), "
      "acceptance z %.2f\n",
      first.statistic, first.dof, first.critical, pair.statistic, pair.dof, pair.critical, z);
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<Case, int>>& param) {
  static const char* const kNames[] = {"Equal", "Disjoint", "DraftOnRare", "Random",
                                       "Deterministic"};
  return std::string(kNames[static_cast<int>(std::get<0>(param.param))]) + "Gamma" +
         std::to_string(std::get<1>(param.param));
}

INSTANTIATE_TEST_SUITE_P(Cases, VerifyDistribution,
                         ::testing::Combine(::testing::Values(Case::equal, Case::disjoint,
                                                          Case::draft_on_rare, Case::random,
                                                          Case::deterministic),
                                          ::testing::Values(1, 2, 3, 4)),
                         case_name);

// Power: the same trials through verifiers with classic bugs must fail the
// very test the real one passes, by a wide margin. (Each bug is invisible in
// some cases: with p = q nothing is rejected; with disjoint supports the
// residual is p. These two cases show both.)
TEST(VerifyPower, BrokenVerifiersFailTheSameTest) {
  for (Case c : {Case::draft_on_rare, Case::random}) {
    const Model m = make_model(c);
    for (Bug bug : {Bug::correction_from_p, Bug::accept_reuses_draft_uniform}) {
      const Fit fit = first_token_fit(m, generate(m, 2, kTrials, 1.0f, 0xC0FFEEull * 3, bug));
      std::printf("  case %d bug %d: chi2 %.1f (dof %d, critical %.1f)\n", static_cast<int>(c),
                  static_cast<int>(bug), fit.statistic, fit.dof, fit.critical);
      EXPECT_GT(fit.statistic, 5.0 * fit.critical) << static_cast<int>(c) << static_cast<int>(bug);
    }
  }
}

// ---- lenience (Appendix A.5) ---------------------------------------------------------

TEST(VerifyLenience, NoTokenAboveItsBoundAndAcceptanceRises) {
  const Model m = make_model(Case::draft_on_rare);  // q favours what p makes rare
  const int V = m.V;
  const Generation strict = generate(m, 2, kTrials, 1.0f, 0xFEEDull);
  const std::vector<double> p = normalized(m.p_at(kPrompt), V), q = normalized(m.q_at(kPrompt), V);
  const double z_bound = normal_upper_quantile(kFalseAlarm / V);  // one-sided, Bonferroni over V
  for (float l : {0.5f, 0.2f}) {
    const Generation lenient = generate(m, 2, kTrials, l, 0xFEEDull);
    std::vector<long> counts(V, 0);
    for (int32_t x : lenient.first) ++counts[x];
    double worst_z = -HUGE_VAL;
    for (int x = 0; x < V; ++x) {
      worst_z = std::max(worst_z, binomial_z(counts[x], kTrials, std::min(1.0, p[x] / l)));
    }
    EXPECT_LT(worst_z, z_bound) << "some token above p(x)/l, l = " << l;
    // Sharper: the exact law of the first token, out(x) = min(q, p/l) +
    // (1 - α_l) max(0, p - l q) / (1 - l α_l), α_l = sum min(p/l, q). Tokens q
    // favours sit exactly at p/l, so the bound above is tight.
    double alpha_l = 0.0;
    for (int x = 0; x < V; ++x) alpha_l += std::min(p[x] / l, q[x]);
    std::vector<double> law(V);
    for (int x = 0; x < V; ++x) {
      law[x] = std::min(q[x], p[x] / l) +
               (1.0 - alpha_l) * std::max(0.0, p[x] - l * q[x]) / (1.0 - l * alpha_l);
    }
    const Fit fit = chi_square_fit(counts, law);
    EXPECT_LT(fit.statistic, fit.critical) << "l = " << l;
    const double z = check_acceptance(m, lenient, l);
    // Same seeds, drafts and r_j with a larger ratio p/(l q): no trial keeps
    // fewer tokens, and overall more are kept.
    long strict_kept = 0, lenient_kept = 0, fewer = 0;
    for (int t = 0; t < kTrials; ++t) {
      fewer += lenient.first_step_accepted[t] < strict.first_step_accepted[t];
      strict_kept += strict.first_step_accepted[t];
      lenient_kept += lenient.first_step_accepted[t];
    }
    EXPECT_EQ(fewer, 0);
    EXPECT_GT(lenient_kept, strict_kept);
    std::printf(
        "  l=%.1f: max bound z %.2f (critical %.2f), law chi2 %.1f (dof %d, critical %.1f), "
        "acceptance z %.2f, kept %ld vs %ld at l=1\n",
        l, worst_z, z_bound, fit.statistic, fit.dof, fit.critical, z, lenient_kept, strict_kept);
  }
}

// ---- exact checks ---------------------------------------------------------------------

std::vector<float> one_hot_rows(const std::vector<int32_t>& hot, int V) {
  std::vector<float> rows(hot.size() * V, 0.0f);
  for (size_t j = 0; j < hot.size(); ++j) rows[j * V + hot[j]] = 1.0f;
  return rows;
}

VerifyOutcome verify_one(const VerifyBlock& block, int V, std::span<float> beta = {}) {
  VerifyOutcome out{-1, -1};
  verify({&block, 1}, V, {&out, 1}, beta);
  return out;
}

TEST(VerifyExact, OneHotRowsGiveExactAnswers) {
  // p one-hot at a_j, q one-hot at x_j: keep while a_j = x_j, then the
  // residual is one-hot at a_{n+1}. Equal rows keep all, and the bonus token
  // comes from p_{γ+1} with the target_sample uniform at its position.
  const int V = 6;
  const std::vector<int32_t> x = {2, 4, 3};
  const std::vector<float> q = one_hot_rows(x, V), p = one_hot_rows({2, 4, 1, 5}, V);
  std::vector<float> equal_p = one_hot_rows({2, 4, 3, 0}, V);
  const std::vector<float> last = {0.1f, 0.2f, 0.0f, 0.3f, 0.15f, 0.25f};
  std::copy(last.begin(), last.end(), equal_p.begin() + 3 * V);
  for (uint64_t seed = 0; seed < 50; ++seed) {
    std::vector<float> beta(3);
    const VerifyOutcome out = verify_one({3, x.data(), p.data(), q.data(), 11, seed}, V, beta);
    EXPECT_EQ(out.accepted, 2);
    EXPECT_EQ(out.token, 1);
    EXPECT_THAT(beta, ::testing::ElementsAre(1.0f, 1.0f, 0.0f));
    const VerifyOutcome all = verify_one({3, x.data(), equal_p.data(), q.data(), 40, seed}, V);
    EXPECT_EQ(all.accepted, 3);
    EXPECT_EQ(all.token,
              sample_row(last.data(), V, philox_uniform(seed, 43, RandomPurpose::target_sample)));
  }
}

TEST(VerifyExact, GammaZeroIsPlainSampling) {
  const std::vector<float> p = {0.05f, 0.3f, 0.1f, 0.0f, 0.25f, 0.2f, 0.1f};
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const int64_t position = 123 + static_cast<int64_t>(seed);
    const VerifyOutcome out = verify_one({0, nullptr, p.data(), nullptr, position, seed}, 7);
    EXPECT_EQ(out.accepted, 0);
    EXPECT_EQ(out.token, sample_row(p.data(), 7,
                                    philox_uniform(seed, position, RandomPurpose::target_sample)));
  }
}

// Random blocks of every kind (γ = 0..4, some deterministic, some lenient).
struct Blocks {
  std::vector<std::vector<float>> p, q;
  std::vector<std::vector<int32_t>> x;
  std::vector<VerifyBlock> blocks;
  size_t draft_tokens = 0;
};
Blocks random_blocks(int count, int V, uint32_t seed) {
  std::mt19937 rng(seed);
  Blocks s;
  s.p.resize(count), s.q.resize(count), s.x.resize(count);
  for (int b = 0; b < count; ++b) {
    const int gamma = static_cast<int>(rng() % 5);
    s.p[b].resize(static_cast<size_t>(gamma + 1) * V);
    for (int j = 0; j <= gamma; ++j) fill_row(s.p[b].data() + j * V, V, rng, 0.5);
    if (b % 4 != 3) {  // every fourth block: a deterministic drafter
      s.q[b].resize(static_cast<size_t>(gamma) * V);
      for (int j = 0; j < gamma; ++j) fill_row(s.q[b].data() + j * V, V, rng, 0.5);
    }
    for (int j = 0; j < gamma; ++j) s.x[b].push_back(static_cast<int32_t>(rng() % V));
    s.blocks.push_back({gamma, s.x[b].data(), s.p[b].data(),
                        s.q[b].empty() ? nullptr : s.q[b].data(),
                        static_cast<int64_t>(rng() % 1000), rng(), b % 3 == 2 ? 0.4f : 1.0f});
    s.draft_tokens += gamma;
  }
  return s;
}

TEST(VerifyExact, MatchesTheReferenceAndReportsSumsOfMinima) {
  const int V = 50;
  const Blocks s = random_blocks(400, V, 7);
  std::vector<VerifyOutcome> out(s.blocks.size());
  std::vector<float> beta(s.draft_tokens);
  verify(s.blocks, V, out, beta);
  size_t k = 0;
  for (size_t b = 0; b < s.blocks.size(); ++b) {
    const VerifyBlock& block = s.blocks[b];
    const VerifyOutcome want = reference_verify(block, V, Bug::none);
    EXPECT_EQ(out[b].accepted, want.accepted) << "block " << b;
    EXPECT_EQ(out[b].token, want.token) << "block " << b;
    if (block.q == nullptr) {  // a deterministic drafter is exactly one-hot q rows
      const std::vector<float> hot = one_hot_rows(s.x[b], V);
      VerifyBlock explicit_q = block;
      explicit_q.q = hot.data();
      std::vector<float> beta_q(block.gamma);
      const VerifyOutcome same = verify_one(explicit_q, V, beta_q);
      EXPECT_TRUE(same.accepted == out[b].accepted && same.token == out[b].token) << b;
      EXPECT_TRUE(std::equal(beta_q.begin(), beta_q.end(), beta.begin() + k)) << "block " << b;
    }
    for (int j = 0; j < block.gamma; ++j, ++k) {
      double sum = 0.0;  // sum_x min(p(x)/l, q(x))
      for (int i = 0; i < V; ++i) {
        const double q = block.q != nullptr ? block.q[j * V + i] : 1.0 * (i == block.drafted[j]);
        sum += std::min(block.p[j * V + i] / static_cast<double>(block.lenience), q);
      }
      EXPECT_NEAR(beta[k], sum, 1e-6) << "block " << b << " j " << j;
    }
  }
}

TEST(VerifyExact, ReplaysAloneOrInAnyBatchOrder) {
  // Large enough that the batch runs on the pool's threads, single blocks not.
  const int V = 1000;
  const Blocks s = random_blocks(60, V, 11);
  std::vector<int> order(s.blocks.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  std::vector<VerifyBlock> shuffled;
  for (int b : order) shuffled.push_back(s.blocks[b]);
  std::vector<VerifyOutcome> out(shuffled.size());
  std::vector<float> beta(s.draft_tokens);
  verify(shuffled, V, out, beta);
  size_t k = 0;  // block i's beta entries start here
  for (size_t i = 0; i < shuffled.size(); k += shuffled[i].gamma, ++i) {
    std::vector<float> alone_beta(shuffled[i].gamma);
    const VerifyOutcome alone = verify_one(shuffled[i], V, alone_beta);
    EXPECT_EQ(out[i].accepted, alone.accepted) << "block " << order[i];
    EXPECT_EQ(out[i].token, alone.token) << "block " << order[i];
    EXPECT_TRUE(std::equal(alone_beta.begin(), alone_beta.end(), beta.begin() + k));
  }
}

TEST(VerifyExact, ZeroResidualFallsBackToP) {
  // p <= q everywhere with p(x) < q(x): rows that do not sum to 1 stand in
  // for float rounding, the only way a rejection can meet a zero residual.
  const std::vector<float> p = {0.1f, 0.2f, 0.3f, 0.2f, 0.3f, 0.5f}, q = {0.4f, 0.3f, 0.3f};
  const int32_t x = 0;
  int rejected = 0;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    const VerifyOutcome out = verify_one({1, &x, p.data(), q.data(), 5, seed}, 3);
    if (out.accepted == 1) continue;
    ++rejected;
    EXPECT_EQ(out.token,
              sample_row(p.data(), 3, philox_uniform(seed, 5, RandomPurpose::target_sample)));
  }
  EXPECT_GT(rejected, 40);  // x is kept with probability 1/4
}

TEST(VerifyGreedy, AllMatchesFirstMismatchAndGammaZero) {
  const std::vector<int32_t> x = {5, 9, 2}, all = {5, 9, 2, 7}, second_wrong = {5, 8, 2, 7},
                             first_wrong = {1, 9, 2, 7}, plain = {3};
  const std::vector<GreedyBlock> blocks = {{3, x.data(), all.data()},
                                           {3, x.data(), second_wrong.data()},
                                           {3, x.data(), first_wrong.data()},
                                           {0, nullptr, plain.data()}};
  std::vector<VerifyOutcome> out(blocks.size());
  verify_greedy(blocks, out);
  const int want[4][2] = {{3, 7}, {1, 8}, {0, 1}, {0, 3}};
  for (int b = 0; b < 4; ++b) {
    EXPECT_EQ(out[b].accepted, want[b][0]) << "block " << b;
    EXPECT_EQ(out[b].token, want[b][1]) << "block " << b;
  }
}

// ---- argument checks --------------------------------------------------------------------

using test_support::expect_invalid;

TEST(VerifyArguments, BadInputsThrowNamingTheFieldAndWriteNothing) {
  const int V = 4;
  const std::vector<float> p(3 * V, 0.25f), q(2 * V, 0.25f), zero_q = {0.5f, 0.0f, 0.5f, 0.0f},
                                                             no_mass(V, 0.0f);
  const std::vector<int32_t> x = {1, 2}, bad_low = {-1}, bad_high = {V};
  const VerifyBlock good{2, x.data(), p.data(), q.data(), 0, 1, 1.0f};
  // Block 0 is fine and block 1 is not: nothing may be written for either.
  const auto bad = [&](auto&& edit, const std::string& name) {
    std::vector<VerifyBlock> blocks = {good, good};
    edit(blocks[1]);
    std::vector<VerifyOutcome> out(2, VerifyOutcome{-7, -7});
    std::vector<float> beta(2 + std::max(0, blocks[1].gamma), -7.0f);
    expect_invalid([&] { verify(blocks, V, out, beta); }, name);
    for (const VerifyOutcome& o : out) EXPECT_TRUE(o.accepted == -7 && o.token == -7) << name;
    EXPECT_THAT(beta, ::testing::Each(-7.0f)) << name;
  };
  bad([](VerifyBlock& b) { b.gamma = -1; }, "blocks[1].gamma");
  bad([](VerifyBlock& b) { b.p = nullptr; }, "blocks[1].p");
  bad([](VerifyBlock& b) { b.drafted = nullptr; }, "blocks[1].drafted");
  bad([&](VerifyBlock& b) { b.gamma = 1, b.drafted = bad_low.data(); }, "blocks[1].drafted[0]");
  bad([&](VerifyBlock& b) { b.gamma = 1, b.drafted = bad_high.data(); }, "blocks[1].drafted[0]");
  bad([&](VerifyBlock& b) { b.gamma = 1, b.q = zero_q.data(); }, "blocks[1].q");
  bad([](VerifyBlock& b) { b.first_position = -1; }, "blocks[1].first_position");
  for (float l : {0.0f, -0.5f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
    bad([l](VerifyBlock& b) { b.lenience = l; }, "blocks[1].lenience");
  }
  // Found while verifying (a row to sample from has no mass): still nothing written.
  bad([&](VerifyBlock& b) { b.gamma = 0, b.p = no_mass.data(); }, "blocks[1].p row 0");

  const std::vector<VerifyBlock> blocks = {good};
  std::vector<VerifyOutcome> one(1), two(2);
  std::vector<float> beta(3);
  expect_invalid([&] { verify(blocks, 0, one); }, "V (vocabulary size)");
  expect_invalid([&] { verify(blocks, V, two); }, "out must hold");
  expect_invalid([&] { verify(blocks, V, one, beta); }, "beta must be empty");

  const std::vector<int32_t> argmax = {1, 2, 3};
  const GreedyBlock greedy{2, x.data(), argmax.data()};
  for (int field = 0; field < 4; ++field) {
    std::vector<GreedyBlock> greedy_blocks = {greedy, greedy};
    if (field == 0) greedy_blocks[1].gamma = -2;
    if (field == 1) greedy_blocks[1].drafted = nullptr;
    if (field == 2) greedy_blocks[1].target_argmax = nullptr;
    std::vector<VerifyOutcome> out(field == 3 ? 1 : 2, VerifyOutcome{-7, -7});
    const char* const names[] = {"blocks[1].gamma", "blocks[1].drafted", "blocks[1].target_argmax",
                                 "out must hold"};
    expect_invalid([&] { verify_greedy(greedy_blocks, out); }, names[field]);
    for (const VerifyOutcome& o : out) EXPECT_TRUE(o.accepted == -7 && o.token == -7);
  }
}

}  // namespace
}  // namespace tandem::cpu
