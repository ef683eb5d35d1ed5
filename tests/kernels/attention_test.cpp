// The CPU attention against a float64 loop (an independent implementation),
// and its batch invariance: a (token, head) pair's output must be the same
// bits whether it is computed in a prefill, a verification, beside other
// sequences, or alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/cpu/ops.h"

namespace tandem {
namespace {

constexpr int kHeads = 6, kBlockSize = 5;  // blocks of 5: key groups of 8 cross them

struct Sequence {
  int new_tokens, context;
};

// A paged cache of random keys and values, each sequence's blocks scattered
// in reverse order, and random queries for every sequence's new tokens.
struct Batch {
  int D;
  int kv_heads;  // 6: one query head each; 2: three share one (a pair and one alone); 1: six share it
  std::vector<Sequence> sequences;
  std::vector<std::vector<int32_t>> tables;
  std::vector<float> k, v, q;
  std::vector<SequenceSlice> slices;
  PagedKvView cache;

  Batch(int head_dim, int kv, std::vector<Sequence> seqs) : D(head_dim), kv_heads(kv), sequences(std::move(seqs)) {
    int blocks = 0, tokens = 0;
    for (const Sequence& s : sequences) blocks += (s.context + kBlockSize - 1) / kBlockSize;
    int next = blocks;
    for (const Sequence& s : sequences) {
      std::vector<int32_t> table((s.context + kBlockSize - 1) / kBlockSize);
      for (int32_t& b : table) b = --next;
      tables.push_back(std::move(table));
    }
    std::mt19937 rng(static_cast<uint32_t>(head_dim));
    std::normal_distribution<float> normal;
    k.resize(static_cast<size_t>(blocks) * kBlockSize * kv_heads * D);
    v.resize(k.size());
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    for (size_t i = 0; i < sequences.size(); ++i) {
      slices.push_back({tokens, sequences[i].new_tokens, sequences[i].context, tables[i]});
      tokens += sequences[i].new_tokens;
    }
    q.resize(static_cast<size_t>(tokens) * kHeads * D);
    for (float& x : q) x = normal(rng);
    cache = {k.data(), v.data(), blocks, kBlockSize, kv_heads, D};
  }

  float scale() const { return 1.0f / std::sqrt(static_cast<float>(D)); }

  // Every sequence's new tokens in one call.
  std::vector<float> attend_together() const {
    std::vector<float> out(q.size());
    cpu::attention(q.data(), slices, kHeads, cache, scale(), out.data());
    return out;
  }

  const float* row(const std::vector<float>& kv, int seq, int position, int kv_head) const {
    const int32_t block = tables[static_cast<size_t>(seq)][static_cast<size_t>(position / kBlockSize)];
    const size_t slot = static_cast<size_t>(block) * kBlockSize + position % kBlockSize;
    return kv.data() + (slot * kv_heads + kv_head) * D;
  }
};

// softmax(q . k / sqrt(D)) . v over positions [0, last], in float64.
std::vector<double> reference(const Batch& b, int seq, const float* q, int head, int last) {
  const int kv_head = head / (kHeads / b.kv_heads);
  std::vector<double> scores(static_cast<size_t>(last) + 1);
  double max_score = -INFINITY;
  for (int i = 0; i <= last; ++i) {
    const float* key = b.row(b.k, seq, i, kv_head);
    double dot = 0;
    for (int d = 0; d < b.D; ++d) dot += static_cast<double>(q[d]) * key[d];
    scores[static_cast<size_t>(i)] = dot / std::sqrt(static_cast<double>(b.D));
    max_score = std::max(max_score, scores[static_cast<size_t>(i)]);
  }
  double total = 0;
  for (double& s : scores) total += (s = std::exp(s - max_score));
  std::vector<double> out(static_cast<size_t>(b.D), 0.0);
  for (int i = 0; i <= last; ++i) {
    const float* value = b.row(b.v, seq, i, kv_head);
    for (int d = 0; d < b.D; ++d) out[static_cast<size_t>(d)] += scores[static_cast<size_t>(i)] / total * value[d];
  }
  return out;
}

// A prefill of 13 tokens, a decode at position 29, a verification of 4
// tokens ending at position 21, and a prefill of 1 token.
std::vector<Sequence> mixed_batch() { return {{13, 13}, {1, 30}, {4, 22}, {1, 1}}; }

// visit(sequence, row of the token in q, its position) for every new token.
template <class Visit>
void for_each_token(const Batch& b, Visit&& visit) {
  for (size_t s = 0; s < b.slices.size(); ++s) {
    const SequenceSlice& slice = b.slices[s];
    for (int j = 0; j < slice.token_count; ++j)
      visit(static_cast<int>(s), slice.token_offset + j, slice.context_length - slice.token_count + j);
  }
}

class AttentionHeadDims : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(AttentionHeadDims, MatchesFloat64) {
  const Batch b(std::get<0>(GetParam()), std::get<1>(GetParam()), mixed_batch());
  const std::vector<float> out = b.attend_together();
  double worst = 0;
  for_each_token(b, [&](int seq, int row, int last) {
    for (int h = 0; h < kHeads; ++h) {
      const size_t offset = (static_cast<size_t>(row) * kHeads + h) * b.D;
      const std::vector<double> want = reference(b, seq, b.q.data() + offset, h, last);
      for (int d = 0; d < b.D; ++d)
        worst = std::max(worst, std::abs(out[offset + static_cast<size_t>(d)] - want[static_cast<size_t>(d)]));
    }
  });
  // Outputs are averages of N(0, 1) values; float32 sums of up to 30 terms
  // stay within a few 1e-7 of float64.
  EXPECT_LT(worst, 1e-5) << "head_dim " << b.D << ", " << b.kv_heads << " KV heads";
}

TEST_P(AttentionHeadDims, EachPairIsTheSameBitsAlone) {
  const Batch b(std::get<0>(GetParam()), std::get<1>(GetParam()), mixed_batch());
  const std::vector<float> together = b.attend_together();
  int mismatches = 0;
  for_each_token(b, [&](int seq, int row, int last) {
    // The token alone: a one-token step at its own position.
    const SequenceSlice alone_slice{0, 1, last + 1, b.slices[static_cast<size_t>(seq)].block_table};
    const size_t offset = static_cast<size_t>(row) * kHeads * b.D;
    std::vector<float> alone(static_cast<size_t>(kHeads) * b.D);
    cpu::attention(b.q.data() + offset, std::span(&alone_slice, 1), kHeads, b.cache, b.scale(), alone.data());
    if (std::memcmp(alone.data(), together.data() + offset, alone.size() * sizeof(float)) != 0 && ++mismatches <= 5)
      ADD_FAILURE() << "sequence " << seq << ", position " << last;
  });
  EXPECT_EQ(mismatches, 0);
}

// Head dims 32 and 64: whole groups of 8 d; 20: a partial last group.
// KV heads 6, 2 and 1: query heads alone, three to a KV head, six to one.
INSTANTIATE_TEST_SUITE_P(HeadDims, AttentionHeadDims,
                         ::testing::Combine(::testing::Values(32, 64, 20), ::testing::Values(6, 2, 1)));

}  // namespace
}  // namespace tandem
