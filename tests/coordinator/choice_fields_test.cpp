// prompt lists, n and best_of (coordinator/api/choice_fields.h), and the pure
// functions that make and rank choices (coordinator/api/choices.h).
#include "coordinator/api/choice_fields.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "coordinator/api/choices.h"

namespace tandem::api {
namespace {

using Ids = std::vector<int32_t>;

RequestLimits limits() {
  RequestLimits limits;
  limits.max_tokens_limit = 512;
  limits.served_model_name = "tandem";
  limits.vocab_size = 1000;
  return limits;
}

CompletionRequest choice_request(const std::string& body) { return parse_completion_request(body, limits()); }

void expect_refused(const std::string& body, const std::string& param, const std::string& part) {
  SCOPED_TRACE(body);
  try {
    choice_request(body);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.status, 400);
    EXPECT_EQ(error.param, param);
    EXPECT_NE(error.message.find(part), std::string::npos) << error.message;
  }
}

TEST(ChoiceFields, APromptListIsABatchInOrderOfStringsAndTokenLists) {
  const CompletionRequest request = choice_request(R"({"prompt": ["one", [5, 6], "three"]})");
  ASSERT_EQ(request.prompts.size(), 3u);
  EXPECT_EQ(std::get<std::string>(request.prompts[0]), "one");
  EXPECT_EQ(std::get<Ids>(request.prompts[1]), (Ids{5, 6}));
  EXPECT_EQ(std::get<std::string>(request.prompts[2]), "three");
  // A flat list of numbers is one prompt of token ids, not a batch.
  EXPECT_EQ(choice_request(R"({"prompt": [7, 8, 9]})").prompts.size(), 1u);
  EXPECT_EQ(choice_request(R"({"prompt": "x"})").prompts.size(), 1u);
}

TEST(ChoiceFields, NAndBestOfDefaultToOneAndAreRead) {
  const CompletionRequest plain = choice_request(R"({"prompt": "x"})");
  EXPECT_EQ(plain.n, 1);
  EXPECT_FALSE(plain.best_of);
  const CompletionRequest many = choice_request(R"({"prompt": "x", "n": 3, "best_of": 5})");
  EXPECT_EQ(many.n, 3);
  EXPECT_EQ(many.best_of, 5);
  EXPECT_EQ(choice_request(R"({"prompt": "x", "n": 4, "stream": true})").n, 4);
  EXPECT_EQ(choice_request(R"({"prompt": "x", "n": 2, "best_of": 2, "stream": true})").best_of, 2);
}

TEST(ChoiceFields, RefusesBadCountsNamingTheField) {
  expect_refused(R"({"prompt": "x", "n": 0})", "n", "[1, 16]");
  expect_refused(R"({"prompt": "x", "n": 17})", "n", "[1, 16]");
  expect_refused(R"({"prompt": "x", "n": 1.5})", "n", "integer");
  expect_refused(R"({"prompt": "x", "best_of": 0})", "best_of", "[1, 16]");
  expect_refused(R"({"prompt": "x", "n": 3, "best_of": 2})", "best_of", "at least n");
  expect_refused(R"({"prompt": "x", "n": 2, "best_of": 1})", "best_of", "at least n");
  expect_refused(R"({"prompt": "x", "n": 1, "best_of": 2, "stream": true})", "best_of", "streamed");
  // 5 prompts × 16 > 64 sequences.
  expect_refused(R"({"prompt": ["a", "b", "c", "d", "e"], "n": 16})", "n", "80 sequences");
  expect_refused(R"({"prompt": ["a", "b", "c", "d", "e"], "n": 2, "best_of": 16})", "best_of", "at most 64");
}

TEST(ChoiceFields, RefusesBadPromptListsNamingThePrompt) {
  expect_refused(R"({"prompt": []})", "prompt", "empty");
  expect_refused(R"({"prompt": ["a", ""]})", "prompt", "prompt[1]");
  expect_refused(R"({"prompt": [[1], [1000]]})", "prompt", "prompt[1][0]");
  expect_refused(R"({"prompt": [{"text": "a"}]})", "prompt", "prompt[0]");
  std::string many = R"({"prompt": [)";
  for (int i = 0; i < kMaxPrompts + 1; ++i) many += std::string(i ? ", " : "") + "\"p\"";
  expect_refused(many + "]}", "prompt", "at most 32 prompts");
}

TEST(Choices, ChoiceZeroKeepsTheSeedAndOthersDifferDeterministically) {
  EXPECT_EQ(choice_seed(42, 0), 42u);
  std::set<uint64_t> seeds;
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(choice_seed(42, i), choice_seed(42, i));
    seeds.insert(choice_seed(42, i));
    seeds.insert(choice_seed(43, i));
  }
  EXPECT_EQ(seeds.size(), 32u);  // no two (seed, choice) pairs collide here
  // Without a seed each call draws its own.
  EXPECT_NE(choice_seed(std::nullopt, 0), choice_seed(std::nullopt, 0));
}

TEST(Choices, BestOfKeepsTheNHighestCumulativeLogprobsBestFirst) {
  EXPECT_EQ(rank_best_of({-5.0, -1.0, -3.0, -0.5}, 2), (std::vector<int>{3, 1}));
  EXPECT_EQ(rank_best_of({-2.0, -2.0, -2.0}, 2), (std::vector<int>{0, 1}));  // ties: earlier first
  // A sequence without a logprob ranks below every one with.
  EXPECT_EQ(rank_best_of({std::nullopt, -9.0, std::nullopt}, 2), (std::vector<int>{1, 0}));
  EXPECT_EQ(rank_best_of({-1.0}, 1), (std::vector<int>{0}));
  EXPECT_EQ(rank_best_of({-1.0, -2.0}, 5).size(), 2u);
}

TEST(Choices, UsageCountsEachPromptOnceAndEveryGeneratedToken) {
  // Two prompts (10 and 4 tokens), three sequences each.
  // Cached tokens go with prompt tokens: the first sequence's of each prompt.
  const std::vector<Usage> usages = {{10, 1, 0}, {10, 2, 8}, {10, 3, 8},
                                     {4, 4, 4},  {4, 5, 4},  {4, 6, 4}};
  const Usage total = total_usage(usages, 3);
  EXPECT_EQ(total.prompt_tokens, 14);
  EXPECT_EQ(total.completion_tokens, 21);
  EXPECT_EQ(total.cached_tokens, 4);
  EXPECT_EQ(total_usage({{10, 1, 8}, {4, 1, 4}}, 1).cached_tokens, 12);
  EXPECT_EQ(total_usage({{7, 2}}, 1).prompt_tokens, 7);
}

TEST(Choices, SpeculationSumsAndWeighsAlphaByDraftedTokens) {
  SpeculationReport a{3, 10, 8, 0.8, "4", "model", true};
  SpeculationReport b{2, 30, 15, 0.5, "4", "model", false};
  const SpeculationReport total = total_speculation({a, b});
  EXPECT_EQ(total.target_steps, 5);
  EXPECT_EQ(total.draft_tokens, 40);
  EXPECT_EQ(total.accepted_tokens, 23);
  EXPECT_DOUBLE_EQ(total.acceptance_rate, (0.8 * 10 + 0.5 * 30) / 40);
  EXPECT_FALSE(total.lossless);
  EXPECT_EQ(total.gamma_policy, "4");
  EXPECT_TRUE(std::isnan(total_speculation({SpeculationReport{}, SpeculationReport{}}).acceptance_rate));
}

}  // namespace
}  // namespace tandem::api
