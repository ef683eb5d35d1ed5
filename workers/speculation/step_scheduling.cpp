#include "workers/speculation/step_scheduling.h"

#include <algorithm>

namespace tandem {

std::vector<ChunkPlan> plan_chunks(std::span<const ChunkRequest> sessions, int budget) {
  std::vector<ChunkPlan> plans(sessions.size());
  int spare = budget;
  int prefilling = 0;
  for (size_t i = 0; i < sessions.size(); ++i) {
    if (sessions[i].uncached > 1) {
      ++prefilling;
      continue;
    }
    plans[i] = {1, true};
    spare -= 1 + sessions[i].gamma;
  }
  spare = std::max(spare - prefilling, 0);  // each prefilling session's promised token
  for (size_t i = 0; i < sessions.size(); ++i) {
    const ChunkRequest& r = sessions[i];
    if (r.uncached <= 1) continue;
    const int final_extra = r.uncached + r.gamma - 1;  // beyond the promised token
    if (final_extra <= spare) {
      plans[i] = {r.uncached, true};
      spare -= final_extra;
    } else {
      const int extra = std::min(spare, r.uncached - 2);  // stop >= 1 token short
      plans[i] = {1 + extra, false};
      spare -= extra;
    }
  }
  return plans;
}

int blocks_to_admit(int first_chunk_tokens, int block_size, int running) {
  return (first_chunk_tokens + block_size - 1) / block_size + running;
}

}  // namespace tandem
