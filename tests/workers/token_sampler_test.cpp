// TokenSampler (plain decoding's token choice) refuses a logits row that
// holds NaN or infinity, greedy or sampled, under either coupling: argmax
// ranks NaN as -inf and would otherwise return a token from a broken model.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "common/error.h"
#include "workers/token_sampler.h"

namespace tandem {
namespace {

constexpr int kSamplerVocab = 32;

std::vector<float> finite_row() {
  std::vector<float> row(kSamplerVocab);
  for (int v = 0; v < kSamplerVocab; ++v) row[static_cast<size_t>(v)] = 0.1f * static_cast<float>((v * 7) % 11);
  return row;
}

TEST(TokenSampler, NonFiniteLogitsAreRefusedNamingThePosition) {
  auto backend = make_cpu_backend();
  TokenSampler sampler(*backend, kSamplerVocab);
  std::vector<SamplingParams> all(3);
  all[0].temperature = 0.0f;
  all[1].seed = 4;
  all[2].seed = 4;
  all[2].coupling = Coupling::gumbel;
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> row = finite_row();
    row[9] = bad;
    for (const SamplingParams& params : all) {
      EXPECT_GE(sampler.pick(finite_row().data(), params, 12), 0);
      try {
        sampler.pick(row.data(), params, 12);
        ADD_FAILURE() << "picked a token from a row holding " << bad;
      } catch (const Error& error) {
        EXPECT_EQ(error.kind(), ErrorKind::internal);
        EXPECT_NE(std::string(error.what()).find("non-finite logits"), std::string::npos);
        EXPECT_NE(std::string(error.what()).find("position 12"), std::string::npos) << error.what();
      }
    }
  }
}

}  // namespace
}  // namespace tandem
