// The step planner and admission rule, table-driven: what each session
// feeds for a given budget, and the budget invariants over random batches.
#include "workers/speculation/step_scheduling.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace tandem {
namespace {

struct Row {
  std::string name;
  std::vector<ChunkRequest> sessions;  // (uncached, γ), oldest first
  int budget;
  std::vector<ChunkPlan> expected;     // (fed, verifies)
};

TEST(StepScheduling, PlanChunksTable) {
  const std::vector<Row> rows = {
      {"decoding blocks fit", {{1, 4}, {1, 4}}, 16, {{1, true}, {1, true}}},
      {"decoding blocks are never cut, even past the budget",
       {{1, 8}, {1, 8}}, 10, {{1, true}, {1, true}}},
      {"a long prompt is chunked to the budget", {{100, 4}}, 16, {{16, false}}},
      {"a prompt whose block fits verifies at once", {{10, 4}}, 16, {{10, true}}},
      {"prompt fits, its drafts do not: stop one short", {{13, 4}}, 16, {{12, false}}},
      {"decode first, then prefill oldest first",
       {{1, 3}, {50, 2}, {50, 2}}, 16, {{1, true}, {11, false}, {1, false}}},
      {"no budget left: prefill still gets one token",
       {{1, 4}, {1, 4}, {1, 4}, {30, 0}}, 8, {{1, true}, {1, true}, {1, true}, {1, false}}},
      {"plain decoding of a whole prompt", {{5, 0}}, 5, {{5, true}}},
      {"two tokens left, drafts too long: one token", {{2, 8}}, 4, {{1, false}}},
      {"an older prompt that verifies leaves the rest to a younger one",
       {{6, 2}, {40, 2}}, 16, {{6, true}, {8, false}}},
  };
  for (const Row& row : rows) {
    const std::vector<ChunkPlan> plans = plan_chunks(row.sessions, row.budget);
    ASSERT_EQ(plans.size(), row.expected.size()) << row.name;
    for (size_t i = 0; i < plans.size(); ++i) {
      EXPECT_EQ(plans[i].fed, row.expected[i].fed) << row.name << ", session " << i;
      EXPECT_EQ(plans[i].verifies, row.expected[i].verifies) << row.name << ", session " << i;
    }
  }
}

TEST(StepScheduling, PlansKeepTheBudgetAndAlwaysProgress) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    const int B = 1 + static_cast<int>(rng() % 12);
    const int budget = 1 + static_cast<int>(rng() % 64);
    std::vector<ChunkRequest> sessions;
    int must = 0;  // decoding blocks plus one token per prefilling session
    for (int i = 0; i < B; ++i) {
      const int uncached = rng() % 2 ? 1 : 1 + static_cast<int>(rng() % 120);
      sessions.push_back({uncached, static_cast<int>(rng() % 9)});
      must += uncached == 1 ? 1 + sessions.back().gamma : 1;
    }
    const std::vector<ChunkPlan> plans = plan_chunks(sessions, budget);
    int total = 0;
    for (int i = 0; i < B; ++i) {
      const ChunkRequest& r = sessions[static_cast<size_t>(i)];
      const ChunkPlan& p = plans[static_cast<size_t>(i)];
      EXPECT_GE(p.fed, 1);
      // A verifying session feeds all it lacks; a chunk stops at least one short.
      EXPECT_EQ(p.fed == r.uncached, p.verifies) << "trial " << trial;
      EXPECT_LE(p.fed, r.uncached);
      total += p.tokens(r);
    }
    if (must <= budget) {
      EXPECT_LE(total, budget) << "trial " << trial;
    }
  }
}

TEST(StepScheduling, AdmissionAsksForTheFirstChunkPlusHeadroom) {
  EXPECT_EQ(blocks_to_admit(1, 16, 0), 1);
  EXPECT_EQ(blocks_to_admit(16, 16, 0), 1);
  EXPECT_EQ(blocks_to_admit(17, 16, 3), 5);
  EXPECT_EQ(blocks_to_admit(100, 8, 10), 23);
}

}  // namespace
}  // namespace tandem
